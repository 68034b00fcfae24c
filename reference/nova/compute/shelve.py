"""nova-compute's snapshot, shelve, offload, unshelve and start (``nova/compute/manager.py``).

Upstream these are methods of ``ComputeManager``; novalab keeps them in this
mixin so the build stays readable in ``manager.py``. Each arrives as a cast on
``compute.<host>`` and runs in the RPC worker, serialised per instance with the
build and the delete, as upstream's ``@utils.synchronized(instance.uuid)``:

    snapshot_instance        image_snapshot -> image_pending_upload -> image_uploading -> None
    shelve_instance          shelving -> shelving_image_pending_upload
                             -> shelving_image_uploading -> SHELVED (None)
      _shelve_offload_instance   (at once: shelved_offload_time 0)
                             shelving_offloading -> SHELVED_OFFLOADED, no host
    shelve_offload_instance  the same, for a SHELVED server (``shelveOffload``)
    unshelve_instance        unshelving -> spawning -> ACTIVE on the host the scheduler chose
    start_instance           powering-on -> ACTIVE (unshelve of a SHELVED server)

Each is an event of the request's instance action (``compute_shelve_instance``...,
``@wrap_instance_event``); a failure records a fault (``@wrap_instance_fault``),
puts the task state back to None (``@reverts_task_state``) and, for a snapshot,
deletes the image nobody will fill (``@delete_image_on_error``).

Offloading keeps what a server is, and gives back where it was: its ports stay
(unbound from the host, so its addresses stay too), its volumes stay reserved
for it (their connections to the host are replaced by a bare reservation), its
disk lives on as the shelved image. Unshelving binds the ports to the new host,
connects the volumes for it and spawns from that image through the same image
fetch as a boot, then deletes the image.
"""

from __future__ import annotations

import configparser
import functools
import inspect
import logging
import traceback
from pathlib import Path

from novalab.reference.common import exception
from novalab.reference.common.db import utcnow
from novalab.reference.nova import exception as nova_exception
from novalab.reference.nova.compute import power_state, task_states, vm_states
from novalab.reference.nova.compute.utils import wrap_instance_event
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)
_MANAGER = "nova/compute/manager.py"
# [DEFAULT] shutdown_timeout: seconds a guest gets to shut down cleanly before it is
# destroyed. Upstream's default is 60; novalab's guests run no operating system that
# could need that long (the test hypervisor's stop at once), so 10.
SHUTDOWN_TIMEOUT = 10
SHUTDOWN_RETRY_INTERVAL = 10
SHELVED_KEYS = ("shelved_at", "shelved_image_id", "shelved_host")
# The shelve task states the driver's snapshot steps stand for (upstream's
# shelving_state_map in _shelve_instance).
_SHELVING_STATE_MAP = {task_states.IMAGE_PENDING_UPLOAD: task_states.SHELVING_IMAGE_PENDING_UPLOAD,
                       task_states.IMAGE_UPLOADING: task_states.SHELVING_IMAGE_UPLOADING,
                       task_states.SHELVING: task_states.SHELVING}


def shelved_offload_time(conf_path: Path) -> int:
    """``[DEFAULT] shelved_offload_time`` of ``STATE_DIR/nova.conf``, read as nova-compute
    starts: 0 (the default, upstream's too) offloads a shelved server at once, -1 never."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read(conf_path, encoding="utf-8")
        return parser.getint("DEFAULT", "shelved_offload_time", fallback=0)
    except (configparser.Error, ValueError) as exc:
        LOG.warning("%s: shelved_offload_time unreadable (%s); using 0", conf_path, exc)
        return 0


def _instance_arg(function, self, context, args, kwargs) -> dict:
    return inspect.signature(function).bind(self, context, *args, **kwargs).arguments["instance"]


def reverts_task_state(function):
    """On failure, save task_state None, unless another task took the instance over."""

    @functools.wraps(function)
    def decorated(self, context, *args, **kwargs):
        try:
            return function(self, context, *args, **kwargs)
        except exception.UnexpectedTaskStateError as exc:
            LOG.info("Task possibly preempted: %s", exc.format_message())
            raise
        except Exception:
            instance = _instance_arg(function, self, context, args, kwargs)
            try:
                self.conductor_api.instance_update(context, instance["uuid"],
                                                   {"task_state": None})
            except Exception as exc:  # the original failure is the one to report
                LOG.warning("Failed to revert task state of %s: %s", instance["uuid"], exc)
            raise

    return decorated


def wrap_instance_fault(function):
    """On failure, record a fault on the instance (what ``server show`` shows in ERROR)."""

    @functools.wraps(function)
    def decorated(self, context, *args, **kwargs):
        try:
            return function(self, context, *args, **kwargs)
        except exception.InstanceNotFound:
            raise
        except Exception as exc:
            instance = _instance_arg(function, self, context, args, kwargs)
            try:
                self.conductor_api.instance_fault_create(context, {
                    "instance_uuid": instance["uuid"], "code": getattr(exc, "code", 500),
                    "message": str(exc) or type(exc).__name__, "host": self.host,
                    "details": "".join(traceback.format_exception(exc))[-4000:]})
            except Exception as fault_exc:
                LOG.warning("Could not record the fault of %s: %s", instance["uuid"],
                            fault_exc)
            raise

    return decorated


def delete_image_on_error(function):
    """A snapshot that failed deletes the image nova-api made for it."""

    @functools.wraps(function)
    def decorated(self, context, image_id, instance, *args, **kwargs):
        try:
            return function(self, context, image_id, instance, *args, **kwargs)
        except Exception:
            self._delete_image(context, image_id)
            raise

    return decorated


class ShelveMixin:
    """What ``ComputeManager`` gains; it uses the manager's ``driver``, ``conductor_api``,
    ``network_api``, ``volume_api``, ``host`` and ``nodename``."""

    image_api = None  # nova's Glance client: snapshots upload through it, unshelve deletes
    # [DEFAULT] shelved_offload_time: 0 offloads a shelved server at once, -1 never.
    shelved_offload_time = 0

    # Snapshot (createImage) ----------------------------------------------------------

    @upstream(_MANAGER, "ComputeManager.snapshot_instance")
    @reverts_task_state
    @wrap_instance_event(prefix="compute")
    @wrap_instance_fault
    @delete_image_on_error
    def snapshot_instance(self, context, image_id: str, instance: dict) -> None:
        """RPC endpoint (cast): snapshot a server into the image nova-api created."""
        try:
            instance = self._instance_update(context, instance,
                                             expected=task_states.IMAGE_SNAPSHOT_PENDING,
                                             task_state=task_states.IMAGE_SNAPSHOT)
        except (exception.InstanceNotFound, exception.UnexpectedTaskStateError) as exc:
            gone = isinstance(exc, exception.InstanceNotFound) or \
                exc.kwargs.get("actual") == task_states.DELETING
            if not gone:
                raise
            LOG.debug("Instance %s is gone or being deleted: no snapshot", instance["uuid"])
            self._delete_image(context, image_id)
            return
        with self._instance_locks[instance["uuid"]]:
            self._snapshot_instance(context, image_id, instance, task_states.IMAGE_SNAPSHOT)

    @upstream(_MANAGER, "ComputeManager._snapshot_instance")
    def _snapshot_instance(self, context, image_id: str, instance: dict,
                           expected_task_state: str) -> None:
        instance = self._instance_update(context, instance, expected=expected_task_state,
                                         power_state=self._get_power_state(instance))
        if instance["power_state"] != power_state.RUNNING:
            LOG.warning("trying to snapshot a non-running instance %s", instance["uuid"])
        states = {"instance": instance}

        def update_task_state(task_state, expected_state=expected_task_state):
            states["instance"] = self._instance_update(context, states["instance"],
                                                       expected=expected_state,
                                                       task_state=task_state)

        try:
            self.driver.snapshot(context, instance, image_id, update_task_state)
            self._instance_update(context, states["instance"],
                                  expected=task_states.IMAGE_UPLOADING, task_state=None)
        except (exception.InstanceNotFound, nova_exception.InstanceNotRunning,
                exception.UnexpectedDeletingTaskStateError):
            LOG.debug("Instance %s disappeared during snapshot", instance["uuid"])
            self._delete_image(context, image_id)

    # Shelve ------------------------------------------------------------------------------

    @upstream(_MANAGER, "ComputeManager.shelve_instance")
    @reverts_task_state
    @wrap_instance_event(prefix="compute")
    @wrap_instance_fault
    def shelve_instance(self, context, instance: dict, image_id: str,
                        clean_shutdown: bool = True) -> None:
        """RPC endpoint (cast): power off, snapshot to ``image_id``, SHELVED (and offload)."""
        with self._instance_locks[instance["uuid"]]:
            self._shelve_instance(context, instance, image_id, clean_shutdown)

    @upstream(_MANAGER, "ComputeManager._shelve_instance")
    def _shelve_instance(self, context, instance: dict, image_id: str,
                         clean_shutdown: bool) -> None:
        """``shelved_offload_time`` 0 (upstream's default and novalab's) offloads at once;
        -1 never. Upstream's periodic task offloads after a positive time; novalab has
        no such task, so a positive time also means never."""
        offload = self.shelved_offload_time == 0
        states = {"instance": instance}

        def update_task_state(task_state, expected_state=task_states.SHELVING):
            states["instance"] = self._instance_update(
                context, states["instance"], expected=_SHELVING_STATE_MAP[expected_state],
                task_state=_SHELVING_STATE_MAP[task_state])

        if instance["power_state"] == power_state.PAUSED:
            clean_shutdown = False  # a paused guest cannot answer the power button
        self._power_off_instance(context, instance, clean_shutdown)
        self.driver.snapshot(context, instance, image_id, update_task_state)
        system_metadata = dict(instance.get("system_metadata") or {},
                               shelved_at=utcnow().isoformat(), shelved_image_id=image_id,
                               shelved_host=self.host)
        instance = self._instance_update(
            context, states["instance"],
            expected=[task_states.SHELVING, task_states.SHELVING_IMAGE_UPLOADING],
            system_metadata=system_metadata, vm_state=vm_states.SHELVED,
            task_state=task_states.SHELVING_OFFLOADING if offload else None,
            power_state=self._get_power_state(instance))
        if offload:
            self._shelve_offload_instance(context, instance, clean_shutdown=False)

    @upstream(_MANAGER, "ComputeManager.shelve_offload_instance")
    @reverts_task_state
    @wrap_instance_event(prefix="compute")
    @wrap_instance_fault
    def shelve_offload_instance(self, context, instance: dict,
                                clean_shutdown: bool = True) -> None:
        """RPC endpoint (cast): remove a shelved (or volume-backed, shelving) server from
        this host."""
        with self._instance_locks[instance["uuid"]]:
            self._shelve_offload_instance(context, instance, clean_shutdown)

    @upstream(_MANAGER, "ComputeManager._shelve_offload_instance")
    def _shelve_offload_instance(self, context, instance: dict, clean_shutdown: bool) -> None:
        bdms = self.conductor_api.block_device_mapping_get_all_by_instance(context,
                                                                            instance["uuid"])
        self._power_off_instance(context, instance, clean_shutdown)
        current_power_state = self._get_power_state(instance)
        network_info = []
        if self.network_api is not None:
            network_info = self.network_api.get_instance_nw_info(context, instance)
            self.network_api.unbind_ports(context, [vif["id"] for vif in network_info],
                                          detach=False)
        self.driver.destroy(context, instance, network_info,
                            self._get_instance_block_device_info(bdms))
        self._terminate_volume_connections(context, instance, bdms)
        # The host holds nothing for it now: neither does placement (modern topology;
        # upstream's ``delete_allocation_for_shelve_offloaded_instance``). As upstream,
        # before SHELVED_OFFLOADED is saved: whoever polls for that state and then boots
        # or unshelves finds the resources free. Unshelve claims again wherever the
        # scheduler puts it.
        self._delete_allocation_for_instance(context, instance)
        instance = self._instance_update(
            context, instance, expected=[task_states.SHELVING, task_states.SHELVING_OFFLOADING],
            power_state=current_power_state, vm_state=vm_states.SHELVED_OFFLOADED,
            task_state=None)
        # As upstream, a second save: no RPC may reach this instance through a host now.
        self._instance_update(context, instance, expected=None, host=None, node=None)

    # Unshelve ----------------------------------------------------------------------------

    @upstream(_MANAGER, "ComputeManager.unshelve_instance")
    @reverts_task_state
    @wrap_instance_event(prefix="compute")
    @wrap_instance_fault
    def unshelve_instance(self, context, instance: dict, image: dict | None,
                          filter_properties: dict | None, node: str | None,
                          request_spec: dict) -> None:
        """RPC endpoint (cast): spawn a SHELVED_OFFLOADED server on this host."""
        with self._instance_locks[instance["uuid"]]:
            self._unshelve_instance(context, instance, image, filter_properties or {}, node,
                                    request_spec)

    @upstream(_MANAGER, "ComputeManager._unshelve_instance")
    def _unshelve_instance(self, context, instance: dict, image: dict | None,
                           filter_properties: dict, node: str | None,
                           request_spec: dict) -> None:
        """Spawn from the shelved image (``image``; None for a volume-backed server).

        Saving the host and node is what upstream's resource claim on this host
        (``rt.instance_claim``) does; on failure they are cleared again, the ports
        unbound and the volumes only reserved, as before.
        """
        bdms = self.conductor_api.block_device_mapping_get_all_by_instance(context,
                                                                            instance["uuid"])
        instance = self._instance_update(context, instance, expected=task_states.UNSHELVING,
                                         task_state=task_states.SPAWNING, host=self.host,
                                         node=node or self.nodename)
        try:
            block_device_info = self._prep_block_device(context, instance)
            network_info = []
            if self.network_api is not None:
                self.network_api.setup_instance_network_on_host(context, instance, self.host)
                network_info = self.network_api.get_instance_nw_info(context, instance)
                self.conductor_api.instance_info_cache_update(context, instance["uuid"],
                                                              network_info)
            # The guest boots from the shelved image; the instance keeps its own image.
            spawned = dict(instance, image_ref=image["id"]) if image else instance
            self.driver.spawn(context, spawned, image or {}, injected_files=[],
                              admin_password=None, allocations={},
                              network_info=network_info, block_device_info=block_device_info)
        except Exception:
            LOG.exception("Instance %s failed to spawn", instance["uuid"])
            self._undo_unshelve(context, instance, bdms)
            raise
        if image:
            self._delete_snapshot_of_shelved_instance(context, instance, image["id"])
        system_metadata = {k: v for k, v in (instance.get("system_metadata") or {}).items()
                           if k not in SHELVED_KEYS}
        self._instance_update(context, instance, expected=task_states.SPAWNING,
                              power_state=self._get_power_state(instance),
                              vm_state=vm_states.ACTIVE, task_state=None,
                              launched_at=utcnow(), system_metadata=system_metadata)

    def _undo_unshelve(self, context, instance: dict, bdms: list[dict]) -> None:
        """Leave the server as offloaded as it was. Upstream unbinds no port here
        (a FIXME in ``_unshelve_instance``); novalab does, so none stays bound to a
        host that has no guest for it."""
        try:
            if self.network_api is not None:
                network_info = self.network_api.get_instance_nw_info(context, instance)
                self.network_api.unbind_ports(context, [v["id"] for v in network_info],
                                              detach=False)
            bdms = self.conductor_api.block_device_mapping_get_all_by_instance(
                context, instance["uuid"])
            self._terminate_volume_connections(context, instance, bdms)
            self.conductor_api.instance_update(context, instance["uuid"],
                                               {"host": None, "node": None})
        except Exception:
            LOG.exception("Could not undo the unshelve of %s", instance["uuid"])

    @upstream(_MANAGER, "ComputeManager.start_instance")
    @reverts_task_state
    @wrap_instance_event(prefix="compute")
    @wrap_instance_fault
    def start_instance(self, context, instance: dict) -> None:
        """RPC endpoint (cast): power on a stopped guest; for a SHELVED server, the
        unshelve (its shelved image is no longer needed)."""
        with self._instance_locks[instance["uuid"]]:
            self.driver.power_on(context, instance, None)
            snapshot_id = (instance.get("system_metadata") or {}).get("shelved_image_id")
            if snapshot_id:
                self._delete_snapshot_of_shelved_instance(context, instance, snapshot_id)
            system_metadata = {k: v for k, v in (instance.get("system_metadata") or {}).items()
                               if k not in SHELVED_KEYS}
            self._instance_update(context, instance, expected=task_states.POWERING_ON,
                                  power_state=self._get_power_state(instance),
                                  vm_state=vm_states.ACTIVE, task_state=None,
                                  system_metadata=system_metadata)

    # Helpers -----------------------------------------------------------------------------

    @upstream(_MANAGER, "ComputeManager._power_off_instance")
    def _power_off_instance(self, context, instance: dict, clean_shutdown: bool = True) -> None:
        timeout, retry_interval = (SHUTDOWN_TIMEOUT, SHUTDOWN_RETRY_INTERVAL) \
            if clean_shutdown else (0, 0)
        self.driver.power_off(instance, timeout, retry_interval)

    @staticmethod
    def _get_instance_block_device_info(bdms: list[dict]) -> dict:
        """The driver's view of the volumes, from the mappings (as ``_prep_block_device``'s)."""
        return {"block_device_mapping": [
            {"connection_info": b["connection_info"], "mount_device": b.get("device_name"),
             "attachment_id": b.get("attachment_id")}
            for b in bdms if b["destination_type"] == "volume" and b.get("connection_info")]}

    @upstream(_MANAGER, "ComputeManager._terminate_volume_connections")
    def _terminate_volume_connections(self, context, instance: dict, bdms: list[dict]) -> None:
        """Swap each volume's attachment for a bare reservation: the connection to this
        host goes (Cinder has no disconnect, only delete), the volume stays the server's."""
        for bdm in bdms:
            if bdm["destination_type"] != "volume" or not bdm.get("attachment_id"):
                continue
            attachment_id = self.volume_api.attachment_create(context, bdm["volume_id"],
                                                              instance["uuid"])["id"]
            self.volume_api.attachment_delete(context, bdm["attachment_id"])
            self.conductor_api.block_device_mapping_update(
                context, bdm["id"], {"attachment_id": attachment_id, "connection_info": None})

    @upstream(_MANAGER, "ComputeManager._delete_snapshot_of_shelved_instance")
    def _delete_snapshot_of_shelved_instance(self, context, instance: dict,
                                             snapshot_id: str) -> None:
        try:
            self.image_api.delete(context, snapshot_id)
        except (exception.ImageNotFound, exception.Forbidden) as exc:
            LOG.warning("Failed to delete snapshot from shelved instance %s (%s).",
                        instance["uuid"], exc.format_message())
        except Exception:
            LOG.exception("Something wrong happened when trying to delete snapshot from "
                          "shelved instance %s.", instance["uuid"])

    def _delete_image(self, context, image_id: str) -> None:
        """``compute_utils.delete_image``: a snapshot's image nobody will fill."""
        try:
            self.image_api.delete(context, image_id)
        except exception.ImageNotFound:
            pass
        except Exception:
            LOG.exception("Could not delete image %s", image_id)
