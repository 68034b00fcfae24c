"""The compute service (``nova/compute/manager.py``): builds instances on one host.

``build_and_run_instance`` arrives as a cast on ``compute.<host>``. Like Nova it
returns at once and builds on a worker thread (``_do_build_and_run_instance``),
serialised per instance with ``terminate_instance``. The build walks Nova's
seams and states:

    _do_build_and_run_instance     vm_state building, task_state None
      (event compute__do_build_and_run_instance starts)
      _build_and_run_instance
        _build_resources           task_state networking -> block_device_mapping
        driver.spawn               task_state spawning
      (event finishes: Success or Error)
      (saved)                      vm_state active, power_state from the hypervisor

Every read and save of the instance is an RPC call to the conductor: compute
hosts never open the database. Any failure ends the instance in ERROR with a
fault, so it never stays in BUILD. Builds and deletes are recorded as events of
the request's instance action (``openstack server event show``), also through
the conductor; see ``nova/compute/utils.py``. Snapshots, shelve, offload,
unshelve and start are in ``shelve.py``, a mixin of this class.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import traceback
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as futures_wait

from opentelemetry import context as otel_context
from opentelemetry import trace

from novalab.reference.common import exception, retry
from novalab.reference.common.context import get_admin_context
from novalab.reference.common.db import utcnow
from novalab.reference.common.faults import NO_FAULTS
from novalab.reference.nova.compute import power_state, task_states, vm_states
from novalab.reference.nova.compute.instance_events import ComputeVirtAPI, InstanceEvents
from novalab.reference.nova.compute.power import PowerMixin
from novalab.reference.nova.compute.shelve import ShelveMixin
from novalab.reference.nova.compute.utils import (  # noqa: F401 (compute_node_uuid: tests)
    EventReporter,
    compute_node_uuid,
    wrap_instance_event,
)
from novalab.reference.nova.compute.volume_attach import VolumeAttachMixin
from novalab.reference.nova.conductor.rpcapi import ConductorAPI
from novalab.tracing import attributes as attr
from novalab.tracing.spans import code_attributes, set_instance_attributes, upstream

LOG = logging.getLogger(__name__)
_MANAGER = "nova/compute/manager.py"
REPORT_INTERVAL = 10.0
# The event upstream's @wrap_instance_event(prefix="compute") names after the method.
BUILD_EVENT = "compute__do_build_and_run_instance"
CRASH_EXIT_STATUS = 70  # the compute-crash fault's exit status (EX_SOFTWARE)


def _crash() -> None:
    """Die now, as a segfault or the OOM killer would: no clean-up, no flush."""
    logging.shutdown()  # the log line saying why is worth keeping
    os._exit(CRASH_EXIT_STATUS)


# [DEFAULT] reserved_host_memory_mb: what the host keeps for itself (upstream's default).
RESERVED_HOST_MEMORY_MB = 512


def blank_volume_name(instance: dict) -> str:
    """What Nova names a blank volume it creates for an instance (``virt/block_device.py``)."""
    return f"{instance['uuid']}-blank-vol"


class ComputeManager(ShelveMixin, VolumeAttachMixin, PowerMixin):
    def __init__(self, host: str, driver, conductor_api: ConductorAPI, tracer, *,
                 nodename: str | None = None, max_concurrent_builds: int = 10,
                 report_interval: float = REPORT_INTERVAL, network_api=None,
                 volume_api=None, faults=NO_FAULTS, reportclient=None):
        self.host = host
        self.nodename = nodename or host
        self.driver = driver
        self.conductor_api = conductor_api
        self.network_api = network_api
        self.volume_api = volume_api
        # Placement's client, in the modern topology: the node is a resource provider.
        self.reportclient = reportclient
        self.faults = faults
        self.tracer = tracer
        self.instance_events = InstanceEvents()
        self.virtapi = ComputeVirtAPI(self.instance_events, tracer)
        driver.virtapi = self.virtapi
        self.report_interval = report_interval
        self.service: dict | None = None
        self._builds = ThreadPoolExecutor(max_workers=max_concurrent_builds,
                                          thread_name_prefix=f"{host}-build")
        self._instance_locks: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None
        self._inflight: set = set()
        self._inflight_lock = threading.Lock()

    # Start-up and periodic work ------------------------------------------------------

    @upstream(_MANAGER, "ComputeManager.init_host")
    def init_host(self) -> None:
        """Connect the hypervisor, register the service and node, recover stale builds."""
        context = get_admin_context()
        self.driver.init_host(self.host)
        self.service = self.conductor_api.service_get_or_create(
            context, self.host, "nova-compute", "compute")
        for instance in self.conductor_api.instance_get_all_by_host(context, self.host):
            self._init_instance(context, instance)
        self.update_available_resource(context)

    def _init_instance(self, context, instance: dict) -> None:
        """An instance left in BUILD by a crash of this service can only go to ERROR."""
        if instance["vm_state"] == vm_states.BUILDING:
            LOG.warning("Instance %s was building when %s restarted: setting ERROR",
                        instance["uuid"], self.host)
            self._set_instance_error_state(
                context, instance,
                exception.BuildAbortException(instance_uuid=instance["uuid"],
                                              reason="nova-compute restarted during the build"))

    @upstream(_MANAGER, "ComputeManager.update_available_resource")
    def update_available_resource(self, context=None) -> dict:
        """Report this node's capacity (the resource tracker's job) through the conductor."""
        context = context or get_admin_context()
        resources = self.driver.get_available_resource(self.nodename)
        values = {"host": self.host, "hypervisor_hostname": self.nodename}
        for key in ("vcpus", "memory_mb", "local_gb", "hypervisor_type",
                    "hypervisor_version", "cpu_info", "supported_instances"):
            values[key] = resources[key]
        values.update(self._usage_from_instances(context))
        node = self.conductor_api.compute_node_update(context, values)
        if self.reportclient is not None:
            self._update_to_placement(context, node)
        return node

    @upstream("nova/compute/resource_tracker.py", "ResourceTracker._update_to_placement")
    def _update_to_placement(self, context, node: dict) -> None:
        """The node as a resource provider with its inventory, as the libvirt driver's
        ``update_provider_tree`` describes it (reserved memory: ``reserved_host_memory_mb``)."""
        provider = self.reportclient._ensure_resource_provider(
            context, compute_node_uuid(node["hypervisor_hostname"]), node["hypervisor_hostname"])

        def inventory(total: int, ratio: float, reserved: int = 0) -> dict:
            return {"total": total, "reserved": reserved, "min_unit": 1,
                    "max_unit": max(total, 1), "step_size": 1, "allocation_ratio": ratio}

        self.reportclient.set_inventory_for_provider(context, provider["uuid"], {
            "VCPU": inventory(node["vcpus"], node["cpu_allocation_ratio"]),
            "MEMORY_MB": inventory(node["memory_mb"], node["ram_allocation_ratio"],
                                   RESERVED_HOST_MEMORY_MB),
            "DISK_GB": inventory(node["local_gb"], node["disk_allocation_ratio"])})

    @upstream("nova/compute/resource_tracker.py", "ResourceTracker._update_usage_from_instances")
    def _usage_from_instances(self, context) -> dict:
        """What the instances on this host use, as the resource tracker counts it (not
        what libvirt's domains hold): each one's flavor, plus the memory reserved for
        the host itself (``reserved_host_memory_mb``); ``running_vms`` is their number."""
        instances = [i for i in self.conductor_api.instance_get_all_by_host(context, self.host)
                     if i["vm_state"] not in (vm_states.DELETED, vm_states.SHELVED_OFFLOADED)]
        return {"vcpus_used": sum(i["vcpus"] for i in instances),
                "memory_mb_used": RESERVED_HOST_MEMORY_MB + sum(i["memory_mb"]
                                                               for i in instances),
                "local_gb_used": sum(i["root_gb"] + (i["ephemeral_gb"] or 0)
                                     for i in instances),
                "running_vms": len(instances)}

    @upstream("nova/compute/resource_tracker.py", "ResourceTracker._update")
    def _update_usage(self, context) -> None:
        """The node's usage saved again after an instance came or went (the tracker's
        ``instance_claim`` and ``update_usage``): what ``hypervisor show`` reads."""
        try:
            self.conductor_api.compute_node_update(context, {
                "host": self.host, "hypervisor_hostname": self.nodename,
                **self._usage_from_instances(context)})
        except Exception:  # the next claim or restart corrects it; the build goes on
            LOG.exception("%s: could not update the compute node's usage", self.host)

    def report_state(self) -> None:
        """One heartbeat: the scheduler's ComputeFilter trusts hosts that report."""
        if self.service is not None:
            self.conductor_api.service_report(get_admin_context(), self.service["id"])

    def start_heartbeat(self) -> None:
        def loop():
            while not self._stop.wait(self.report_interval):
                try:
                    self.report_state()
                except Exception:  # keep beating; the next report may get through
                    LOG.exception("%s: heartbeat failed", self.host)

        self._heartbeat = threading.Thread(target=loop, name=f"{self.host}-heartbeat",
                                           daemon=True)
        self._heartbeat.start()

    def stop(self) -> None:
        """Stop: builds waiting for an event fail now (``cleanup_host``), the rest finish."""
        self._stop.set()
        self.instance_events.cancel_all_events()
        self._builds.shutdown(wait=True, cancel_futures=False)

    # Build ---------------------------------------------------------------------------

    @upstream(_MANAGER, "ComputeManager.build_and_run_instance")
    def build_and_run_instance(self, context, instance: dict, image: dict, request_spec: dict,
                               filter_properties: dict, requested_networks=None,
                               block_device_mapping=None, node=None, limits=None) -> None:
        """RPC endpoint (cast): start the build on a worker thread and return."""
        if self.faults.active("compute-crash", project_id=instance.get("project_id"),
                              server=instance.get("display_name")):
            # The request was acked when it was taken off the queue: it dies with us.
            LOG.critical("fault compute-crash: %s dies with build_and_run_instance of %s",
                         self.host, instance["uuid"])
            _crash()
            return  # only where _crash is replaced (tests)
        parent = otel_context.get_current()

        def _locked_do_build_and_run_instance():
            token = otel_context.attach(parent)
            try:
                with self._instance_locks[instance["uuid"]]:
                    self._do_build_and_run_instance(context, instance, image, request_spec,
                                                    filter_properties, requested_networks,
                                                    block_device_mapping, node, limits)
            except Exception:
                LOG.exception("Build of %s failed unexpectedly", instance["uuid"])
            finally:
                otel_context.detach(token)

        future = self._builds.submit(_locked_do_build_and_run_instance)
        with self._inflight_lock:
            self._inflight.add(future)
        future.add_done_callback(self._build_done)

    def _build_done(self, future) -> None:
        with self._inflight_lock:
            self._inflight.discard(future)

    def wait_for_builds(self, timeout: float = 30.0) -> bool:
        """Block until no build runs on this host (used before writing a trace)."""
        with self._inflight_lock:
            pending = list(self._inflight)
        done, not_done = futures_wait(pending, timeout=timeout)
        return not not_done

    @upstream(_MANAGER, "ComputeManager._do_build_and_run_instance")
    def _do_build_and_run_instance(self, context, instance, image, request_spec,
                                   filter_properties, requested_networks,
                                   block_device_mapping, node, limits) -> None:
        """Build, recorded as the event ``compute__do_build_and_run_instance``.

        Upstream decorates this whole method with ``@wrap_instance_event``. Here the
        event opens once the instance is read (steps 14-18) and closes before the
        final ACTIVE or ERROR save, so a client that sees the final state finds the
        event finished with its result, as it finds the fault (docs/decisions.md).
        """
        # Steps 14-18: fetch the instance through the conductor.
        # A database or broker restart is waited out here (bounded): the build has
        # changed nothing yet, and giving up would leave the instance in BUILD.
        deleted = (exception.InstanceNotFound, exception.UnexpectedTaskStateError)
        try:
            instance = retry.call(self.conductor_api.instance_get_by_uuid, context,
                                  instance["uuid"], terminal=deleted)
            # The resource tracker's claim records this host and node on the
            # instance (``_set_instance_host_and_node``): in the modern topology
            # nothing has yet, the classic scheduler saved the same values.
            instance = retry.call(self._instance_update, context, instance,
                                  expected=(task_states.SCHEDULING, None),
                                  vm_state=vm_states.BUILDING, task_state=None,
                                  host=self.host, node=node or self.nodename,
                                  terminal=deleted)
        except deleted:
            LOG.info("Instance %s was deleted before its build started", instance["uuid"])
            return
        except Exception as exc:
            LOG.warning("Build of instance %s could not start: %s", instance["uuid"], exc)
            self._set_instance_error_state(context, instance, exc)
            return
        self._update_usage(context)  # the claim: this host now holds the instance
        try:
            with EventReporter(context, self.conductor_api, BUILD_EVENT, self.host,
                               instance["uuid"]):
                instance = self._build_and_run_instance(context, instance, image,
                                                        requested_networks,
                                                        block_device_mapping)
            # Steps 45-47: save the running instance through the conductor.
            self._instance_update(context, instance, expected=task_states.SPAWNING,
                                  power_state=self._get_power_state(instance),
                                  vm_state=vm_states.ACTIVE, task_state=None,
                                  launched_at=utcnow())
        except (exception.InstanceNotFound, exception.UnexpectedTaskStateError):
            LOG.info("Instance %s was deleted during its build", instance["uuid"])
            self._cleanup_guest(context, instance)
        except Exception as exc:
            LOG.warning("Build of instance %s failed: %s", instance["uuid"], exc)
            self._cleanup_guest(context, instance)
            self._set_instance_error_state(context, instance, exc)
            # Upstream's FAILED build result: the host holds nothing for it any more.
            self._delete_allocation_for_instance(context, instance)

    def _delete_allocation_for_instance(self, context, instance: dict) -> None:
        """Give the instance's claim in placement back (the modern topology only)."""
        if self.reportclient is None:
            return
        try:
            self.reportclient.delete_allocation_for_instance(context, instance["uuid"])
        except Exception:  # the periodic heal upstream would catch it; log and go on
            LOG.exception("Could not delete the allocations of %s", instance["uuid"])

    @upstream(_MANAGER, "ComputeManager._build_and_run_instance")
    def _build_and_run_instance(self, context, instance, image, requested_networks,
                                block_device_mapping) -> dict:
        """Ports, volumes, then the guest; returns the instance as last saved (spawning)."""
        with self._build_resources(context, instance, requested_networks,
                                   block_device_mapping) as resources:
            instance = self._instance_update(context, instance,
                                             expected=task_states.BLOCK_DEVICE_MAPPING,
                                             task_state=task_states.SPAWNING)
            self.driver.spawn(context, instance, image, injected_files=[],
                              admin_password=None, allocations={},
                              network_info=resources["network_info"],
                              block_device_info=resources["block_device_info"])
        return instance

    @contextlib.contextmanager
    def _build_resources(self, context, instance, requested_networks, block_device_mapping):
        """Prepare what the guest needs (ports, volumes), and undo it if the build fails.

        As in Nova, each failure is named after its hop: "Failed to allocate the
        network(s)", "Failure prepping block device"; anything allocated before
        the failure is released again.
        """
        with self.tracer.start_as_current_span(
                "ComputeManager._build_resources",
                attributes=code_attributes(_MANAGER, "ComputeManager._build_resources")):
            instance = self._instance_update(context, instance, expected=None,
                                             task_state=task_states.NETWORKING)
            try:
                network_info = self._build_networks_for_instance(context, instance,
                                                                 requested_networks)
            except (exception.InstanceNotFound, exception.UnexpectedTaskStateError):
                raise
            except Exception as exc:
                self._cleanup_allocated_networks(context, instance)
                raise exception.BuildAbortException(
                    instance_uuid=instance["uuid"],
                    reason=f"Failed to allocate the network(s), not rescheduling: {exc}") \
                    from exc
            try:
                # _default_block_device_names: the guest's root disk is the libvirt
                # driver's default root device (the 2.3 view shows it).
                instance = self._instance_update(
                    context, instance, expected=task_states.NETWORKING,
                    task_state=task_states.BLOCK_DEVICE_MAPPING,
                    root_device_name=instance.get("root_device_name") or "/dev/vda")
                block_device_info = self._prep_block_device(context, instance)
            except (exception.InstanceNotFound, exception.UnexpectedTaskStateError):
                self._cleanup_allocated_networks(context, instance)
                raise
            except Exception as exc:
                self._cleanup_allocated_networks(context, instance)
                self._cleanup_volumes(context, instance)
                raise exception.BuildAbortException(
                    instance_uuid=instance["uuid"],
                    reason=f"Failure prepping block device: {exc}") from exc
        resources = {"network_info": network_info, "block_device_info": block_device_info}
        try:
            yield resources
        except Exception as exc:
            self._cleanup_allocated_networks(context, instance)
            self._cleanup_volumes(context, instance)
            if isinstance(exc, (exception.InstanceNotFound, exception.UnexpectedTaskStateError)):
                raise
            reason = str(exc)
            if isinstance(exc, exception.VirtualInterfaceCreateException):
                # Upstream's _build_and_run_instance names the network hop for it.
                reason = f"Failed to allocate the network(s), not rescheduling: {exc}"
            raise exception.BuildAbortException(instance_uuid=instance["uuid"],
                                                reason=reason) from exc

    @upstream(_MANAGER, "ComputeManager._build_networks_for_instance")
    def _build_networks_for_instance(self, context, instance, requested_networks) -> list:
        """Ask Neutron for the instance's ports (step 26) and cache what it answers."""
        span = trace.get_current_span()
        if self.network_api is None:
            span.set_attribute(attr.NOVA_BUILD_NETWORKS, 0)  # no Neutron: no steps 26-38
            return []
        network_info = self.network_api.allocate_for_instance(
            context, instance, requested_networks, bind_host_id=self.host)
        # One port per network: what the flow check expects of this boot.
        span.set_attribute(attr.NOVA_BUILD_NETWORKS, len(network_info))
        self.conductor_api.instance_info_cache_update(context, instance["uuid"], network_info)
        return network_info

    @upstream(_MANAGER, "ComputeManager._prep_block_device")
    def _prep_block_device(self, context, instance) -> dict:
        """Create, reserve, connect and complete the instance's volumes; the driver's view.

        For each volume mapping: create the volume if the mapping asks for a new
        one (from an image or blank) and wait until Cinder has it, read it
        (step 39), attach it for this host's connector, and keep the
        ``connection_info`` Cinder answers: the rbd disk libvirt will be given.
        """
        bdms = self.conductor_api.block_device_mapping_get_all_by_instance(context,
                                                                            instance["uuid"])
        volume_bdms = [b for b in bdms if b["destination_type"] == "volume"]
        root_is_volume = any(b.get("boot_index") == 0 for b in volume_bdms)
        # What the request mapped, so a flow check knows which steps this boot implies.
        span = trace.get_current_span()
        span.set_attribute(attr.NOVA_BUILD_VOLUMES, len(volume_bdms))
        span.set_attribute(attr.NOVA_BUILD_BOOT_FROM_VOLUME, root_is_volume)
        if not volume_bdms:
            return {"block_device_mapping": []}
        if self.volume_api is None:
            raise exception.Invalid("volumes requested but no block storage service runs")
        names = iter(f"/dev/vd{c}" for c in "abcdefghijklmnopqrstuvwxyz")
        if not root_is_volume:
            next(names)  # /dev/vda is the local root disk
        mappings = []
        for bdm in sorted(volume_bdms, key=lambda b: (b.get("boot_index") is None or
                                                      b["boot_index"] < 0,
                                                      b.get("boot_index") or 0, b["id"])):
            volume_id = bdm["volume_id"]
            if not volume_id:
                from_image = bdm["source_type"] == "image"
                volume = self.volume_api.create(
                    context, bdm["volume_size"] or 1,
                    None if from_image else blank_volume_name(instance), None,
                    image_id=bdm["image_id"] if from_image else None)
                volume_id = volume["id"]
                bdm = self.conductor_api.block_device_mapping_update(
                    context, bdm["id"], {"volume_id": volume_id})
                self._await_block_device_map_created(context, volume_id)
            self.volume_api.get(context, volume_id)
            device = bdm.get("device_name") or next(names)
            attachment_id = bdm.get("attachment_id") or self.volume_api.attachment_create(
                context, volume_id, instance["uuid"])["id"]
            attachment = self.volume_api.attachment_update(
                context, attachment_id, self.driver.get_volume_connector(instance), device)
            connection_info = attachment["connection_info"]
            self.conductor_api.block_device_mapping_update(context, bdm["id"], {
                "attachment_id": attachment_id, "connection_info": connection_info,
                "device_name": device})
            # As upstream's DriverVolumeBlockDevice._volume_attach at boot: the volume
            # is marked in-use now, before the guest that will use it is spawned.
            self.volume_api.attachment_complete(context, attachment_id)
            mappings.append({"connection_info": connection_info, "mount_device": device,
                             "attachment_id": attachment_id, "boot_index": bdm.get("boot_index"),
                             "delete_on_termination": bdm.get("delete_on_termination")})
        return {"block_device_mapping": mappings}

    @upstream(_MANAGER, "ComputeManager._await_block_device_map_created")
    def _await_block_device_map_created(self, context, volume_id: str) -> None:
        from novalab.reference.nova.volume.cinder import await_volume_created

        await_volume_created(self.volume_api, context, volume_id)

    @upstream(_MANAGER, "ComputeManager._cleanup_allocated_networks")
    def _cleanup_allocated_networks(self, context, instance) -> None:
        if self.network_api is None:
            return
        try:
            self.network_api.deallocate_for_instance(context, instance)
        except Exception:
            LOG.exception("Failed to deallocate networks of %s", instance["uuid"])

    @upstream(_MANAGER, "ComputeManager._cleanup_volumes")
    def _cleanup_volumes(self, context, instance) -> None:
        """Detach every volume; delete those marked ``delete_on_termination``.

        Beyond the mappings, ask Cinder: a build cut short (nova-compute killed
        between two calls) may have reserved a volume, or made a blank one,
        without recording it in the block device mapping yet. Cinder's
        attachments for the instance, and the blank volume named after it
        (``<uuid>-blank-vol``, upstream's name), are released all the same.
        """
        if self.volume_api is None:
            return
        bdms = self.conductor_api.block_device_mapping_get_all_by_instance(context,
                                                                            instance["uuid"])
        volume_bdms = [b for b in bdms if b["destination_type"] == "volume"]
        attachments = [b["attachment_id"] for b in bdms if b.get("attachment_id")]
        to_delete = [b["volume_id"] for b in bdms
                     if b.get("volume_id") and b.get("delete_on_termination")]
        # Only a mapping the build left unrecorded can hide something from us: when
        # every one is complete (the usual delete), Cinder need not be asked.
        try:
            if any(not b.get("attachment_id") for b in volume_bdms):
                attachments += [a["id"] for a in self.volume_api.attachment_get_all(
                    context, instance_id=instance["uuid"]) if a["id"] not in attachments]
            if any(b["source_type"] == "blank" and not b.get("volume_id") for b in volume_bdms):
                recorded = {b["volume_id"] for b in bdms if b.get("volume_id")}
                to_delete += [v["id"] for v in self.volume_api.get_all(
                    context, {"name": blank_volume_name(instance)}) if v["id"] not in recorded]
        except Exception:
            LOG.exception("Could not ask Cinder what %s still holds", instance["uuid"])
        for attachment_id in attachments:
            try:
                self.volume_api.attachment_delete(context, attachment_id)
            except Exception:
                LOG.exception("Failed to delete attachment %s of %s", attachment_id,
                              instance["uuid"])
        for volume_id in to_delete:
            try:
                self._await_detached(context, volume_id)
                self.volume_api.delete(context, volume_id)
            except exception.NotFound:
                LOG.info("Volume %s of %s is already gone", volume_id, instance["uuid"])
            except Exception:
                LOG.exception("Failed to delete volume %s of %s", volume_id, instance["uuid"])

    def _await_detached(self, context, volume_id: str, timeout: float = 30.0) -> None:
        """A volume can be deleted only once Cinder has finished detaching it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.volume_api.get(context, volume_id)["status"] in ("available", "error"):
                return
            time.sleep(0.05)

    def _get_power_state(self, instance: dict) -> int:
        try:
            return self.driver.get_info(instance).state
        except exception.InstanceNotFound:
            return power_state.NOSTATE

    def _instance_update(self, context, instance: dict, *, expected, **updates) -> dict:
        """Save through the conductor, only if ``task_state`` still is ``expected``."""
        new = self.conductor_api.instance_update(context, instance["uuid"], updates,
                                                 expected_task_state=expected,
                                                 check_task_state=True)
        set_instance_attributes(trace.get_current_span(), new)
        return new

    def _cleanup_guest(self, context, instance: dict) -> None:
        try:
            self.driver.destroy(context, instance)
        except Exception:
            LOG.exception("Cleaning up the guest of %s failed", instance["uuid"])

    @upstream(_MANAGER, "ComputeManager._set_instance_obj_error_state")
    def _set_instance_error_state(self, context, instance: dict, exc: Exception) -> None:
        """ERROR with a fault (``compute_utils.add_instance_fault_from_exc``)."""
        code = getattr(exc, "code", 500)
        gone = (exception.InstanceNotFound,)
        try:
            # The fault first, then the state, in Nova's order: whoever polls and sees
            # ERROR must also find the fault that explains it. Each write is retried
            # through a database or broker restart (the failure may be that restart):
            # a build must not stay BUILD because its failure could not be recorded.
            retry.call(self.conductor_api.instance_fault_create, context, {
                "instance_uuid": instance["uuid"], "code": code if code >= 400 else 500,
                "message": str(exc) or type(exc).__name__, "host": self.host,
                "details": "".join(traceback.format_exception(exc))[-4000:]}, terminal=gone)
            retry.call(self.conductor_api.instance_update, context, instance["uuid"],
                       {"vm_state": vm_states.ERROR, "task_state": None}, terminal=gone)
        except exception.InstanceNotFound:
            LOG.info("Instance %s is gone; no fault recorded", instance["uuid"])

    # External events -----------------------------------------------------------------

    @upstream(_MANAGER, "ComputeManager.external_instance_event")
    def external_instance_event(self, context, instances: list[dict], events: list[dict]) -> None:
        """RPC endpoint (cast): wake whatever waits for these events (network-vif-plugged)."""
        for event in events:
            self.virtapi.deliver(event["server_uuid"], event["name"], event.get("tag"),
                                 event.get("status", "completed"))

    # Delete --------------------------------------------------------------------------

    @upstream(_MANAGER, "ComputeManager.terminate_instance")
    @wrap_instance_event(prefix="compute")
    def terminate_instance(self, context, instance: dict) -> None:
        """RPC endpoint (cast): destroy the guest, then the instance record.

        Recorded as the event ``compute_terminate_instance`` of the ``delete`` action.
        A build of this instance still waiting for an event stops waiting first: it
        cleans up and gives the lock up (``InstanceEvents.cancel_events_for_instance``).
        """
        if self.instance_events.cancel_events_for_instance(instance["uuid"]):
            trace.get_current_span().add_event("build's wait for events cancelled")
        try:
            with self._instance_locks[instance["uuid"]]:
                self.driver.destroy(context, instance)
                self._cleanup_allocated_networks(context, instance)
                self._cleanup_volumes(context, instance)
                self._delete_allocation_for_instance(context, instance)  # _complete_deletion
                try:
                    # Nova saves vm_state DELETED, then destroys the row: two writes,
                    # between which the server is DELETED yet still listed. `server
                    # delete --wait` returns on DELETED, so both go in one write.
                    self.conductor_api.instance_destroy(context, instance["uuid"])
                except exception.InstanceNotFound:
                    pass
        finally:
            self.instance_events.forget_instance(instance["uuid"])
        self._instance_locks.pop(instance["uuid"], None)
        self._update_usage(context)  # _complete_deletion: the resources are free again
