"""Client side of the conductor RPC API: nova-compute's only way to the database.

Every method is an RPC *call* (the compute host waits for the reply): reading an
instance is steps 14-18 of the classic flow, saving its state steps 45-47. The
method names are the conductor's from the Grizzly era, when the conductor was
introduced exactly to keep database credentials off compute hosts.
"""

from __future__ import annotations

from novalab.reference.rpc import RPCClient, Target
from novalab.tracing.spans import upstream

TOPIC = "conductor"
_CONDUCTOR_RPCAPI = "nova/conductor/rpcapi.py"


class ConductorAPI:
    def __init__(self, transport, tracer, timeout: float = 60):
        self.tracer = tracer
        self.client = RPCClient(transport, Target(topic=TOPIC), tracer=tracer, timeout=timeout)

    @upstream(_CONDUCTOR_RPCAPI, "ConductorAPI.instance_get_by_uuid", ref="grizzly-eol")
    def instance_get_by_uuid(self, ctxt, instance_uuid: str) -> dict:
        return self.client.call(ctxt, "instance_get_by_uuid", instance_uuid=instance_uuid)

    @upstream(_CONDUCTOR_RPCAPI, "ConductorAPI.instance_update", ref="grizzly-eol")
    def instance_update(self, ctxt, instance_uuid: str, updates: dict,
                        expected_task_state=None, check_task_state: bool = False) -> dict:
        """Save ``updates``; with ``check_task_state`` only if the task state is as expected."""
        kwargs = {"expected_task_state": expected_task_state} if check_task_state else {}
        return self.client.call(ctxt, "instance_update", instance_uuid=instance_uuid,
                                updates=updates, **kwargs)

    @upstream(_CONDUCTOR_RPCAPI, "ConductorAPI.instance_destroy", ref="grizzly-eol")
    def instance_destroy(self, ctxt, instance_uuid: str) -> dict:
        return self.client.call(ctxt, "instance_destroy", instance_uuid=instance_uuid)

    @upstream(_CONDUCTOR_RPCAPI, "ConductorAPI.block_device_mapping_get_all_by_instance",
              ref="grizzly-eol")
    def block_device_mapping_get_all_by_instance(self, ctxt, instance_uuid: str) -> list:
        return self.client.call(ctxt, "block_device_mapping_get_all_by_instance",
                                instance_uuid=instance_uuid)

    @upstream(_CONDUCTOR_RPCAPI, "ConductorAPI.block_device_mapping_update_or_create",
              ref="grizzly-eol")
    def block_device_mapping_update(self, ctxt, bdm_id: int, values: dict) -> dict:
        """Grizzly's compute host called ``block_device_mapping_update`` on the conductor
        API (``nova/conductor/api.py``), which sent ``block_device_mapping_update_or_create``
        with ``create=False``; novalab sends the shorter name."""
        return self.client.call(ctxt, "block_device_mapping_update", bdm_id=bdm_id,
                                values=values)

    @upstream(_CONDUCTOR_RPCAPI, "ConductorAPI.instance_info_cache_update", ref="grizzly-eol")
    def instance_info_cache_update(self, ctxt, instance_uuid: str, network_info: list) -> dict:
        return self.client.call(ctxt, "instance_info_cache_update", instance_uuid=instance_uuid,
                                network_info=network_info)

    def instance_fault_create(self, ctxt, values: dict) -> dict:
        return self.client.call(ctxt, "instance_fault_create", values=values)

    @upstream(_CONDUCTOR_RPCAPI, "ConductorAPI.action_event_start", ref="grizzly-eol")
    def action_event_start(self, ctxt, values: dict) -> dict:
        """Start an instance-action event (``values`` from ``pack_action_event_start``)."""
        return self.client.call(ctxt, "action_event_start", values=values)

    @upstream(_CONDUCTOR_RPCAPI, "ConductorAPI.action_event_finish", ref="grizzly-eol")
    def action_event_finish(self, ctxt, values: dict) -> dict:
        """Finish it with ``Success`` or ``Error`` (``pack_action_event_finish``)."""
        return self.client.call(ctxt, "action_event_finish", values=values)

    def instance_get_all_by_host(self, ctxt, host: str) -> list[dict]:
        return self.client.call(ctxt, "instance_get_all_by_host", host=host)

    def compute_node_update(self, ctxt, values: dict) -> dict:
        return self.client.call(ctxt, "compute_node_update", values=values)

    def service_get_or_create(self, ctxt, host: str, binary: str, topic: str) -> dict:
        return self.client.call(ctxt, "service_get_or_create", host=host, binary=binary,
                                topic=topic)

    def service_report(self, ctxt, service_id: int) -> dict:
        return self.client.call(ctxt, "service_report", service_id=service_id)


class ComputeTaskAPI:
    """nova-api's way to the conductor's tasks (``nova/conductor/rpcapi.py``): casts."""

    def __init__(self, transport, tracer):
        self.tracer = tracer
        self.client = RPCClient(transport, Target(topic=TOPIC), tracer=tracer)

    @upstream(_CONDUCTOR_RPCAPI, "ComputeTaskAPI.schedule_and_build_instances")
    def schedule_and_build_instances(self, ctxt, instance_uuids: list[str], image: dict,
                                     requested_networks=None) -> None:
        """The modern boot's hand-off from nova-api to the super conductor (a cast).

        Upstream sends the ``BuildRequest`` and ``RequestSpec`` objects themselves;
        novalab sends their instance uuids and the conductor reads both from the API
        database, as it reads each build request again anyway to see that it was not
        deleted meanwhile."""
        self.client.cast(ctxt, "schedule_and_build_instances", instance_uuids=instance_uuids,
                         image=image, requested_networks=requested_networks)

    @upstream(_CONDUCTOR_RPCAPI, "ComputeTaskAPI.unshelve_instance", ref="newton-eol")
    def unshelve_instance(self, ctxt, instance: dict, request_spec: dict) -> None:
        self.client.cast(ctxt, "unshelve_instance", instance=instance,
                         request_spec=request_spec)
