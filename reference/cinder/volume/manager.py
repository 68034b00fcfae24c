"""cinder-volume's RPC endpoint (``cinder/volume/manager.py``): the backend does the work.

One manager per backend (``<host>@<backend>``) serves the ``cinder-volume``
topic. Its public methods are the RPC API:

* ``create_volume`` (cast): claim the volume for this backend (the folded
  scheduler, see ``rpcapi.py``), create the RBD image, and for a volume from an
  image download the bytes from glance with the user's token and write them in;
  the volume ends ``available`` (bootable when from an image) or ``error`` with
  a user message. A failed create removes what it made on the backend.
* ``delete_volume`` (cast): remove the image, then the row (``error_deleting``
  when the backend refuses).
* ``attachment_update`` (call): the connection Nova needs, from the driver's
  ``initialize_connection``; the volume turns ``attaching`` until Nova says
  ``os-complete`` to the API.
* ``attachment_delete`` (call): ``terminate_connection`` on the backend.

Upstream runs creates as a taskflow (``cinder/volume/flows/manager/create_volume.py``);
the span names below keep the flow's task methods so the trace reads the same.
"""

from __future__ import annotations

import logging

from opentelemetry import trace

from novalab.reference.cinder import exception, message
from novalab.reference.cinder.db import api as db_api
from novalab.reference.common import retry
from novalab.reference.common.context import RequestContext, get_admin_context
from novalab.reference.common.db import Database, utcnow
from novalab.reference.common.faults import NO_FAULTS
from novalab.tracing import attributes as attr
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)

PATH = "cinder/volume/manager.py"
FLOW = "cinder/volume/flows/manager/create_volume.py"

# Image fields copied into volume_glance_metadata (upstream also copies properties).
_IMAGE_CORE = ("name", "checksum", "container_format", "disk_format", "min_disk",
               "min_ram", "size")
_IMAGE_SKIP = {"id", "name", "status", "visibility", "owner", "self", "file", "schema",
               "direct_url", "locations", "created_at", "updated_at", "tags", "protected",
               "os_hash_algo", "os_hash_value", "virtual_size", "checksum", "size",
               "container_format", "disk_format", "min_disk", "min_ram"}


class VolumeManager:
    """Manages the volumes of one backend."""

    def __init__(self, host: str, driver, db: Database, image_service, tracer):
        self.host = host                                     # "<host>@<backend>"
        self.driver = driver
        self.db = db
        self.image_service = image_service
        self.tracer = tracer
        self.faults = NO_FAULTS  # the deployment's, set by its builder

    @property
    def volume_host(self) -> str:
        """What a volume owned here records as ``host``: ``<host>@<backend>#<pool>``."""
        return f"{self.host}#{self.driver.backend_name}"

    @upstream(PATH, "VolumeManager.init_host")
    def init_host(self) -> None:
        """Check the backend; settle what a previous run of this host left half done.

        A create cut short cannot be resumed (the image copy is gone): ``error``,
        which the owner can delete. A delete cut short is finished now, as
        upstream's ``init_host`` does, instead of leaving ``deleting`` for good.
        """
        self.driver.check_for_setup_error()
        context = get_admin_context()
        for volume in db_api.volume_get_all(context=context, db=self.db, all_projects=True):
            if volume["host"] != self.volume_host:
                continue
            if volume["status"] in ("creating", "downloading"):
                LOG.warning("volume %s was %s when the service stopped: error", volume["id"],
                            volume["status"])
                db_api.volume_update(self.db, volume["id"], {"status": "error"})
            elif volume["status"] == "deleting":
                LOG.info("volume %s was being deleted when the service stopped: deleting it",
                         volume["id"])
                try:
                    self.delete_volume(context, volume["id"])
                except Exception:
                    LOG.exception("resuming the delete of volume %s failed", volume["id"])

    # Create -----------------------------------------------------------------------------

    @upstream(PATH, "VolumeManager.create_volume")
    def create_volume(self, context: RequestContext, volume_id: str,
                      request_spec: dict | None = None) -> None:
        request_spec = request_spec or {}
        # The cast may arrive while the database restarts: wait it out (bounded)
        # rather than leave the volume 'creating' with no host to finish it.
        claimed = retry.call(db_api.volume_conditional_update,
                             self.db, volume_id, {"host": self.volume_host},
                             {"status": "creating", "host": None})
        if not claimed:
            LOG.info("volume %s is gone or owned elsewhere: not creating it", volume_id)
            return
        volume = retry.call(db_api.volume_get, self.db, volume_id,
                            terminal=(exception.VolumeNotFound,))
        image_id = request_spec.get("image_id")
        action = (message.Action.COPY_IMAGE_TO_VOLUME if image_id
                  else message.Action.CREATE_VOLUME_FROM_BACKEND)
        try:
            if image_id:
                self._create_from_image_download(context, volume, image_id,
                                                 request_spec.get("image_meta") or {})
            else:
                self._create_raw_volume(context, volume)
        except Exception as exc:
            detail = (message.Detail.NOT_ENOUGH_SPACE_FOR_IMAGE
                      if isinstance(exc, exception.ImageUnacceptable)
                      else message.Detail.DRIVER_FAILED_CREATE)
            # The user message before the status: whoever sees "error" finds why.
            # Both retried: the failure may be the database's, and 'creating' is a
            # state no one can delete.
            retry.call(message.create, self.db, context, action, volume_id, detail)
            retry.call(db_api.volume_update, self.db, volume_id, {"status": "error"})
            raise
        retry.call(db_api.volume_update, self.db, volume_id,
                   {"status": "available", "launched_at": utcnow()})
        trace.get_current_span().set_attribute(attr.CINDER_VOLUME_STATUS, "available")

    @upstream(FLOW, "CreateVolumeFromSpecTask._create_raw_volume")
    def _create_raw_volume(self, context, volume: dict) -> None:
        if self.faults.active("volume-error", project_id=volume["project_id"]):
            # Where a backend refuses the create (a full pool, a lost cluster): the
            # driver's failure, handled as any other by create_volume.
            raise exception.VolumeBackendAPIException(
                data=f"the backend did not create volume {volume['id']} (fault "
                     "volume-error)")
        update = self.driver.create_volume(volume)
        if update:
            db_api.volume_update(self.db, volume["id"], update)

    @upstream(FLOW, "CreateVolumeFromSpecTask._create_from_image_download")
    def _create_from_image_download(self, context, volume: dict, image_id: str,
                                    image_meta: dict) -> None:
        """Create the image-sized volume, then copy the image in; undo the create on failure."""
        db_api.volume_update(self.db, volume["id"], {"status": "downloading"})
        self._create_raw_volume(context, volume)
        try:
            self.driver.copy_image_to_volume(context, volume, self.image_service, image_id,
                                             image_meta)
        except Exception:
            LOG.exception("copy of image %s to volume %s failed", image_id, volume["id"])
            try:
                self.driver.delete_volume(volume)
            except Exception:
                LOG.exception("cleanup of volume %s failed", volume["id"])
            raise
        self._handle_bootable_volume_glance_meta(context, volume, image_id, image_meta)

    @upstream(FLOW, "CreateVolumeFromSpecTask._handle_bootable_volume_glance_meta")
    def _handle_bootable_volume_glance_meta(self, context, volume: dict, image_id: str,
                                            image_meta: dict) -> None:
        """Mark the volume bootable and remember the image it came from."""
        db_api.volume_update(self.db, volume["id"], {"bootable": True})
        metadata = {"image_id": image_id}
        metadata.update({"image_name" if key == "name" else key: image_meta[key]
                         for key in _IMAGE_CORE if image_meta.get(key) is not None})
        metadata.update({key: value for key, value in image_meta.items()
                         if key not in _IMAGE_SKIP and isinstance(value, (str, int, float))})
        db_api.volume_glance_metadata_bulk_create(self.db, volume["id"], metadata)

    # Delete -----------------------------------------------------------------------------

    @upstream(PATH, "VolumeManager.delete_volume")
    def delete_volume(self, context: RequestContext, volume_id: str) -> None:
        try:
            volume = db_api.volume_get(self.db, volume_id)
        except exception.VolumeNotFound:
            LOG.info("volume %s already deleted", volume_id)
            return
        try:
            self.driver.delete_volume(volume)
        except Exception:
            db_api.volume_update(self.db, volume_id, {"status": "error_deleting"})
            raise
        db_api.volume_destroy(self.db, volume_id)

    # Snapshots --------------------------------------------------------------------------

    def _snapshot_for_driver(self, snapshot_id: str) -> dict:
        snapshot = retry.call(db_api.snapshot_get, self.db, snapshot_id,
                              terminal=(exception.SnapshotNotFound,))
        volume = db_api.volume_get(self.db, snapshot["volume_id"])
        return dict(snapshot, volume_name=volume["name"])

    @upstream(PATH, "VolumeManager.create_snapshot")
    def create_snapshot(self, context: RequestContext, snapshot_id: str) -> None:
        """The RBD snapshot, then ``available`` (``error`` and a user message if the
        backend fails, as upstream's)."""
        try:
            snapshot = self._snapshot_for_driver(snapshot_id)
        except (exception.SnapshotNotFound, exception.VolumeNotFound):
            LOG.info("snapshot %s is gone: not creating it", snapshot_id)
            return
        trace.get_current_span().set_attribute(attr.CINDER_VOLUME_ID, snapshot["volume_id"])
        try:
            self.driver.create_snapshot(snapshot)
        except Exception:
            retry.call(message.create, self.db, context, message.Action.SNAPSHOT_CREATE,
                       snapshot_id, message.Detail.SNAPSHOT_CREATE_ERROR,
                       resource_type=message.VOLUME_SNAPSHOT)
            retry.call(db_api.snapshot_update, self.db, snapshot_id, {"status": "error"})
            raise
        retry.call(db_api.snapshot_update, self.db, snapshot_id,
                   {"status": "available", "progress": "100%"})

    @upstream(PATH, "VolumeManager.delete_snapshot")
    def delete_snapshot(self, context: RequestContext, snapshot_id: str) -> None:
        try:
            snapshot = self._snapshot_for_driver(snapshot_id)
        except (exception.SnapshotNotFound, exception.VolumeNotFound):
            LOG.info("snapshot %s already deleted", snapshot_id)
            return
        try:
            self.driver.delete_snapshot(snapshot)
        except Exception:
            message.create(self.db, context, message.Action.SNAPSHOT_DELETE, snapshot_id,
                           message.Detail.SNAPSHOT_DELETE_ERROR,
                           resource_type=message.VOLUME_SNAPSHOT)
            db_api.snapshot_update(self.db, snapshot_id, {"status": "error_deleting"})
            raise
        db_api.snapshot_destroy(self.db, snapshot_id)

    # Attachments ------------------------------------------------------------------------

    @upstream(PATH, "VolumeManager._connection_create")
    def _connection_create(self, context, volume: dict, attachment: dict,
                           connector: dict) -> dict:
        """Ask the driver for the connection and flatten it as the attachments API stores it.

        The driver answers ``{"driver_volume_type": ..., "data": {...}}``; Cinder
        stores and returns ``data``'s keys with ``driver_volume_type`` beside them
        (Nova nests them again under ``data``).
        """
        try:
            self.driver.validate_connector(connector)
        except exception.InvalidConnectorException as exc:
            raise exception.InvalidInput(reason=str(exc)) from exc
        self.driver.create_export(context, volume, connector)
        try:
            conn_info = self.driver.initialize_connection(volume, connector)
        except Exception as exc:
            self.driver.remove_export(context, volume)
            raise exception.VolumeBackendAPIException(
                data=f"Driver initialize connection failed (error: {exc}).") from exc
        connection_info = dict(conn_info.pop("data", {}))
        connection_info.update(conn_info)
        db_api.volume_attachment_update(self.db, attachment["id"], {
            "attach_status": db_api.ATTACHING, "connector": connector})
        connection_info["attachment_id"] = attachment["id"]
        connection_info["enforce_multipath"] = connector.get("enforce_multipath", False)
        return connection_info

    @upstream(PATH, "VolumeManager.attachment_update")
    def attachment_update(self, context: RequestContext, volume_id: str, connector: dict,
                          attachment_id: str) -> dict:
        """Connect the volume for ``connector``; the volume and attachment turn attaching."""
        volume = db_api.volume_get(self.db, volume_id)
        attachment = db_api.volume_attachment_get(self.db, attachment_id)
        connector = dict(connector)
        mode = connector.get("mode", "rw")
        if attachment["attach_mode"] != "null":
            mode = connector["mode"] = attachment["attach_mode"]
        try:
            connection_info = self._connection_create(context, volume, attachment, connector)
        except Exception:
            message.create(self.db, context, message.Action.UPDATE_ATTACHMENT, volume_id)
            db_api.volume_attachment_update(self.db, attachment_id,
                                            {"attach_status": "error_attaching"})
            raise
        db_api.volume_attached(self.db, attachment_id, attachment["instance_uuid"],
                               connector.get("host", ""), connector.get("mountpoint", "na"),
                               mode, mark_attached=False)
        return connection_info

    @upstream(PATH, "VolumeManager.attachment_delete")
    def attachment_delete(self, context: RequestContext, attachment_id: str,
                          volume_id: str) -> None:
        """Tear down the backend side of a connection (the API then deletes the row)."""
        volume = db_api.volume_get(self.db, volume_id)
        attachment = db_api.volume_attachment_get(self.db, attachment_id)
        if not attachment["connector"]:
            return  # reserved only: no connection was ever made
        try:
            self.driver.terminate_connection(volume, attachment["connector"])
        except Exception as exc:
            raise exception.VolumeBackendAPIException(
                data=f"Terminate volume connection failed: {exc}") from exc
        try:
            self.driver.remove_export(context, volume)
        except Exception:
            LOG.warning("Failed to detach volume %s on the backend, ignoring", volume_id)
