"""The scheduler service (``nova/scheduler/manager.py``): where ``run_instance`` lands.

The classic flow's scheduler picks a host, records it on the instance (step 11)
and casts ``build_and_run_instance`` to that host's queue (step 12). When no host
fits, the instance goes to ERROR with a NoValidHost fault instead of waiting
forever in BUILD; so it does when scheduling fails in any other way (a
``nova.conf`` or a learner's filter that does not load, a filter that raises),
with a fault that says what failed, as Grizzly's ``run_instance`` did.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections import defaultdict
from pathlib import Path

from opentelemetry import trace

from novalab.reference.common import exception, retry
from novalab.reference.common.db import Database
from novalab.reference.nova.compute import vm_states
from novalab.reference.nova.compute.rpcapi import ComputeAPI
from novalab.reference.nova.db import api as db_api
from novalab.reference.nova.scheduler import exception as scheduler_exception
from novalab.reference.nova.scheduler.conf import CONF_NAME
from novalab.reference.nova.scheduler.filter_scheduler import FilterScheduler
from novalab.reference.nova.scheduler.host_manager import HostManager
from novalab.tracing.spans import set_instance_attributes, upstream

LOG = logging.getLogger(__name__)


# What a broken configuration or filter raises: one clear line in the log.
_SCHEDULER_ERRORS = (scheduler_exception.SchedulerHostFilterNotFound,
                     scheduler_exception.ClassNotFound,
                     scheduler_exception.SchedulerHostFilterFailed,
                     scheduler_exception.SchedulerFilterFileInvalid,
                     scheduler_exception.SchedulerConfigInvalid)


class SchedulerManager:
    def __init__(self, db: Database, compute_rpcapi: ComputeAPI, tracer, state_dir=None,
                 placement_client=None):
        self.db = db
        self.tracer = tracer
        self.compute_rpcapi = compute_rpcapi
        # The modern topology: candidates and claims from placement.
        self.placement_client = placement_client
        # [filter_scheduler] comes from the deployment's STATE_DIR/nova.conf.
        conf_path = None if state_dir is None else Path(state_dir).absolute() / CONF_NAME
        self.driver = FilterScheduler(
            HostManager(db, tracer, conf_path, uses_placement=placement_client is not None),
            tracer, placement_client=placement_client)
        # Selecting hosts reads usage from the DB; saving the host is the claim.
        # Nova resolves two schedulers racing for the last slot with compute-side
        # claims and a reschedule (later, placement allocations); novalab has one
        # scheduler and no reschedule, so it serialises select + save instead.
        self._claim_lock = threading.Lock()

    @property
    def uses_placement(self) -> bool:
        """The modern topology: the spans link Pike's code (``upstream``'s placement_ref)."""
        return self.placement_client is not None

    @upstream("nova/scheduler/manager.py", "SchedulerManager.run_instance", ref="grizzly-eol")
    def run_instance(self, context, request_spec: dict, filter_properties: dict,
                     requested_networks=None, block_device_mapping=None) -> None:
        uuids = request_spec["instance_uuids"]
        with self._claim_lock:
            try:
                destinations = self.driver.select_destinations(context, request_spec)
            except exception.NoValidHost as exc:
                LOG.warning("NoValidHost for %s: %s", uuids, exc)
                failure = exc
            except _SCHEDULER_ERRORS as exc:
                # The learner's traceback (the cause), where there is one.
                LOG.error("Scheduling %s failed: %s", uuids, exc,
                          exc_info=exc if exc.__cause__ else None)
                failure = exc
            except Exception as exc:
                LOG.exception("Scheduling %s failed", uuids)
                failure = exc
            else:
                failure = None
                chosen = []
                for uuid, dest in zip(uuids, destinations, strict=True):
                    try:
                        chosen.append((self._instance_update_db(context, uuid, dest), dest))
                    except exception.InstanceNotFound:
                        # Deleted by its user while it waited for a host: nothing to build.
                        LOG.info("Instance %s disappeared during scheduling", uuid)
                    except Exception as exc:  # the database went away: ERROR, not BUILD
                        LOG.exception("Saving the host of %s failed", uuid)
                        self._set_vm_state_with_fault(context, uuid, exc)
        if failure is not None:
            for uuid in uuids:
                self._set_vm_state_with_fault(context, uuid, failure)
            return
        for instance, dest in chosen:
            self.compute_rpcapi.build_and_run_instance(
                context, instance=instance, host=dest["host"], image=request_spec["image"],
                request_spec=request_spec, filter_properties=filter_properties,
                requested_networks=requested_networks,
                block_device_mapping=block_device_mapping, node=dest["nodename"])

    @upstream("nova/scheduler/manager.py", "SchedulerManager.select_destinations",
              ref="newton-eol", placement_ref="pike-eol")
    def select_destinations(self, context, request_spec: dict,
                            filter_properties: dict) -> list[dict]:
        """RPC endpoint (call): hosts for the request's instances, chosen and claimed.

        The same filters and weighers as ``run_instance``, under the same lock; the
        chosen host is saved on each instance before the answer goes back, the
        claim that keeps a boot racing this request off the same free memory
        (upstream's compute host claims it when it builds). ``NoValidHost`` goes
        back to the caller.
        """
        if self.placement_client is not None:
            return self._select_with_placement(context, request_spec)
        with self._claim_lock:
            destinations = self.driver.select_destinations(context, request_spec)
            for uuid, dest in zip(request_spec["instance_uuids"], destinations, strict=True):
                self._instance_update_db(context, uuid, dest)
        return [dict(dest, limits={}) for dest in destinations]

    def _select_with_placement(self, context, request_spec: dict) -> list[dict]:
        """Since Pike: placement says which hosts could fit the request (allocation
        candidates), the filters and weighers rank those, and the claim in placement
        (not a row the scheduler saves) is what keeps a racing request off the same
        resources. No instance row exists yet: the conductor creates it in the cell
        of the host chosen here."""
        resources = resources_from_request_spec(request_spec)
        alloc_reqs, _summaries = self.placement_client.get_allocation_candidates(
            context, resources)
        if not alloc_reqs:
            LOG.info("Got no allocation candidates from placement for %s",
                     request_spec["instance_uuids"])
            raise exception.NoValidHost(reason="")
        alloc_reqs_by_rp_uuid: dict[str, list] = defaultdict(list)
        for alloc_req in alloc_reqs:
            for rp_uuid in alloc_req["allocations"]:
                alloc_reqs_by_rp_uuid[rp_uuid].append(alloc_req)
        with self._claim_lock:  # one scheduler thread picks and claims at a time
            destinations = self.driver.select_destinations(context, request_spec,
                                                           alloc_reqs_by_rp_uuid)
        return [dict(dest, limits={}) for dest in destinations]

    @upstream("nova/scheduler/driver.py", "instance_update_db", ref="grizzly-eol")
    def _instance_update_db(self, context, instance_uuid: str, dest: dict) -> dict:
        """Save the chosen host on the instance (step 11)."""
        instance = db_api.instance_update(
            self.db, instance_uuid, {"host": dest["host"], "node": dest["nodename"]})
        set_instance_attributes(trace.get_current_span(), instance)
        return instance

    @upstream("nova/scheduler/utils.py", "set_vm_state_and_notify")
    def _set_vm_state_with_fault(self, context, instance_uuid: str, exc: Exception) -> None:
        """ERROR, task cleared, and a fault the API will show the user.

        As ``compute_utils.exception_to_dict``: a novalab exception's message, any
        other's class name only (it may hold what users should not see); the
        traceback, with its cause, as the details only admins are shown.
        """
        message = (exc.format_message() if isinstance(exc, exception.NovaLabException)
                   else type(exc).__name__)
        # The fault before the state: a client that sees ERROR must find its reason.
        # Both retried through a database restart (which may be the failure itself).
        retry.call(db_api.instance_fault_create, self.db, {
            "instance_uuid": instance_uuid, "code": 500, "message": message,
            "details": "".join(traceback.format_exception(exc))})
        try:
            retry.call(db_api.instance_update, self.db, instance_uuid,
                       {"vm_state": vm_states.ERROR, "task_state": None},
                       terminal=(exception.InstanceNotFound,))
        except exception.InstanceNotFound:
            pass  # deleted while we were scheduling: the fault stays with the deleted row


def resources_from_request_spec(request_spec: dict) -> dict[str, int]:
    """Upstream's ``nova/scheduler/utils.py`` function of that name: the flavor as
    placement resource classes; a server booted from a volume asks no DISK_GB
    of the host (its root disk is in Cinder)."""
    flavor = request_spec["flavor"]
    resources = {"VCPU": flavor["vcpus"], "MEMORY_MB": flavor["memory_mb"]}
    disk = (0 if request_spec.get("is_bfv") else flavor["root_gb"]) + flavor["ephemeral_gb"]
    if disk:
        resources["DISK_GB"] = disk
    return resources
