"""The conductor (``nova/conductor/manager.py``): database work on behalf of compute hosts.

Each public method is an RPC endpoint. The conductor holds the database
credentials; compute hosts send it what to read or save and wait for the reply.

``ComputeTaskManager`` is the conductor's second endpoint on the same topic
(upstream's ``compute_task`` namespace): tasks that need the scheduler before a
host can act. novalab's classic boot does not go through it (the scheduler
casts to the host, see ``scheduler/rpcapi.py``); ``unshelve_instance`` does,
and so does the modern boot: ``schedule_and_build_instances`` is the super
conductor's part (it holds the API database and reaches every cell's): call
the scheduler, create the instance in the chosen host's cell (or bury it in
cell0), map it there, delete its build request, cast to the host.

In the modern topology the two endpoints run in two processes, as DevStack runs
them by default (``CELLSV2_SETUP=superconductor``): ``nova-super-conductor``
(``ComputeTaskManager``, top-level broker, API database) and cell1's
``nova-conductor`` (``ConductorManager``, cell1's virtual host); see
``reference/nova/service.py``.
"""

from __future__ import annotations

import logging
import traceback

from opentelemetry import trace

from novalab.reference.common import exception
from novalab.reference.common.db import Database
from novalab.reference.nova import exception as nova_exception
from novalab.reference.nova.compute import instance_actions, task_states, vm_states
from novalab.reference.nova.compute import utils as compute_utils
from novalab.reference.nova.compute.utils import EventReporter
from novalab.reference.nova.db import api as db_api
from novalab.reference.nova.db import api_database as api_db
from novalab.tracing import attributes as attr
from novalab.tracing.spans import set_instance_attributes, upstream

LOG = logging.getLogger(__name__)
_MANAGER = "nova/conductor/manager.py"
_CLASSIC = "newton-eol"  # the last conductor whose scheduler claimed nothing in placement
_PLACEMENT = "pike-eol"  # the first whose scheduler claimed there (the modern topology)


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
                 host: str, cells=None, report_client=None):
        self.db = db
        self.cells = cells  # the modern topology: db is the API database
        self.report_client = report_client
        self.image_api = image_api
        self.scheduler_rpcapi = scheduler_rpcapi
        self.compute_rpcapi = compute_rpcapi
        self.tracer = tracer
        self.host = host
        self.events = _ActionEvents(db)

    @property
    def uses_placement(self) -> bool:
        """The modern topology: the spans link Pike's code (``upstream``'s placement_ref)."""
        return self.report_client is not None

    @upstream(_MANAGER, "ComputeTaskManager.unshelve_instance", ref=_CLASSIC,
              placement_ref=_PLACEMENT)
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

    @upstream(_MANAGER, "ComputeTaskManager._schedule_instances", ref=_CLASSIC,
              placement_ref=_PLACEMENT)
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

    # The modern boot: the super conductor --------------------------------------------------

    @upstream(_MANAGER, "ComputeTaskManager.schedule_and_build_instances")
    def schedule_and_build_instances(self, context, instance_uuids: list[str], image: dict,
                                     requested_networks=None) -> None:
        """RPC endpoint (cast) from nova-api: the build requests become instances.

        One call to the scheduler for all of them (it claims in placement); then,
        per instance, the host's cell, the instance row in that cell, the create
        action and the block device mappings there, the mapping pointed at the
        cell, the build request deleted, and ``build_and_run_instance`` cast to the
        host. When scheduling fails every instance is buried in cell0.
        """
        specs = api_db.request_specs_get_by_instance_uuids(self.db, instance_uuids)
        build_requests = []
        for uuid in instance_uuids:
            try:
                build_requests.append(api_db.build_request_get_by_instance_uuid(self.db, uuid))
            except api_db.BuildRequestNotFound:
                LOG.info("Build request of %s deleted before scheduling", uuid)
        if not build_requests:
            return
        uuids = [br["instance_uuid"] for br in build_requests]
        request_spec = dict(specs[uuids[0]], instance_uuids=uuids, num_instances=len(uuids))
        trace.get_current_span().set_attribute(attr.NOVA_INSTANCE_UUIDS, uuids)
        try:
            host_lists = self._schedule_instances(context, request_spec, {})
        except Exception as exc:
            LOG.warning("Failed to schedule instances %s: %s", uuids, exc)
            self._bury_in_cell0(context, request_spec, exc, build_requests)
            return
        for build_request, host in zip(build_requests, host_lists, strict=True):
            try:
                self._build_in_cell(context, build_request, specs[build_request["instance_uuid"]],
                                    host, image, requested_networks)
            except Exception as exc:
                LOG.exception("Building %s in its cell failed", build_request["instance_uuid"])
                self._release_claim(context, build_request["instance_uuid"])
                self._bury_in_cell0(context, request_spec, exc, [build_request])

    def _build_in_cell(self, context, build_request: dict, request_spec: dict, host: dict,
                       image: dict, requested_networks) -> None:
        uuid = build_request["instance_uuid"]
        try:
            cell = api_db.host_mapping_get_by_host(self.db, host["host"])["cell_mapping"]
        except api_db.HostMappingNotFound as exc:
            LOG.error("No host-to-cell mapping found for selected host %s. Setup is "
                      "incomplete.", host["host"])
            raise exception.NoValidHost(reason=str(exc)) from exc
        try:  # a delete may have beaten us to it
            api_db.build_request_get_by_instance_uuid(self.db, uuid)
        except api_db.BuildRequestNotFound:
            LOG.info("Build request of %s deleted while it was scheduled", uuid)
            api_db.instance_mapping_destroy(self.db, uuid)
            self._release_claim(context, uuid)
            return
        cell_db = self.cells.target_cell(cell)
        instance = db_api.instance_create(cell_db, dict(
            build_request["instance"], availability_zone=build_request["instance"].get(
                "availability_zone") or "nova"))
        set_instance_attributes(trace.get_current_span(), instance)
        db_api.action_start(cell_db, compute_utils.pack_action_start(
            context, uuid, instance_actions.CREATE))
        bdms = self._create_block_device_mapping(cell_db, uuid,
                                                 build_request["block_device_mappings"])
        self._map_instance_to_cell(context, uuid, cell)
        if not self._delete_build_request(context, uuid, cell_db):
            return
        self.compute_rpcapi.build_and_run_instance(
            context, instance=instance, host=host["host"], image=image,
            request_spec=request_spec, filter_properties={},
            requested_networks=requested_networks, block_device_mapping=bdms,
            node=host["nodename"], limits=host.get("limits"))

    @upstream(_MANAGER, "ComputeTaskManager._create_block_device_mapping")
    def _create_block_device_mapping(self, cell_db: Database, instance_uuid: str,
                                     mappings: list[dict]) -> list[dict]:
        return [db_api.block_device_mapping_create(cell_db, dict(m, instance_uuid=instance_uuid))
                for m in mappings]

    @upstream(_MANAGER, "ComputeTaskManager._map_instance_to_cell")
    def _map_instance_to_cell(self, context, instance_uuid: str, cell: dict) -> None:
        """The instance mapping points at the cell now: reads go there."""
        api_db.instance_mapping_update(self.db, instance_uuid, {"cell_id": cell["id"]})

    @upstream(_MANAGER, "ComputeTaskManager._delete_build_request")
    def _delete_build_request(self, context, instance_uuid: str, cell_db: Database) -> bool:
        """False when a delete took the build request meanwhile: the instance just
        created in the cell goes too, with its claim."""
        try:
            api_db.build_request_destroy(self.db, instance_uuid)
        except api_db.BuildRequestNotFound:
            LOG.info("Build request of %s deleted meanwhile: deleting the instance", instance_uuid)
            db_api.block_device_mapping_destroy_by_instance(cell_db, instance_uuid)
            db_api.instance_destroy(cell_db, instance_uuid)
            api_db.instance_mapping_destroy(self.db, instance_uuid)
            self._release_claim(context, instance_uuid)
            return False
        return True

    def _release_claim(self, context, instance_uuid: str) -> None:
        if self.report_client is not None:
            self.report_client.delete_allocation_for_instance(context, instance_uuid)

    @upstream(_MANAGER, "ComputeTaskManager._bury_in_cell0")
    def _bury_in_cell0(self, context, request_spec: dict, exc: Exception,
                       build_requests: list[dict]) -> None:
        """Instances no host could take live on in cell0, in ERROR with their fault
        and a failed ``create`` action, so the user can read why and delete them.
        The scheduler made no claim for them (or gave it back)."""
        try:
            cell0, cell0_db = self.cells.cell0()
        except api_db.CellMappingNotFound:
            LOG.error("No cell mapping found for cell0 while trying to record scheduling "
                      "failure. Setup is incomplete.")
            return
        message = (exc.format_message() if isinstance(exc, exception.NovaLabException)
                   else type(exc).__name__)
        for build_request in build_requests:
            uuid = build_request["instance_uuid"]
            try:
                mapping = api_db.instance_mapping_get_by_instance_uuid(self.db, uuid)
            except api_db.InstanceMappingNotFound:
                continue  # deleted by its user meanwhile
            if mapping["cell_mapping"] is not None:
                LOG.error("Instance %s is already mapped to cell %s: not burying it", uuid,
                          mapping["cell_mapping"]["name"])
                continue
            db_api.instance_create(cell0_db, dict(build_request["instance"],
                                                  vm_state=vm_states.ERROR, task_state=None))
            db_api.action_start(cell0_db, compute_utils.pack_action_start(
                context, uuid, instance_actions.CREATE))
            event = "conductor_schedule_and_build_instances"
            db_api.action_event_start(cell0_db, compute_utils.pack_action_event_start(
                context, uuid, event, self.host))
            db_api.action_event_finish(cell0_db, compute_utils.pack_action_event_finish(
                context, uuid, event, exc))
            self._create_block_device_mapping(cell0_db, uuid,
                                              build_request["block_device_mappings"])
            db_api.instance_fault_create(cell0_db, {
                "instance_uuid": uuid, "code": getattr(exc, "code", 500) or 500,
                "message": message, "details": "".join(traceback.format_exception(exc))})
            self._map_instance_to_cell(context, uuid, cell0)
            try:
                api_db.build_request_destroy(self.db, uuid)
            except api_db.BuildRequestNotFound:  # deleted meanwhile: so is the buried one
                db_api.instance_destroy(cell0_db, uuid)
