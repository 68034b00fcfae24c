"""The conductor (``nova/conductor/manager.py``): database work on behalf of compute hosts.

Each public method is an RPC endpoint. The conductor holds the database
credentials; compute hosts send it what to read or save and wait for the reply.

``ComputeTaskManager`` is the conductor's second endpoint on the same topic
(upstream's ``compute_task`` namespace): tasks that need the scheduler before a
host can act. novalab's classic boot does not go through it (the scheduler
casts to the host, see ``scheduler/rpcapi.py``); ``unshelve_instance`` does.
"""

from __future__ import annotations

import logging
import traceback

from opentelemetry import trace

from novalab.reference.common import exception
from novalab.reference.common.db import Database
from novalab.reference.nova import exception as nova_exception
from novalab.reference.nova.compute import task_states, vm_states
from novalab.reference.nova.compute.utils import EventReporter
from novalab.reference.nova.db import api as db_api
from novalab.tracing.spans import set_instance_attributes, upstream

LOG = logging.getLogger(__name__)
_MANAGER = "nova/conductor/manager.py"
_CLASSIC = "newton-eol"  # the last conductor whose scheduler claimed nothing in placement


class ConductorManager:
    def __init__(self, db: Database, tracer):
        self.db = db
        self.tracer = tracer

    @upstream(_MANAGER, "ConductorManager.instance_get_by_uuid", ref="grizzly-eol")
    def instance_get_by_uuid(self, context, instance_uuid: str) -> dict:
        instance = db_api.instance_get_by_uuid(self.db, instance_uuid)
        set_instance_attributes(trace.get_current_span(), instance)
        return instance

    @upstream(_MANAGER, "ConductorManager.instance_update", ref="grizzly-eol")
    def instance_update(self, context, instance_uuid: str, updates: dict, **kwargs) -> dict:
        """Apply ``updates``; ``expected_task_state`` (if sent) guards against races."""
        new = db_api.instance_update(self.db, instance_uuid, updates, **kwargs)
        set_instance_attributes(trace.get_current_span(), new)
        return new

    @upstream(_MANAGER, "ConductorManager.instance_destroy", ref="grizzly-eol")
    def instance_destroy(self, context, instance_uuid: str) -> dict:
        return db_api.instance_destroy(self.db, instance_uuid)

    @upstream(_MANAGER, "ConductorManager.block_device_mapping_get_all_by_instance",
              ref="grizzly-eol")
    def block_device_mapping_get_all_by_instance(self, context, instance_uuid: str) -> list:
        return db_api.block_device_mapping_get_all_by_instance(self.db, instance_uuid)

    @upstream(_MANAGER, "ConductorManager.block_device_mapping_update_or_create",
              ref="grizzly-eol")
    def block_device_mapping_update(self, context, bdm_id: int, values: dict) -> dict:
        """Save ``values`` on one mapping. Grizzly's conductor had no endpoint of this
        name: it got ``block_device_mapping_update_or_create`` with ``create=False``."""
        return db_api.block_device_mapping_update(self.db, bdm_id, values)

    @upstream(_MANAGER, "ConductorManager.instance_info_cache_update", ref="grizzly-eol")
    def instance_info_cache_update(self, context, instance_uuid: str,
                                   network_info: list) -> dict:
        return db_api.instance_info_cache_update(self.db, instance_uuid, network_info)

    def instance_fault_create(self, context, values: dict) -> dict:
        return db_api.instance_fault_create(self.db, values)

    @upstream(_MANAGER, "ConductorManager.action_event_start", ref="grizzly-eol")
    def action_event_start(self, context, values: dict) -> dict:
        """A compute host starts an event of an instance action (``EventReporter``)."""
        return db_api.action_event_start(self.db, values)

    @upstream(_MANAGER, "ConductorManager.action_event_finish", ref="grizzly-eol")
    def action_event_finish(self, context, values: dict) -> dict:
        """... and finishes it with its result."""
        return db_api.action_event_finish(self.db, values)

    def instance_get_all_by_host(self, context, host: str) -> list[dict]:
        return db_api.instance_get_all(self.db, host=host)

    def compute_node_update(self, context, values: dict) -> dict:
        return db_api.compute_node_create_or_update(self.db, values)

    def service_get_or_create(self, context, host: str, binary: str, topic: str) -> dict:
        return db_api.service_create_or_get(self.db, host, binary, topic)

    def service_report(self, context, service_id: int) -> dict:
        return db_api.service_report(self.db, service_id)


class _ActionEvents:
    """``EventReporter``'s sink in the conductor: it has the database, so no RPC."""

    def __init__(self, db: Database):
        self.db = db

    def action_event_start(self, context, values: dict) -> dict:
        return db_api.action_event_start(self.db, values)

    def action_event_finish(self, context, values: dict) -> dict:
        return db_api.action_event_finish(self.db, values)


class ComputeTaskManager:
    """Tasks that pick a host first (``nova.conductor.manager.ComputeTaskManager``)."""

    def __init__(self, db: Database, image_api, scheduler_rpcapi, compute_rpcapi, tracer,
                 host: str):
        self.db = db
        self.image_api = image_api
        self.scheduler_rpcapi = scheduler_rpcapi
        self.compute_rpcapi = compute_rpcapi
        self.tracer = tracer
        self.host = host
        self.events = _ActionEvents(db)

    @upstream(_MANAGER, "ComputeTaskManager.unshelve_instance", ref=_CLASSIC)
    def unshelve_instance(self, context, instance: dict, request_spec: dict | None = None) -> None:
        """RPC endpoint (cast): a SHELVED server starts again on its host; a
        SHELVED_OFFLOADED one goes to the host the scheduler picks, which spawns it
        from its shelved image (events ``get_image_info`` and ``schedule_instances``).
        """
        uuid = instance["uuid"]
        set_instance_attributes(trace.get_current_span(), instance)
        if instance["vm_state"] == vm_states.SHELVED:
            instance = db_api.instance_update(self.db, uuid,
                                              {"task_state": task_states.POWERING_ON},
                                              expected_task_state=task_states.UNSHELVING)
            self.compute_rpcapi.start_instance(context, instance)
            return
        if instance["vm_state"] != vm_states.SHELVED_OFFLOADED:
            LOG.error("Unshelve attempted but vm_state not SHELVED or SHELVED_OFFLOADED")
            db_api.instance_update(self.db, uuid, {"vm_state": vm_states.ERROR})
            return
        image = None
        image_id = (instance.get("system_metadata") or {}).get("shelved_image_id")
        if image_id:  # none for a volume-backed server: it boots from its volume
            with EventReporter(context, self.events, "get_image_info", self.host, uuid):
                image = self._safe_image_show(context, instance, image_id)
        try:
            with EventReporter(context, self.events, "schedule_instances", self.host, uuid):
                filter_properties: dict = {}
                (selection,) = self._schedule_instances(context, request_spec,
                                                        filter_properties)
                self.compute_rpcapi.unshelve_instance(
                    context, instance, selection["host"], request_spec, image=image,
                    filter_properties=filter_properties, node=selection["nodename"])
        except exception.NoValidHost:
            LOG.warning("No valid host found for unshelve instance %s", uuid)
            db_api.instance_update(self.db, uuid, {"task_state": None})
        except Exception:
            LOG.exception("Unshelve of %s attempted but an error has occurred", uuid)
            # The scheduler may have recorded its choice: no host took the server.
            db_api.instance_update(self.db, uuid, {"task_state": None, "host": None,
                                                   "node": None})
            raise

    def _safe_image_show(self, context, instance: dict, image_id: str) -> dict:
        """The shelved image; without it there is nothing to unshelve from: ERROR."""
        try:
            return self.image_api.show(context, image_id)
        except exception.ImageNotFound as error:
            reason = f"Unshelve attempted but the image {image_id} cannot be found."
            LOG.error("%s (instance %s)", reason, instance["uuid"])
            db_api.instance_fault_create(self.db, {
                "instance_uuid": instance["uuid"], "code": 404, "message": reason,
                "details": "".join(traceback.format_exception(error))})
            db_api.instance_update(self.db, instance["uuid"],
                                   {"vm_state": vm_states.ERROR, "task_state": None})
            raise nova_exception.UnshelveException(instance_id=instance["uuid"],
                                                   reason=reason) from error

    @upstream(_MANAGER, "ComputeTaskManager._schedule_instances", ref=_CLASSIC)
    def _schedule_instances(self, context, request_spec: dict,
                            filter_properties: dict) -> list[dict]:
        """Ask the scheduler for a host: an RPC *call*, the conductor waits.

        The seam for the modern topology (placement): there the scheduler's
        ``select_destinations`` also claims the server's resources in placement
        (allocation candidates, then an allocation with the instance as consumer),
        and a failure after it must delete that allocation again. The conductor's
        side stays this one call.
        """
        return self.scheduler_rpcapi.select_destinations(context, request_spec,
                                                         filter_properties)
