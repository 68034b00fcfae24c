"""The compute API's side of cells v2: build requests before a cell, mappings after.

In the modern topology ``API._provision_instances`` writes no instance row. It
records in the API database, per instance, a ``RequestSpec``, a
``BuildRequest`` (the instance to be) and an ``InstanceMapping`` with no cell
yet, and ``API.create`` casts ``schedule_and_build_instances`` to the super
conductor. Until the conductor has created the instance in a cell, nova-api
answers reads from the build request; after, from the cell its mapping names
(cell0 for a server no host could take). A delete that beats the conductor
removes the build request, and the conductor, finding it gone, stops.

A mixin of :class:`~novalab.reference.nova.compute.api.API`, which holds
``self.db`` (the API database) and ``self.cells``.
"""

from __future__ import annotations

import logging
from datetime import datetime

from novalab.reference.common import exception
from novalab.reference.common.db import Database, utcnow
from novalab.reference.nova.db import api as db_api
from novalab.reference.nova.db import api_database as api_db
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)
_API = "nova/compute/api.py"


def instance_from_build_request(build_request: dict) -> dict:
    """``BuildRequest.get_new_instance``: the instance as the API shows it while it
    waits for a cell (no id, no host, no hypervisor name yet)."""
    instance = dict(build_request["instance"])
    instance.update(id=None, name="", host=None, node=None, launched_at=None,
                    terminated_at=None, deleted=0, created_at=build_request["created_at"],
                    updated_at=build_request["updated_at"])
    return instance


class CellsV2Mixin:
    db: Database

    def _provision_build_requests(self, context, values: list[dict], request_spec: dict,
                                  block_device_mappings: list[list[dict]]) -> list[dict]:
        """The three API-database rows of each instance (upstream's loop in
        ``_provision_instances``: request spec, build request, instance mapping)."""
        instances = []
        try:
            for instance, bdms in zip(values, block_device_mappings, strict=True):
                api_db.request_spec_create(self.db, instance["uuid"],
                                           dict(request_spec, instance_uuid=instance["uuid"]))
                build_request = api_db.build_request_create(self.db, instance, bdms)
                api_db.instance_mapping_create(self.db, {
                    "instance_uuid": instance["uuid"], "cell_id": None,
                    "project_id": instance["project_id"], "user_id": instance["user_id"]})
                instances.append(instance_from_build_request(build_request))
        except Exception:
            for instance in values:
                self._destroy_build_request(context, instance["uuid"])
            raise
        return instances

    def _destroy_build_request(self, context, instance_uuid: str) -> bool:
        """Remove what the API wrote for an instance that never reached a cell and
        release its volume reservations; False if the conductor got there first."""
        try:
            build_request = api_db.build_request_get_by_instance_uuid(self.db, instance_uuid)
            api_db.build_request_destroy(self.db, instance_uuid)
        except api_db.BuildRequestNotFound:
            build_request = None
        if build_request is not None:
            for bdm in build_request["block_device_mappings"]:
                if bdm.get("attachment_id") and self.volume_api is not None:
                    try:
                        self.volume_api.attachment_delete(context, bdm["attachment_id"])
                    except exception.NotFound:
                        pass
        if build_request is None:
            return False
        api_db.request_spec_destroy(self.db, instance_uuid)
        api_db.instance_mapping_destroy(self.db, instance_uuid)
        return True

    @upstream(_API, "API._lookup_instance")
    def _lookup_instance(self, context, instance_uuid: str,
                         read_deleted: str = "no") -> tuple[dict | None, dict]:
        """(cell, instance): from the cell its mapping names, or from its build request
        while it has no cell (cell None). ``InstanceNotFound`` if neither has it."""
        for _attempt in (1, 2):
            try:
                mapping = api_db.instance_mapping_get_by_instance_uuid(self.db, instance_uuid)
            except api_db.InstanceMappingNotFound:
                break
            cell = mapping["cell_mapping"]
            if cell is None:
                try:
                    return None, instance_from_build_request(
                        api_db.build_request_get_by_instance_uuid(self.db, instance_uuid))
                except api_db.BuildRequestNotFound:
                    continue  # the conductor mapped it meanwhile: read the mapping again
            return cell, db_api.instance_get_by_uuid(self.cells.target_cell(cell),
                                                     instance_uuid, read_deleted,
                                                     expected_attrs=db_api.API_EXPECTED_ATTRS)
        raise exception.InstanceNotFound(instance_id=instance_uuid)

    def _get_all_in_cells(self, project_id: str | None, *, limit, marker,
                          name_match, match=None) -> list[dict]:
        """Every cell's instances and the build requests, newest first (upstream
        sorts across cells in ``multi_cell_list``); an instance seen both as a build
        request and in its cell (the conductor between two writes) counts once."""
        found: dict[str, dict] = {}
        for _cell, db in self.cells.all_cells():
            for instance in db_api.instance_get_all(db, project_id=project_id,
                                                    name_match=name_match, match=match,
                                                    expected_attrs=db_api.API_EXPECTED_ATTRS):
                found[instance["uuid"]] = instance
        for build_request in api_db.build_request_get_all(self.db, project_id):
            instance = instance_from_build_request(build_request)
            if instance["uuid"] in found:
                continue
            if (name_match is None or name_match(instance["display_name"] or "")) and \
                    (match is None or match(instance)):
                found[instance["uuid"]] = instance
        instances = sorted(found.values(), key=lambda i: (i["created_at"] or datetime.min,
                                                          i["id"] or 0), reverse=True)
        if marker is not None:
            uuids = [i["uuid"] for i in instances]
            if marker not in uuids:
                raise exception.Invalid(f"marker [{marker}] not found")
            instances = instances[uuids.index(marker) + 1:]
        return instances if limit is None else instances[:limit]

    def _faults_in_cells(self, uuids: list[str]) -> dict[str, dict]:
        faults: dict[str, dict] = {}
        for _cell, db in self.cells.all_cells():
            faults.update(db_api.instance_fault_get_by_instance_uuids(
                db, [u for u in uuids if u not in faults]))
        return faults

    @upstream(_API, "API._delete_while_booting")
    def _delete_while_booting(self, context, instance: dict) -> bool:
        """Delete a server no cell has yet by deleting its build request first; the
        conductor finds it gone and stops. False if the conductor was first: the
        instance is in a cell now, and goes the usual way."""
        return self._destroy_build_request(context, instance["uuid"])

    @upstream(_API, "API._local_delete_cleanup")
    def _local_delete_cleanup(self, context, instance_uuid: str) -> None:
        """After a delete no host took part in: the claim in placement goes, and so
        does the instance's mapping."""
        if self.placement_client is not None:
            self.placement_client.delete_allocation_for_instance(context, instance_uuid)
        try:
            api_db.instance_mapping_update(self.db, instance_uuid,
                                           {"queued_for_delete": True, "updated_at": utcnow()})
        except api_db.InstanceMappingNotFound:
            LOG.info("Instance %s had no mapping to mark deleted", instance_uuid)
