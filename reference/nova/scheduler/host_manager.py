"""The scheduler's picture of the cluster (``nova/scheduler/host_manager.py``).

``get_all_host_states`` reads three things from the database: which compute
services are alive and enabled, what each compute node has (the *cluster
state*), and what the instances placed on it already use. Nothing is cached
between requests, so two schedulers never disagree for long.

The host manager also holds the filters and weighers ``[filter_scheduler]``
enables (``_choose_host_filters``, as upstream) and applies them
(``get_filtered_hosts``, ``get_weighed_hosts``). Upstream loads them once, at
start; novalab's :meth:`HostManager.refresh` looks at ``nova.conf`` (and the
learner's filter files) before each request and loads them again when one
changed. A configuration that does not load is kept as its error, raised for
every request until the files change.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from novalab.reference.common.db import Database
from novalab.reference.common.exception import NovaLabException
from novalab.reference.nova.db import api as db_api
from novalab.reference.nova.scheduler import filters, weights
from novalab.reference.nova.scheduler.conf import FilterSchedulerConf, parse
from novalab.reference.nova.scheduler.exception import (
    SchedulerConfigInvalid,
    SchedulerHostFilterFailed,
    SchedulerHostFilterNotFound,
    describe,
)
from novalab.reference.nova.scheduler.loadables import (
    BUILT_IN,
    AvailableFilter,
    available_filters,
    weigher_classes,
    world_writable,
)
from novalab.reference.nova.servicegroup import SERVICE_DOWN_TIME, service_is_up  # noqa: F401
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)



@dataclass
class HostState:
    """Free and used resources of one compute node, as filters and weighers see them."""

    host: str
    nodename: str
    total_usable_ram_mb: int
    free_ram_mb: int
    total_usable_disk_gb: int
    free_disk_gb: int
    vcpus_total: int
    vcpus_used: int
    num_instances: int
    supported_instances: list = field(default_factory=list)
    service_up: bool = True
    service_disabled: bool = False
    ram_allocation_ratio: float = 1.5
    disk_allocation_ratio: float = 1.0
    cpu_allocation_ratio: float = 16.0

    def consume_from_request(self, flavor: dict) -> None:
        """Account for an instance placed here in this same request (multi-create)."""
        self.free_ram_mb -= flavor["memory_mb"]
        self.free_disk_gb -= flavor["root_gb"] + flavor.get("ephemeral_gb", 0)
        self.vcpus_used += flavor["vcpus"]
        self.num_instances += 1


@dataclass
class SchedulerSetup:
    """What one reading of ``nova.conf`` gives: the filters and weighers to use."""

    conf: FilterSchedulerConf
    available: list[AvailableFilter]
    enabled_filters: list  # filter objects, in enabled_filters order
    weighers: list


def load_setup(conf: FilterSchedulerConf) -> SchedulerSetup:
    """Load the available filters, pick the enabled ones and the weighers.

    Raises the scheduler's errors (``exception.py``): the fault of every request
    made while the configuration is broken.
    """
    if conf.filter_dirs and conf.exists and world_writable(conf.path):
        raise SchedulerConfigInvalid(
            path=conf.path, reason="the file is world-writable and names filter_dirs: "
                                   "anyone on this machine could run code in nova-scheduler")
    available = available_filters(conf.filter_dirs, conf.path)
    return SchedulerSetup(conf=conf, available=available,
                          enabled_filters=_choose_host_filters(available, conf.enabled_filters),
                          weighers=[cls(conf) for cls in weigher_classes(conf.weight_classes)])


def _choose_host_filters(available: list[AvailableFilter], names) -> list:
    """One object of each enabled filter class (``HostManager._choose_host_filters``)."""
    by_name = {a.name: a for a in available}
    bad = [name for name in names if name not in by_name]
    if bad:
        raise SchedulerHostFilterNotFound(filter_name=", ".join(bad))
    chosen = []
    for name in names:
        found = by_name[name]
        try:
            filter_ = found.cls()
        except Exception as exc:
            where = describe(exc, None if found.source == BUILT_IN else found.source)
            raise SchedulerHostFilterFailed(filter_name=name,
                                            reason=f"creating it raised {where}") from exc
        if found.source != BUILT_IN:
            filter_.novalab_source = found.source
        chosen.append(filter_)
    return chosen


def _fingerprint(paths) -> tuple:
    """What changes when a file is edited, replaced, created or removed."""
    marks = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            marks.append(None)
        else:
            marks.append((st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(marks)


class HostManager:
    def __init__(self, db: Database, tracer, conf_path: str | os.PathLike | None = None,
                 uses_placement: bool = False):
        self.db = db
        self.tracer = tracer
        # The modern topology: placement narrows the hosts, the spans link Pike's code.
        self.uses_placement = uses_placement
        # STATE_DIR/nova.conf; None: upstream's defaults, never re-read.
        self.conf_path = Path(conf_path) if conf_path is not None else None
        self._lock = threading.Lock()
        self._watched: tuple[Path, ...] = ()
        self._marks: tuple | None = None
        self._error: NovaLabException | None = None
        self.setup = load_setup(FilterSchedulerConf(path=Path("nova.conf")))
        try:
            self.refresh()  # read it now, so a start-up log says what is in force
        except NovaLabException:
            pass  # logged; the scheduler still starts, and its requests say why they fail

    @property
    def enabled_filters(self) -> list:
        return self.setup.enabled_filters

    @property
    def weighers(self) -> list:
        return self.setup.weighers

    def refresh(self) -> SchedulerSetup:
        """The setup in force: read again if ``nova.conf`` or a filter file changed.

        One ``stat`` of nova.conf per call, and one per filter directory and file
        when ``filter_dirs`` names some. Raises the configuration's error while it
        stays broken.
        """
        if self.conf_path is None:
            return self.setup
        with self._lock:
            if _fingerprint(self._watched or (self.conf_path,)) != self._marks:
                self._reload()
            if self._error is not None:
                raise self._error
            return self.setup

    def _reload(self) -> None:
        watched = [self.conf_path]
        try:
            conf = parse(self.conf_path)
        except SchedulerConfigInvalid as exc:
            conf, error = None, exc
        else:
            watched += conf.filter_dirs
            watched += [p for d in conf.filter_dirs if d.is_dir() for p in sorted(d.glob("*.py"))]
        # The marks are taken before reading: an edit during the read is seen next time.
        self._watched, self._marks = tuple(watched), _fingerprint(watched)
        if conf is not None:
            try:
                setup = load_setup(conf)
            except NovaLabException as exc:
                error = exc
            else:
                self.setup, self._error = setup, None
                LOG.info("Read %s: enabled filters %s, weighers %s", self.conf_path,
                         [type(f).__name__ for f in setup.enabled_filters],
                         [type(w).__name__ for w in setup.weighers])
                return
        self._error = error
        LOG.error("Every request will fail until %s (or a filter file) is fixed: %s",
                  self.conf_path, error, exc_info=error if error.__cause__ else None)

    def get_filtered_hosts(self, hosts, spec_obj, index: int = 0):
        """Hosts passing every enabled filter, and upstream's per-filter summary."""
        return filters.get_filtered_objects(self.enabled_filters, hosts, spec_obj, index)

    def get_weighed_hosts(self, hosts, spec_obj) -> list:
        """The hosts with their weights, best first."""
        return weights.get_weighed_objects(self.weighers, hosts, spec_obj)

    @upstream("nova/scheduler/host_manager.py", "HostManager.get_all_host_states",
              ref="newton-eol", placement_ref="pike-eol")
    def get_all_host_states(self, context) -> list[HostState]:
        """Every compute node, with its service's state and its instances' usage.

        Linked at ``newton-eol`` (classic) and ``pike-eol`` (modern): it was removed in
        2019 (Train, and Stein's branch). Since Ocata upstream's scheduler reads only
        the hosts placement offered (``get_host_states_by_uuids``); novalab's modern
        scheduler reads every host here and keeps placement's in ``_schedule``.
        """
        services = {s["host"]: s for s in db_api.service_get_all(self.db, binary="nova-compute")}
        nodes = db_api.compute_node_get_all(self.db)
        usage = db_api.host_usage(self.db)
        states = []
        for node in nodes:
            used = usage.get(node["host"], {"memory_mb": 0, "vcpus": 0, "disk_gb": 0,
                                             "instances": 0})
            service = services.get(node["host"])
            states.append(HostState(
                host=node["host"], nodename=node["hypervisor_hostname"],
                total_usable_ram_mb=node["memory_mb"],
                free_ram_mb=node["memory_mb"] - used["memory_mb"],
                total_usable_disk_gb=node["local_gb"],
                free_disk_gb=node["local_gb"] - used["disk_gb"],
                vcpus_total=node["vcpus"], vcpus_used=used["vcpus"],
                num_instances=used["instances"],
                supported_instances=node.get("supported_instances") or [],
                service_up=service is not None and service_is_up(service),
                service_disabled=bool(service and service["disabled"]),
                ram_allocation_ratio=node["ram_allocation_ratio"],
                disk_allocation_ratio=node["disk_allocation_ratio"],
                cpu_allocation_ratio=node["cpu_allocation_ratio"]))
        return states
