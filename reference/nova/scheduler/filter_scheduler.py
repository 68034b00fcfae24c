"""The filter scheduler (``nova/scheduler/filter_scheduler.py``): filter, weigh, pick.

``select_destinations`` returns one host per requested instance: it reads the
host states, drops hosts any enabled filter rejects, ranks the rest with the
weighers and takes the best, consuming its resources before picking for the
next instance of the same request. Which filters and weighers, and the RAM
weigher's multiplier, come from ``[filter_scheduler]`` in ``STATE_DIR/nova.conf``.

The ``FilterScheduler._schedule`` span tells the whole decision: the enabled
filters and weighers; a ``filter`` event per filter run (its name, how many
hosts it started with and passed, which it passed and which it rejected); a
``weigh`` event per instance (the hosts best first, their weights and free RAM,
the chosen host); and the chosen hosts.

The spans link to Newton's ``filter_scheduler.py`` (``newton-eol``), the last
release whose filter scheduler read every host from the database as this one
does: Ocata asked placement for candidate hosts first, and Xena merged the
filter scheduler into ``SchedulerManager`` (``nova/scheduler/manager.py``).
"""

from __future__ import annotations

import logging

from opentelemetry import trace

from novalab.reference.common import exception
from novalab.reference.nova.scheduler.host_manager import HostManager
from novalab.tracing import attributes as attr
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)

_FILTER_SCHEDULER = "nova/scheduler/filter_scheduler.py"
_PRE_PLACEMENT = "newton-eol"  # see the module docstring


class FilterScheduler:
    def __init__(self, host_manager: HostManager, tracer):
        self.host_manager = host_manager
        self.tracer = tracer

    @upstream(_FILTER_SCHEDULER, "FilterScheduler.select_destinations", ref=_PRE_PLACEMENT)
    def select_destinations(self, context, spec: dict) -> list[dict]:
        num = spec.get("num_instances", 1)
        hosts = self._schedule(context, spec, num)
        return [{"host": h.host, "nodename": h.nodename} for h in hosts]

    @upstream(_FILTER_SCHEDULER, "FilterScheduler._schedule", ref=_PRE_PLACEMENT)
    def _schedule(self, context, spec: dict, num: int) -> list:
        span = trace.get_current_span()
        setup = self.host_manager.refresh()  # nova.conf: read again if it changed
        span.set_attribute(attr.NOVA_SCHEDULER_ENABLED_FILTERS,
                           [type(f).__name__ for f in setup.enabled_filters])
        span.set_attribute(attr.NOVA_SCHEDULER_WEIGHERS,
                           [type(w).__name__ for w in setup.weighers])
        span.set_attribute(attr.NOVA_SCHEDULER_RAM_WEIGHT_MULTIPLIER,
                           setup.conf.ram_weight_multiplier)
        host_states = self.host_manager.get_all_host_states(context)
        span.set_attribute(attr.NOVA_SCHEDULER_HOSTS_CONSIDERED, len(host_states))
        chosen = []
        for index in range(num):
            hosts, results = self.host_manager.get_filtered_hosts(host_states, spec, index)
            if not hosts:
                raise exception.NoValidHost(reason=self._no_host_reason(spec, results))
            weighed = self.host_manager.get_weighed_hosts(hosts, spec)
            best = weighed[0].obj
            span.add_event("weigh", {
                attr.NOVA_SCHEDULER_INSTANCE_INDEX: index,
                attr.NOVA_SCHEDULER_WEIGHED_HOSTS: [w.obj.host for w in weighed],
                attr.NOVA_SCHEDULER_WEIGHTS: [float(w.weight) for w in weighed],
                attr.NOVA_SCHEDULER_FREE_RAM_MB: [w.obj.free_ram_mb for w in weighed],
                attr.NOVA_SCHEDULER_CHOSEN_HOST: best.host,
            })
            best.consume_from_request(spec["flavor"])
            chosen.append(best)
            span.set_attribute(attr.NOVA_SCHEDULER_CHOSEN_HOSTS, [h.host for h in chosen])
        return chosen

    @staticmethod
    def _no_host_reason(spec: dict, results) -> str:
        """Upstream's reason, and which filter left no host (upstream logs that part)."""
        summary = [f"{name}: (start: {start}, end: {end})" for name, start, end in results]
        LOG.info("Filtering removed all hosts for the request with instance ID '%s'. "
                 "Filter results: %s", ",".join(spec.get("instance_uuids") or ()), summary)
        reason = "There are not enough hosts available."
        if results and results[-1][1] > 0 and results[-1][2] == 0:
            reason += f" Filter {results[-1][0]} returned 0 hosts."
        return reason
