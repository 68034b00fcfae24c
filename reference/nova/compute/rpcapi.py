"""Client side of the compute RPC API (``nova/compute/rpcapi.py``).

Messages to a compute host go to the ``compute.<host>`` queue: ``prepare(server=host)``
picks the one host that must do the work. Both methods here are *casts*: the
sender does not wait, the instance's state in the database tells the outcome.
"""

from __future__ import annotations

from novalab.reference.rpc import RPCClient, Target
from novalab.tracing.spans import upstream

TOPIC = "compute"


class ComputeAPI:
    def __init__(self, transport, tracer):
        self.tracer = tracer
        self.client = RPCClient(transport, Target(topic=TOPIC), tracer=tracer)

    @upstream("nova/compute/rpcapi.py", "ComputeAPI.build_and_run_instance")
    def build_and_run_instance(self, ctxt, instance: dict, host: str, image: dict,
                               request_spec: dict, filter_properties: dict,
                               requested_networks=None, block_device_mapping=None,
                               node: str | None = None, limits: dict | None = None) -> None:
        self.client.prepare(server=host).cast(
            ctxt, "build_and_run_instance", instance=instance, image=image,
            request_spec=request_spec, filter_properties=filter_properties,
            requested_networks=requested_networks, block_device_mapping=block_device_mapping,
            node=node, limits=limits)

    @upstream("nova/compute/rpcapi.py", "ComputeAPI.terminate_instance")
    def terminate_instance(self, ctxt, instance: dict, host: str) -> None:
        self.client.prepare(server=host).cast(ctxt, "terminate_instance", instance=instance)

    @upstream("nova/compute/rpcapi.py", "ComputeAPI.external_instance_event")
    def external_instance_event(self, ctxt, instances: list[dict], events: list[dict],
                                host: str) -> None:
        self.client.prepare(server=host).cast(ctxt, "external_instance_event",
                                              instances=instances, events=events)
