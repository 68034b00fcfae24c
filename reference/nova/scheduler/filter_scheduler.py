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

In the classic topology the spans link to Newton's ``filter_scheduler.py``
(``newton-eol``), the last release whose filter scheduler read every host from
the database and claimed nothing, as the classic topology's does: Ocata asked
placement for candidate hosts first, and Xena merged the filter scheduler into
``SchedulerManager`` (``nova/scheduler/manager.py``). In the modern topology
(``uses_placement``) they link Pike's (``pike-eol``), whose scheduler does what
novalab's does there: allocation candidates in, claims out.

In the modern topology (a ``placement_client``) the manager passes the
allocation candidates in: only their providers are considered, and the
scheduler *claims* the best host's resources in placement before it answers
(Pike's ``_claim_resources``), trying the next host when the claim is refused.
A request for several instances that runs out of hosts halfway gives back what
it claimed (``_cleanup_allocations``).
"""

from __future__ import annotations

import logging

from opentelemetry import trace

from novalab.reference.common import exception
from novalab.reference.nova.compute.utils import compute_node_uuid
from novalab.reference.nova.scheduler.host_manager import HostManager
from novalab.tracing import attributes as attr
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)

_FILTER_SCHEDULER = "nova/scheduler/filter_scheduler.py"
_PRE_PLACEMENT = "newton-eol"  # see the module docstring
_CLAIMS = "pike-eol"  # the first scheduler to claim in placement


class FilterScheduler:
    def __init__(self, host_manager: HostManager, tracer, placement_client=None):
        self.host_manager = host_manager
        self.tracer = tracer
        self.placement_client = placement_client

    @property
    def uses_placement(self) -> bool:
        """The modern topology: the spans link Pike's code (``upstream``'s placement_ref)."""
        return self.placement_client is not None

    @upstream(_FILTER_SCHEDULER, "FilterScheduler.select_destinations", ref=_PRE_PLACEMENT,
              placement_ref=_CLAIMS)
    def select_destinations(self, context, spec: dict,
                            alloc_reqs_by_rp_uuid: dict | None = None) -> list[dict]:
        num = spec.get("num_instances", 1)
        hosts = self._schedule(context, spec, num, alloc_reqs_by_rp_uuid)
        return [{"host": h.host, "nodename": h.nodename} for h in hosts]

    @upstream(_FILTER_SCHEDULER, "FilterScheduler._schedule", ref=_PRE_PLACEMENT,
              placement_ref=_CLAIMS)
    def _schedule(self, context, spec: dict, num: int,
                  alloc_reqs_by_rp_uuid: dict | None = None) -> list:
        span = trace.get_current_span()
        setup = self.host_manager.refresh()  # nova.conf: read again if it changed
        span.set_attribute(attr.NOVA_SCHEDULER_ENABLED_FILTERS,
                           [type(f).__name__ for f in setup.enabled_filters])
        span.set_attribute(attr.NOVA_SCHEDULER_WEIGHERS,
                           [type(w).__name__ for w in setup.weighers])
        span.set_attribute(attr.NOVA_SCHEDULER_RAM_WEIGHT_MULTIPLIER,
                           setup.conf.ram_weight_multiplier)
        host_states = self.host_manager.get_all_host_states(context)
        if alloc_reqs_by_rp_uuid is not None:  # only the hosts placement offered
            host_states = [h for h in host_states
                           if compute_node_uuid(h.nodename) in alloc_reqs_by_rp_uuid]
        span.set_attribute(attr.NOVA_SCHEDULER_HOSTS_CONSIDERED, len(host_states))
        chosen = []
        uuids = list(spec.get("instance_uuids") or ())
        for index in range(num):
            hosts, results = self.host_manager.get_filtered_hosts(host_states, spec, index)
            if not hosts:
                self._cleanup_allocations(context, uuids[:len(chosen)])
                raise exception.NoValidHost(reason=self._no_host_reason(spec, results))
            weighed = self.host_manager.get_weighed_hosts(hosts, spec)
            if alloc_reqs_by_rp_uuid is not None:
                weighed = self._claimed_first(context, spec, uuids[index], weighed,
                                              alloc_reqs_by_rp_uuid)
                if not weighed:
                    self._cleanup_allocations(context, uuids[:len(chosen)])
                    raise exception.NoValidHost(
                        reason="There are not enough hosts available. Placement refused "
                               "every claim.")
            best = weighed[0].obj
            if span.is_recording():  # every host's weight is for the trace only
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

    def _claimed_first(self, context, spec: dict, instance_uuid: str, weighed: list,
                       alloc_reqs_by_rp_uuid: dict) -> list:
        """The weighed hosts from the first one whose claim placement accepted
        (empty if it accepted none): the claim is what makes the choice stick."""
        for position, candidate in enumerate(weighed):
            rp_uuid = compute_node_uuid(candidate.obj.nodename)
            if self._claim_resources(context, spec, instance_uuid,
                                     alloc_reqs_by_rp_uuid[rp_uuid]):
                return weighed[position:]
        return []

    @upstream(_FILTER_SCHEDULER, "FilterScheduler._claim_resources", ref=_CLAIMS)
    def _claim_resources(self, context, spec: dict, instance_uuid: str,
                         alloc_reqs: list[dict]) -> bool:
        """Claim the host's first allocation request for the instance (a PUT to
        placement with the instance as consumer)."""
        trace.get_current_span().set_attribute(attr.NOVA_INSTANCE_UUID, instance_uuid)
        return self.placement_client.claim_resources(context, instance_uuid, alloc_reqs[0],
                                                     spec["project_id"], spec["user_id"])

    @upstream(_FILTER_SCHEDULER, "FilterScheduler._cleanup_allocations", ref=_CLAIMS)
    def _cleanup_allocations(self, context, instance_uuids: list[str]) -> None:
        """Give back the claims of a request that did not get all its hosts."""
        if self.placement_client is None:
            return
        for uuid in instance_uuids:
            self.placement_client.delete_allocation_for_instance(context, uuid)

    @staticmethod
    def _no_host_reason(spec: dict, results) -> str:
        """Upstream's reason ("There are not enough hosts available."), then a sentence
        only novalab adds, ``Filter X returned 0 hosts.``: upstream writes it to
        nova-scheduler's log (``nova/filters.py``), never into the fault."""
        summary = [f"{name}: (start: {start}, end: {end})" for name, start, end in results]
        LOG.info("Filtering removed all hosts for the request with instance ID '%s'. "
                 "Filter results: %s", ",".join(spec.get("instance_uuids") or ()), summary)
        reason = "There are not enough hosts available."
        if results and results[-1][1] > 0 and results[-1][2] == 0:  # novalab's addition
            reason += f" Filter {results[-1][0]} returned 0 hosts."
        return reason
