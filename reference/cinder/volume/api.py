"""The volume API cinder-api runs (``cinder/volume/api.py``): checks, records, casts.

It validates a request, writes the volume or attachment row and hands the
backend work to cinder-volume over RPC. Status changes that could race (two
attachments of one volume, a delete during an attach) are compare-and-swap
updates on the volume row, as upstream's ``conditional_update``.

Attachments follow the new attach flow (microversions 3.27 and 3.44), which is
what Nova uses:

1. ``attachment_create`` without a connector *reserves* the volume
   (``reserved``); with one it also asks the backend for ``connection_info``;
2. ``attachment_update`` with the host's connector gets ``connection_info``
   (the volume turns ``attaching``);
3. ``os-complete`` (the controller) marks it ``in-use`` once the guest has it;
4. ``attachment_delete`` tears the connection down; with no attachment left
   the volume is ``available`` again.
"""

from __future__ import annotations

import logging
import math

from opentelemetry import trace

from novalab.reference.cinder import exception, policy, quota
from novalab.reference.cinder.db import api as db_api
from novalab.reference.common.context import RequestContext
from novalab.reference.common.db import Database
from novalab.tracing import attributes as attr
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)

PATH = "cinder/volume/api.py"
GiB = 1024 ** 3
DEFAULT_VOLUME_TYPE = "__DEFAULT__"
AVAILABILITY_ZONE = "nova"
DELETABLE = ("available", "error", "error_restoring", "error_extending", "error_managing")


def _check_size(size) -> int:
    if isinstance(size, str) and size.strip().isdigit():
        size = int(size)
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise exception.InvalidInput(
            reason=f"Volume size '{size}' must be an integer and greater than 0")
    if size > 2 ** 31 - 1:
        raise exception.InvalidInput(reason=f"Volume size '{size}' is too large")
    return size


def _check_text(field: str, value) -> str | None:
    if value is not None and (not isinstance(value, str) or len(value) > 255):
        raise exception.InvalidInput(reason=f"{field} must be a string of at most 255 "
                                            "characters")
    return value.strip() if isinstance(value, str) else value


def _check_metadata(metadata) -> dict:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise exception.InvalidInput(reason="metadata must be an object")
    for key, value in metadata.items():
        if not key or len(key) > 255 or not isinstance(value, str) or len(value) > 255:
            raise exception.InvalidInput(
                reason="metadata keys and values must be strings of 1 to 255 characters")
    return dict(metadata)


class API:
    """The API side of volume work (one per cinder-api)."""

    def __init__(self, db: Database, image_service, volume_rpcapi, tracer):
        self.db = db
        self.image_service = image_service
        self.volume_rpcapi = volume_rpcapi
        self.tracer = tracer
        self.quotas = quota.engine(db)

    # Volumes ----------------------------------------------------------------------------

    def _check_image(self, context: RequestContext, image_id, size: int) -> dict:
        """The image's record, if a volume of ``size`` GiB can be made from it
        (upstream's ``ExtractVolumeRequestTask._check_image_metadata``)."""
        if not isinstance(image_id, str) or not image_id:
            raise exception.InvalidInput(reason="Invalid image identifier or unable to "
                                                "access requested image.")
        try:
            image = self.image_service.show(context, image_id)
        except exception.ImageNotFound as exc:
            raise exception.InvalidInput(reason="Invalid image identifier or unable to access "
                                                "requested image.") from exc
        if image.get("status") != "active":
            raise exception.InvalidInput(reason=f"Image {image_id} is not active.")
        image_gb = math.ceil((image.get("size") or 0) / GiB)
        if image_gb > size:
            raise exception.InvalidInput(
                reason=f"Size of specified image {image_gb}GB is larger than volume size "
                       f"{size}GB.")
        if (image.get("min_disk") or 0) > size:
            raise exception.InvalidInput(
                reason=f"Volume size {size}GB cannot be smaller than the image minDisk size "
                       f"{image['min_disk']}GB.")
        return image

    @upstream(PATH, "API.create")
    def create(self, context: RequestContext, size, name: str | None,
               description: str | None, image_id: str | None = None,
               volume_type: str | None = None, metadata: dict | None = None,
               availability_zone: str | None = None) -> dict:
        policy.authorize(context, "volume:create")
        size = _check_size(size)
        name = _check_text("name", name)
        description = _check_text("description", description)
        metadata = _check_metadata(metadata)
        if volume_type not in (None, "", DEFAULT_VOLUME_TYPE):
            raise exception.VolumeTypeNotFoundByName(volume_type_name=volume_type)
        if availability_zone not in (None, AVAILABILITY_ZONE):
            raise exception.InvalidInput(
                reason=f"Availability zone '{availability_zone}' is invalid.")
        # Quota before any work (upstream's QuotaReserveTask), rechecked once the row
        # counts: of two creates checked at one moment, the one over the limit undoes itself.
        deltas = {"volumes": 1, "gigabytes": size}
        quota.check_volume_size(self.quotas, context.project_id, size)
        self.quotas.check_deltas(context.project_id, deltas)
        image = self._check_image(context, image_id, size) if image_id is not None else None
        volume = db_api.volume_create(self.db, {
            "user_id": context.user_id, "project_id": context.project_id, "size": size,
            "status": "creating", "attach_status": db_api.DETACHED,
            "display_name": name, "display_description": description,
            "volume_type": DEFAULT_VOLUME_TYPE, "metadata": metadata,
            "availability_zone": AVAILABILITY_ZONE})
        try:
            self.quotas.recheck(context.project_id, deltas)
        except Exception:
            db_api.volume_destroy(self.db, volume["id"])
            raise
        trace.get_current_span().set_attribute(attr.CINDER_VOLUME_ID, volume["id"])
        request_spec = {"volume_properties": {"size": size, "project_id": context.project_id},
                        "image_id": image_id, "image_meta": image}
        self.volume_rpcapi.create_volume(context, volume, request_spec)
        return volume

    @upstream(PATH, "API.get")
    def get(self, context: RequestContext, volume_id: str) -> dict:
        volume = db_api.volume_get(self.db, volume_id, context)
        policy.authorize(context, "volume:get", volume)
        return volume

    @upstream(PATH, "API.get_all")
    def get_all(self, context: RequestContext, *, all_tenants: bool = False,
                filters: dict | None = None, limit: int | None = None,
                marker: str | None = None) -> list[dict]:
        policy.authorize(context, "volume:get_all")
        return db_api.volume_get_all(self.db, context, all_projects=all_tenants,
                                     filters=filters, limit=limit, marker=marker)

    @upstream(PATH, "API.delete")
    def delete(self, context: RequestContext, volume: dict) -> None:
        policy.authorize(context, "volume:delete", volume)
        if not volume["host"]:
            # Never reached a backend: nothing to remove there, drop the row here.
            if db_api.volume_conditional_update(self.db, volume["id"], {"status": "deleting"},
                                                {"host": None}):
                db_api.volume_destroy(self.db, volume["id"])
                return
            volume = db_api.volume_get(self.db, volume["id"])
        if not db_api.volume_conditional_update(
                self.db, volume["id"], {"status": "deleting"},
                {"status": DELETABLE, "attach_status": db_api.Not(db_api.ATTACHED)},
                no_snapshots=True):
            raise exception.InvalidVolume(
                reason=f"Volume status must be {' or '.join(DELETABLE)} and must not be "
                       "migrating, attached, belong to a group, have snapshots, awaiting a "
                       "transfer, or be disassociated from snapshots after volume transfer.")
        self.volume_rpcapi.delete_volume(context, volume)

    # Snapshots --------------------------------------------------------------------------

    @upstream(PATH, "API.create_snapshot")
    def create_snapshot(self, context: RequestContext, volume: dict, name: str | None,
                        description: str | None, force: bool = False,
                        metadata: dict | None = None) -> dict:
        """``_create_snapshot``: an available volume (or in-use with ``force``), quota for
        one snapshot and the volume's gigabytes, the row ``creating``, a cast to the
        volume's backend."""
        policy.authorize(context, "volume:create_snapshot", volume)
        name = _check_text("name", name)
        description = _check_text("description", description)
        metadata = _check_metadata(metadata)
        allowed = ("available", "in-use") if force else ("available",)
        if volume["status"] not in allowed:
            reason = (f"Volume {volume['id']} status must be available or in-use, but "
                      f"current status is: {volume['status']}." if force else
                      f"Volume {volume['id']} status must be available, but current status "
                      f"is: {volume['status']}.")
            raise exception.InvalidVolume(reason=reason)
        deltas = {"snapshots": 1, "gigabytes": volume["size"]}
        self.quotas.check_deltas(context.project_id, deltas)
        snapshot = db_api.snapshot_create(self.db, {
            "volume_id": volume["id"], "user_id": context.user_id,
            "project_id": context.project_id, "status": "creating", "progress": "0%",
            "volume_size": volume["size"], "display_name": name,
            "display_description": description, "metadata": metadata})
        try:
            self.quotas.recheck(context.project_id, deltas)
        except Exception:
            db_api.snapshot_destroy(self.db, snapshot["id"])
            raise
        span = trace.get_current_span()
        span.set_attribute(attr.CINDER_VOLUME_ID, volume["id"])
        self.volume_rpcapi.create_snapshot(context, volume, snapshot)
        return snapshot

    @upstream(PATH, "API.get_snapshot")
    def get_snapshot(self, context: RequestContext, snapshot_id: str) -> dict:
        snapshot = db_api.snapshot_get(self.db, snapshot_id, context)
        policy.authorize(context, "volume:get_snapshot", snapshot)
        return snapshot

    @upstream(PATH, "API.get_all_snapshots")
    def get_all_snapshots(self, context: RequestContext, *, all_tenants: bool = False,
                          filters: dict | None = None, limit: int | None = None,
                          marker: str | None = None) -> list[dict]:
        policy.authorize(context, "volume:get_all_snapshots")
        return db_api.snapshot_get_all(self.db, context, all_projects=all_tenants,
                                       filters=filters, limit=limit, marker=marker)

    @upstream(PATH, "API.delete_snapshot")
    def delete_snapshot(self, context: RequestContext, snapshot: dict) -> None:
        policy.authorize(context, "volume:delete_snapshot", snapshot)
        if not db_api.snapshot_conditional_update(self.db, snapshot["id"],
                                                  {"status": "deleting"},
                                                  ("available", "error")):
            raise exception.InvalidSnapshot(
                reason="Snapshot status must be available or error and must not be part of "
                       "a group.")
        volume = db_api.volume_get(self.db, snapshot["volume_id"])
        self.volume_rpcapi.delete_snapshot(context, volume, snapshot)

    # Attachments ------------------------------------------------------------------------

    @upstream(PATH, "API._attachment_reserve")
    def _attachment_reserve(self, context: RequestContext, volume: dict,
                            instance_uuid: str | None) -> dict:
        """Reserve the volume for one attachment (multi-attach is left out)."""
        expected = {"status": ("available", "downloading")}
        if not db_api.volume_conditional_update(self.db, volume["id"], {"status": "reserved"},
                                                expected):
            current = db_api.volume_get(self.db, volume["id"])
            same = instance_uuid and current["status"] in ("in-use", "reserved") and any(
                a["instance_uuid"] == instance_uuid for a in current["volume_attachment"])
            if not same:   # the same instance again: allowed, as for a move (LP 1694530)
                raise exception.InvalidVolume(
                    reason=f"Volume {volume['id']} status must be available or downloading "
                           f"to reserve, but the current status is {current['status']}.")
        return db_api.volume_attach(self.db, {
            "volume_id": volume["id"], "attach_status": db_api.RESERVED,
            "instance_uuid": instance_uuid})

    @upstream(PATH, "API.attachment_create")
    def attachment_create(self, context: RequestContext, volume: dict,
                          instance_uuid: str | None, connector: dict | None = None) -> dict:
        policy.authorize(context, "volume:attachment_create", volume)
        if "error" in volume["status"]:
            raise exception.InvalidVolume(
                reason=f"Volume attachments can not be created if the volume is in an error "
                       f"state. The Volume {volume['id']} currently has a status of: "
                       f"{volume['status']} ")
        attachment = self._attachment_reserve(context, volume, instance_uuid)
        connection_info = {}
        if connector:
            try:
                connection_info = self.volume_rpcapi.attachment_update(
                    context, volume, connector, attachment["id"])
            except Exception:
                # Give the reservation back: no half-made attachment is left behind.
                db_api.volume_detached(self.db, volume["id"], attachment["id"])
                raise
        return db_api.volume_attachment_update(self.db, attachment["id"], {
            "connection_info": connection_info, "attach_mode": "null"})

    @upstream(PATH, "API.attachment_update")
    def attachment_update(self, context: RequestContext, attachment: dict,
                          connector: dict) -> dict:
        volume = db_api.volume_get(self.db, attachment["volume_id"], context)
        policy.authorize(context, "volume:attachment_update", volume)
        if "error" in volume["status"]:
            raise exception.ResourceConflict(
                reason=f"Volume attachments can not be updated if the volume is in an error "
                       f"state. The Volume {volume['id']} currently has a status of: "
                       f"{volume['status']} ")
        hosts = {a["connector"].get("host") for a in volume["volume_attachment"]
                 if a["connection_info"] and a["connector"] and a["id"] != attachment["id"]}
        if hosts:
            raise exception.ResourceConflict(
                reason=f"duplicate connectors detected on volume {volume['id']}")
        connection_info = self.volume_rpcapi.attachment_update(context, volume, connector,
                                                               attachment["id"])
        return db_api.volume_attachment_update(self.db, attachment["id"],
                                               {"connection_info": connection_info})

    @upstream(PATH, "API.attachment_delete")
    def attachment_delete(self, context: RequestContext, attachment: dict) -> list[dict]:
        """Disconnect on the backend (unless only reserved), then delete the row.

        Returns the volume's remaining attachments, as upstream's DELETE answers.
        """
        volume = db_api.volume_get(self.db, attachment["volume_id"], context)
        policy.authorize(context, "volume:attachment_delete", volume)
        if attachment["attach_status"] != db_api.RESERVED:
            self.volume_rpcapi.attachment_delete(context, attachment["id"], volume)
        volume = db_api.volume_detached(self.db, volume["id"], attachment["id"])
        return volume["volume_attachment"]
