"""Client side of the scheduler RPC API.

In the classic flow nova-api *casts* ``run_instance`` to the ``scheduler`` topic
(Grizzly's ``nova/scheduler/rpcapi.py``): any scheduler may take it, and the API
answers ``202`` without waiting. Havana and Icehouse sent a boot through the
conductor's ``build_instances``, which still cast ``run_instance``; since Juno
the conductor instead *calls* ``select_destinations`` and casts
``build_and_run_instance`` to the host itself. novalab keeps the classic cast and
runs ``select_destinations`` inside the scheduler (see ``docs/decisions.md``).

``select_destinations`` is also an endpoint, *called* (the caller waits for the
hosts): the conductor asks it where a SHELVED_OFFLOADED server unshelves.
"""

from __future__ import annotations

from novalab.reference.rpc import RPCClient, Target
from novalab.tracing.spans import upstream

TOPIC = "scheduler"


class SchedulerAPI:
    def __init__(self, transport, tracer, uses_placement: bool = False):
        self.tracer = tracer
        self.client = RPCClient(transport, Target(topic=TOPIC), tracer=tracer)
        # The modern topology's conductor: its call asks for claims, the span links Pike's.
        self.uses_placement = uses_placement

    @upstream("nova/scheduler/rpcapi.py", "SchedulerAPI.run_instance", ref="grizzly-eol")
    def run_instance(self, ctxt, request_spec: dict, filter_properties: dict,
                     requested_networks=None, block_device_mapping=None) -> None:
        self.client.cast(ctxt, "run_instance", request_spec=request_spec,
                         filter_properties=filter_properties,
                         requested_networks=requested_networks,
                         block_device_mapping=block_device_mapping)

    @upstream("nova/scheduler/rpcapi.py", "SchedulerAPI.select_destinations", ref="newton-eol",
              placement_ref="pike-eol")
    def select_destinations(self, ctxt, request_spec: dict, filter_properties: dict) -> list:
        """One ``{"host", "nodename", "limits"}`` per instance of ``request_spec``."""
        return self.client.call(ctxt, "select_destinations", request_spec=request_spec,
                                filter_properties=filter_properties)
