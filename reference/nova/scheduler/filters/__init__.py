"""Host filters: each says yes or no to one host for one request.

As upstream (``nova/filters.py``, ``nova/scheduler/filters/__init__.py``): a
filter is a subclass of :class:`BaseHostFilter` that implements
``host_passes(host_state, spec_obj)``; ``[filter_scheduler] enabled_filters``
names the filters to apply, in order, and the scheduler keeps the hosts every
one of them passes. ``spec_obj`` is novalab's request spec, a dict: ``flavor``
(``memory_mb``, ``vcpus``, ``root_gb``, ``ephemeral_gb``), ``image`` (with its
``properties``), ``instance_uuids``, ``num_instances``, ``project_id``,
``user_id``, ``availability_zone``. Upstream passes a ``RequestSpec`` object
with the same facts as attributes.

A learner writes one in a file of ``filter_dirs`` (see ``docs/scheduler.md``)::

    from novalab.reference.nova.scheduler import filters

    class OnlyCompute2Filter(filters.BaseHostFilter):
        def host_passes(self, host_state, spec_obj):
            return host_state.host == "compute-2"
"""

from __future__ import annotations

import inspect
import logging

from opentelemetry import trace

from novalab.reference.nova.scheduler.exception import SchedulerHostFilterFailed, describe
from novalab.tracing import attributes as attr

LOG = logging.getLogger(__name__)


class BaseHostFilter:
    """Base class for host filters: subclasses implement ``host_passes``."""

    # Set to True in a subclass if it needs to run only for the first instance of a
    # multi-create request (upstream's flag).
    run_filter_once_per_request = False

    def host_passes(self, host_state, spec_obj) -> bool:
        """Return True if the HostState passes the filter, otherwise False."""
        raise NotImplementedError()

    def _filter_one(self, obj, spec_obj) -> bool:
        try:
            return self.host_passes(obj, spec_obj)
        except Exception as exc:
            # Which host it was looking at, for the fault and the log.
            exc.novalab_host = getattr(obj, "host", obj)
            exc.add_note(f"in {type(self).__name__}.host_passes for host {exc.novalab_host}")
            raise

    def filter_all(self, filter_obj_list, spec_obj):
        """Yield the objects that pass the filter (override for a whole-list decision)."""
        for obj in filter_obj_list:
            if self._filter_one(obj, spec_obj):
                yield obj

    def run_filter_for_index(self, index: int) -> bool:
        """Whether to run for the ``index``-th instance of a request."""
        return not (self.run_filter_once_per_request and index > 0)


def _source_file(filter_) -> str | None:
    try:
        return inspect.getsourcefile(type(filter_))
    except TypeError:
        return None


def get_filtered_objects(filters, objs, spec_obj, index: int = 0):
    """Apply ``filters`` in order (``BaseFilterHandler.get_filtered_objects``).

    Returns the hosts that passed every filter and, per filter run, upstream's
    summary ``(class name, start, end)``. Stops at the first filter that leaves no
    host. Each filter run is a ``filter`` event on the current span: the filter,
    the hosts it started with and those it passed and rejected, by name.
    """
    span = trace.get_current_span()
    recording = span.is_recording()
    list_objs = list(objs)
    LOG.debug("Starting with %d host(s)", len(list_objs))
    results: list[tuple[str, int, int]] = []
    for filter_ in filters:
        if not filter_.run_filter_for_index(index):
            continue
        cls_name = type(filter_).__name__
        start = list_objs
        try:
            passed = filter_.filter_all(start, spec_obj)
            # A filter may say "stop filtering" with None: no host then (upstream's rule).
            list_objs = [] if passed is None else list(passed)
        except Exception as exc:
            host = getattr(exc, "novalab_host", None)
            where = describe(exc, _source_file(filter_))
            reason = (f"host_passes({host}) raised {where}" if host is not None
                      else f"filter_all raised {where}")
            raise SchedulerHostFilterFailed(filter_name=cls_name, reason=reason) from exc
        results.append((cls_name, len(start), len(list_objs)))
        if recording:  # naming every host is for the trace: untraced, skip the lists
            span.add_event("filter", _filter_event(filter_, index, start, list_objs))
        if not list_objs:
            LOG.info("Filter %s returned 0 hosts", cls_name)
            break
        LOG.debug("Filter %s returned %d host(s)", cls_name, len(list_objs))
    return list_objs, results


def _filter_event(filter_, index: int, start: list, passed: list) -> dict:
    """The ``filter`` event of one filter run: the hosts it passed and rejected."""
    passed_ids = {id(h) for h in passed}
    event = {
        attr.NOVA_SCHEDULER_FILTER: type(filter_).__name__,
        attr.NOVA_SCHEDULER_INSTANCE_INDEX: index,
        attr.NOVA_SCHEDULER_HOSTS_BEFORE: len(start),
        attr.NOVA_SCHEDULER_HOSTS_PASSED: len(passed),
        attr.NOVA_SCHEDULER_PASSED_HOSTS: [h.host for h in passed],
        attr.NOVA_SCHEDULER_REJECTED_HOSTS: [h.host for h in start if id(h) not in passed_ids],
    }
    source = getattr(filter_, "novalab_source", None)
    if source:
        event[attr.NOVA_SCHEDULER_FILTER_FILE] = source
    return event


def all_filters():
    """Every filter class shipped with novalab (upstream's ``available_filters`` default)."""
    from novalab.reference.nova.scheduler.filters.compute_filter import ComputeFilter
    from novalab.reference.nova.scheduler.filters.core_filter import CoreFilter
    from novalab.reference.nova.scheduler.filters.disk_filter import DiskFilter
    from novalab.reference.nova.scheduler.filters.image_props_filter import (
        ImagePropertiesFilter,
    )
    from novalab.reference.nova.scheduler.filters.ram_filter import RamFilter

    return [ComputeFilter, RamFilter, DiskFilter, CoreFilter, ImagePropertiesFilter]
