"""Client side of the compute RPC API (``nova/compute/rpcapi.py``).

Messages to a compute host go to the ``compute.<host>`` queue: ``prepare(server=host)``
picks the one host that must do the work. Every method here is a *cast*: the
sender does not wait, the instance's state in the database tells the outcome.
An action on a server that has a host goes to that host (``instance["host"]``);
``build_and_run_instance`` and ``unshelve_instance`` go where the scheduler chose.
"""

from __future__ import annotations

from novalab.reference.rpc import RPCClient, Target
from novalab.tracing.spans import upstream

TOPIC = "compute"
_RPCAPI = "nova/compute/rpcapi.py"


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

    # Snapshot, shelve, unshelve: to the host the instance is on (or is going to).

    @upstream(_RPCAPI, "ComputeAPI.snapshot_instance")
    def snapshot_instance(self, ctxt, instance: dict, image_id: str) -> None:
        self.client.prepare(server=instance["host"]).cast(
            ctxt, "snapshot_instance", instance=instance, image_id=image_id)

    @upstream(_RPCAPI, "ComputeAPI.shelve_instance")
    def shelve_instance(self, ctxt, instance: dict, image_id: str,
                        clean_shutdown: bool = True) -> None:
        self.client.prepare(server=instance["host"]).cast(
            ctxt, "shelve_instance", instance=instance, image_id=image_id,
            clean_shutdown=clean_shutdown)

    @upstream(_RPCAPI, "ComputeAPI.shelve_offload_instance")
    def shelve_offload_instance(self, ctxt, instance: dict, clean_shutdown: bool = True) -> None:
        self.client.prepare(server=instance["host"]).cast(
            ctxt, "shelve_offload_instance", instance=instance, clean_shutdown=clean_shutdown)

    @upstream(_RPCAPI, "ComputeAPI.unshelve_instance")
    def unshelve_instance(self, ctxt, instance: dict, host: str, request_spec: dict,
                          image: dict | None = None, filter_properties: dict | None = None,
                          node: str | None = None) -> None:
        self.client.prepare(server=host).cast(
            ctxt, "unshelve_instance", instance=instance, image=image,
            filter_properties=filter_properties, node=node, request_spec=request_spec)

    @upstream(_RPCAPI, "ComputeAPI.start_instance")
    def start_instance(self, ctxt, instance: dict) -> None:
        self.client.prepare(server=instance["host"]).cast(ctxt, "start_instance",
                                                          instance=instance)

    # Volume attach and detach: to the host the instance runs on.

    @upstream(_RPCAPI, "ComputeAPI.attach_volume")
    def attach_volume(self, ctxt, instance: dict, bdm: dict) -> None:
        self.client.prepare(server=instance["host"]).cast(
            ctxt, "attach_volume", instance=instance, bdm=bdm)

    @upstream(_RPCAPI, "ComputeAPI.detach_volume")
    def detach_volume(self, ctxt, instance: dict, volume_id: str,
                      attachment_id: str | None = None) -> None:
        self.client.prepare(server=instance["host"]).cast(
            ctxt, "detach_volume", instance=instance, volume_id=volume_id,
            attachment_id=attachment_id)

    # Power actions (casts) and the console log (a call: the API waits for the text).

    @upstream(_RPCAPI, "ComputeAPI.stop_instance")
    def stop_instance(self, ctxt, instance: dict, clean_shutdown: bool = True) -> None:
        self.client.prepare(server=instance["host"]).cast(
            ctxt, "stop_instance", instance=instance, clean_shutdown=clean_shutdown)

    @upstream(_RPCAPI, "ComputeAPI.reboot_instance")
    def reboot_instance(self, ctxt, instance: dict, block_device_info, reboot_type: str) -> None:
        self.client.prepare(server=instance["host"]).cast(
            ctxt, "reboot_instance", instance=instance, block_device_info=block_device_info,
            reboot_type=reboot_type)

    def _cast_instance(self, ctxt, method: str, instance: dict) -> None:
        self.client.prepare(server=instance["host"]).cast(ctxt, method, instance=instance)

    @upstream(_RPCAPI, "ComputeAPI.pause_instance")
    def pause_instance(self, ctxt, instance: dict) -> None:
        self._cast_instance(ctxt, "pause_instance", instance)

    @upstream(_RPCAPI, "ComputeAPI.unpause_instance")
    def unpause_instance(self, ctxt, instance: dict) -> None:
        self._cast_instance(ctxt, "unpause_instance", instance)

    @upstream(_RPCAPI, "ComputeAPI.suspend_instance")
    def suspend_instance(self, ctxt, instance: dict) -> None:
        self._cast_instance(ctxt, "suspend_instance", instance)

    @upstream(_RPCAPI, "ComputeAPI.resume_instance")
    def resume_instance(self, ctxt, instance: dict) -> None:
        self._cast_instance(ctxt, "resume_instance", instance)

    @upstream(_RPCAPI, "ComputeAPI.get_console_output")
    def get_console_output(self, ctxt, instance: dict, tail_length) -> str:
        return self.client.prepare(server=instance["host"]).call(
            ctxt, "get_console_output", instance=instance, tail_length=tail_length)
