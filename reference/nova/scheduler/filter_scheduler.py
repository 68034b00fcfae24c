"""The filter scheduler (``nova/scheduler/filter_scheduler.py``): filter, weigh, pick.

``select_destinations`` returns one host per requested instance: it reads the
host states, drops hosts any filter rejects, ranks the rest with the weighers
and takes the best, consuming its resources before picking for the next
instance of the same request.
"""

from __future__ import annotations

from opentelemetry import trace

from novalab.reference.common import exception
from novalab.reference.nova.scheduler.filters import all_filters
from novalab.reference.nova.scheduler.host_manager import HostManager
from novalab.reference.nova.scheduler.weights.ram import RAMWeigher
from novalab.tracing import attributes as attr
from novalab.tracing.spans import upstream

_FILTER_SCHEDULER = "nova/scheduler/filter_scheduler.py"


class FilterScheduler:
    def __init__(self, host_manager: HostManager, tracer):
        self.host_manager = host_manager
        self.tracer = tracer
        self.filters = [cls() for cls in all_filters()]
        self.weighers = [RAMWeigher()]

    @upstream(_FILTER_SCHEDULER, "FilterScheduler.select_destinations")
    def select_destinations(self, context, spec: dict) -> list[dict]:
        num = spec.get("num_instances", 1)
        hosts = self._schedule(context, spec, num)
        if len(hosts) < num:
            raise exception.NoValidHost(
                reason="There are not enough hosts available.")
        return [{"host": h.host, "nodename": h.nodename} for h in hosts]

    @upstream(_FILTER_SCHEDULER, "FilterScheduler._schedule")
    def _schedule(self, context, spec: dict, num: int) -> list:
        span = trace.get_current_span()
        host_states = self.host_manager.get_all_host_states(context)
        span.set_attribute(attr.NOVA_SCHEDULER_HOSTS_CONSIDERED, len(host_states))
        chosen = []
        for _ in range(num):
            candidates = host_states
            for host_filter in self.filters:
                candidates = host_filter.filter_all(candidates, spec)
                span.add_event("filter", {attr.NOVA_SCHEDULER_FILTER: type(host_filter).__name__,
                                          attr.NOVA_SCHEDULER_HOSTS_PASSED: len(candidates)})
                if not candidates:
                    break
            if not candidates:
                break
            best = self._weigh(candidates)
            best.consume_from_request(spec["flavor"])
            chosen.append(best)
        return chosen

    def _weigh(self, hosts):
        totals = [0.0] * len(hosts)
        for weigher in self.weighers:
            for i, weight in enumerate(weigher.weigh_objects(hosts)):
                totals[i] += weight
        # Highest weight wins; ties go to the host listed first (stable).
        return max(zip(totals, range(len(hosts)), hosts, strict=True),
                   key=lambda t: (t[0], -t[1]))[2]
