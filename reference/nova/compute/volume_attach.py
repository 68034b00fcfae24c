"""Attaching and detaching a volume on a server that has a host (``nova/compute/manager.py``).

nova-api has already made the block device mapping and reserved the volume
(a Cinder attachment without a connector: the volume is ``reserved``), then
cast here. ``attach_volume`` does what upstream's ``DriverVolumeBlockDevice.attach``
does with the new attachment flow:

    attachment_update (this host's connector)  Cinder: attaching, answers connection_info
    driver.attach_volume                       libvirt: the rbd disk in the domain
    (mapping saved through the conductor)      connection_info, for the detach and reboots
    attachment_complete                        Cinder: in-use

``detach_volume`` is the reverse, after nova-api's ``begin_detaching``
(Cinder: ``detaching``): the disk out of the domain, ``attachment_delete``
(Cinder: ``available``), the mapping deleted. Each is recorded as the event
``compute_attach_volume`` / ``compute_detach_volume`` of the request's instance
action; a failure records a fault on the instance and gives the volume back.
"""

from __future__ import annotations

import logging

from novalab.reference.common import exception
from novalab.reference.nova.compute.shelve import wrap_instance_fault
from novalab.reference.nova.compute.utils import wrap_instance_event
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)
_MANAGER = "nova/compute/manager.py"
_BLOCK_DEVICE = "nova/virt/block_device.py"


class VolumeAttachMixin:
    """What ``ComputeManager`` gains; it uses the manager's ``driver``, ``conductor_api``,
    ``volume_api`` and the per-instance locks."""

    @upstream(_MANAGER, "ComputeManager.attach_volume")
    @wrap_instance_event(prefix="compute")
    @wrap_instance_fault
    def attach_volume(self, context, instance: dict, bdm: dict) -> None:
        """RPC endpoint (cast): attach the mapped volume; on failure the mapping goes."""
        with self._instance_locks[instance["uuid"]]:
            try:
                self._attach_volume(context, instance, bdm)
            except Exception:
                self._destroy_bdm(context, bdm)
                raise

    @upstream(_BLOCK_DEVICE, "DriverVolumeBlockDevice.attach")
    def _attach_volume(self, context, instance: dict, bdm: dict) -> None:
        volume_id, attachment_id = bdm["volume_id"], bdm["attachment_id"]
        self.volume_api.get(context, volume_id)
        connector = self.driver.get_volume_connector(instance)
        try:
            attachment = self.volume_api.attachment_update(context, attachment_id, connector,
                                                           bdm["device_name"])
            connection_info = dict(attachment["connection_info"])
            # The libvirt disk's <serial>: the guest sees the volume id (upstream's too).
            connection_info["serial"] = volume_id
            self.driver.attach_volume(context, connection_info, instance, bdm["device_name"])
        except Exception:
            LOG.exception("Failed to attach volume %s to %s", volume_id, instance["uuid"])
            self.volume_api.attachment_delete(context, attachment_id)
            raise
        self.conductor_api.block_device_mapping_update(
            context, bdm["id"], {"connection_info": connection_info})
        self.volume_api.attachment_complete(context, attachment_id)

    @upstream(_MANAGER, "ComputeManager.detach_volume")
    @wrap_instance_event(prefix="compute")
    @wrap_instance_fault
    def detach_volume(self, context, instance: dict, volume_id: str,
                      attachment_id: str | None = None) -> None:
        """RPC endpoint (cast): unplug the volume, detach it in Cinder, drop the mapping."""
        with self._instance_locks[instance["uuid"]]:
            bdms = self.conductor_api.block_device_mapping_get_all_by_instance(
                context, instance["uuid"])
            bdm = next((b for b in bdms if b.get("volume_id") == volume_id), None)
            if bdm is None:
                raise exception.NotFound(f"No volume Block Device Mapping with id "
                                         f"{volume_id}.")  # upstream's VolumeBDMNotFound
            self._detach_volume(context, instance, bdm)

    @upstream(_MANAGER, "ComputeManager._detach_volume")
    def _detach_volume(self, context, instance: dict, bdm: dict) -> None:
        try:
            if bdm.get("connection_info"):
                self.driver.detach_volume(context, bdm["connection_info"], instance,
                                          bdm["device_name"])
        except Exception:
            LOG.exception("Failed to detach volume %s from %s", bdm["volume_id"],
                          instance["uuid"])
            self.volume_api.roll_detaching(context, bdm["volume_id"])  # in-use again
            raise
        if bdm.get("attachment_id"):
            self.volume_api.attachment_delete(context, bdm["attachment_id"])
        self._destroy_bdm(context, bdm)

    def _destroy_bdm(self, context, bdm: dict) -> None:
        """``BlockDeviceMapping.destroy`` through the conductor: novalab's rows are soft
        deleted (``deleted`` = the row's id, as every other soft delete here)."""
        try:
            self.conductor_api.block_device_mapping_update(context, bdm["id"],
                                                           {"deleted": bdm["id"]})
        except Exception:
            LOG.exception("Could not delete block device mapping %s", bdm["id"])
