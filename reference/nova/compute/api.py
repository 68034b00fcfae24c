"""The compute API (``nova/compute/api.py``): what nova-api does with a valid request.

``create`` checks the image against the flavor, writes the instance rows in
``_provision_instances`` (step 5: vm_state ``building``, task_state
``scheduling``), records the ``create`` action of each instance under the
request id the API answers with, and casts the request to the scheduler (step
6). It returns as soon as the message is sent; the build itself happens
elsewhere. ``InstanceActionAPI`` reads the actions back for
``os-instance-actions``.

The server actions (``snapshot``, ``shelve``, ``shelve_offload``, ``unshelve``)
check the instance's state first (``@check_instance_state``: a 409 otherwise),
save the task state they start with, record the action and cast; the work
happens on the compute host, or through the conductor for ``unshelve``.
"""

from __future__ import annotations

import functools
import json
import logging
import traceback
import uuid

from opentelemetry import trace

from novalab.reference.common import exception
from novalab.reference.common.context import RequestContext
from novalab.reference.common.db import Database
from novalab.reference.common.quota import OverQuota
from novalab.reference.nova import exception as nova_exception
from novalab.reference.nova import quota
from novalab.reference.nova import utils as nova_utils
from novalab.reference.nova.availability_zones import DEFAULT_AVAILABILITY_ZONE
from novalab.reference.nova.compute import (
    instance_actions,
    keypairs,
    power_state,
    task_states,
    vm_states,
)
from novalab.reference.nova.compute import utils as compute_utils
from novalab.reference.nova.compute.cells_v2 import CellsV2Mixin
from novalab.reference.nova.compute.rpcapi import ComputeAPI
from novalab.reference.nova.db import api as db_api
from novalab.reference.nova.image.glance import GlanceImageServiceV2
from novalab.reference.nova.network.neutron import SECURITY_GROUPS_SYSMETA, SecurityGroupNotFound
from novalab.reference.nova.network.security_group_api import SecurityGroupAPI
from novalab.reference.nova.scheduler.rpcapi import SchedulerAPI
from novalab.tracing import attributes as attr
from novalab.tracing.spans import set_instance_attributes, upstream

LOG = logging.getLogger(__name__)
_API = "nova/compute/api.py"
# What a snapshot must not inherit from the server's image (compute/utils.py's
# NON_INHERITABLE_IMAGE_PROPERTIES and CONF.non_inheritable_image_properties).
NON_INHERITABLE_IMAGE_PROPERTIES = frozenset((
    "cinder_encryption_key_id", "cinder_encryption_key_deletion_policy", "img_signature",
    "img_signature_hash_method", "img_signature_key_type", "img_signature_certificate_uuid",
    "cache_in_nova", "bittorrent"))
NON_INHERITABLE_IMAGE_NAMESPACES = ("os_glance",)
# What novalab's libvirt driver writes a snapshot as (its disks are raw files).
SNAPSHOT_DISK_FORMAT = "raw"
SNAPSHOT_CONTAINER_FORMAT = "bare"


def check_instance_state(vm_state=None, task_state=(None,), must_have_launched=True):
    """Refuse (``InstanceInvalidState``, a 409) an instance in another state."""

    def outer(function):
        @functools.wraps(function)
        def inner(self, context, instance, *args, **kwargs):
            for attr_name, allowed in (("vm_state", vm_state), ("task_state", task_state)):
                if allowed is not None and instance[attr_name] not in allowed:
                    raise exception.InstanceInvalidState(
                        attr=attr_name, instance_uuid=instance["uuid"],
                        state=instance[attr_name], method=function.__name__)
            if must_have_launched and not instance.get("launched_at"):
                raise exception.InstanceInvalidState(
                    attr="launched_at", instance_uuid=instance["uuid"], state=None,
                    method=function.__name__)
            return function(self, context, instance, *args, **kwargs)

        return inner

    return outer


def check_instance_lock(function):
    """A locked server refuses everyone but admins (``InstanceIsLocked``, a 409)."""

    @functools.wraps(function)
    def inner(self, context, instance, *args, **kwargs):
        if instance.get("locked") and not context.is_admin:
            raise nova_exception.InstanceIsLocked(instance_uuid=instance["uuid"])
        return function(self, context, instance, *args, **kwargs)

    return inner


# The vm_states a SOFT and a HARD reboot start from (upstream's vm_states.ALLOW_*).
ALLOW_SOFT_REBOOT = [vm_states.ACTIVE]
ALLOW_HARD_REBOOT = ALLOW_SOFT_REBOOT + [vm_states.STOPPED, vm_states.PAUSED,
                                         vm_states.SUSPENDED, vm_states.ERROR]
# Where a server's metadata may change (update_/delete_instance_metadata).
_METADATA_STATES = [vm_states.ACTIVE, vm_states.PAUSED, vm_states.SUSPENDED, vm_states.STOPPED]


class API(CellsV2Mixin):
    """``cells`` and ``placement_client`` make it today's API (the modern topology):
    ``db`` is then the API database, and instances live in cells."""

    def __init__(self, db: Database, image_api: GlanceImageServiceV2,
                 scheduler_rpcapi: SchedulerAPI, compute_rpcapi: ComputeAPI, tracer,
                 volume_api=None, compute_task_api=None, network_api=None, cells=None,
                 placement_client=None):
        self.db = db
        self.cells = cells
        self.placement_client = placement_client
        self.quotas = quota.compute_quotas(db)
        self.volume_api = volume_api
        self.network_api = network_api
        self.security_group_api = SecurityGroupAPI(network_api, tracer) \
            if network_api is not None else None
        self.compute_task_api = compute_task_api
        self.image_api = image_api
        self.scheduler_rpcapi = scheduler_rpcapi
        self.compute_rpcapi = compute_rpcapi
        self.tracer = tracer

    # Create ---------------------------------------------------------------------------

    @upstream(_API, "API._check_requested_secgroups")
    def _check_requested_secgroups(self, context: RequestContext,
                                   secgroups: list[str]) -> list[str]:
        """Each requested group resolved in Neutron to its id (``default`` stays
        ``default``); one the project does not have is a 400, as upstream."""
        groups = []
        for secgroup in secgroups:
            if secgroup == "default" or self.security_group_api is None:
                groups.append(secgroup)
                continue
            try:
                groups.append(self.security_group_api.validate_name(context, secgroup))
            except SecurityGroupNotFound as exc:
                raise exception.Invalid(str(exc)) from exc
        return groups

    @upstream(_API, "API.create")
    def create(self, context: RequestContext, flavor: dict, image_href: str, *,
               display_name: str, min_count: int = 1, max_count: int = 1,
               metadata: dict | None = None, key_name: str | None = None,
               user_data: str | None = None, availability_zone: str | None = None,
               requested_networks=None, block_device_mapping: list[dict] | None = None,
               boot_image: str | None = None, description: str | None = None,
               tags: list[str] | None = None,
               security_groups: list[str] | None = None) -> list[dict]:
        """``image_href`` is "" for a boot from volume; ``boot_image`` then names the
        image a new root volume is made from, if any (its properties still count)."""
        image = self._get_image(context, image_href or boot_image) \
            if (image_href or boot_image) else {"id": "", "properties": {}}
        if image_href:
            self._check_requested_image(flavor, image)
        self._validate_availability_zone(availability_zone)
        self._check_metadata_properties_quota(context, metadata)
        mappings = block_device_mapping or []
        self._validate_bdm(context, mappings, max_count)
        if self.network_api is not None:   # _check_requested_networks
            self.network_api.validate_networks(context, requested_networks)
        key_data, keypairs = self._get_key_pair(context, key_name)
        security_groups = self._check_requested_secgroups(context, security_groups or [])
        count = self._check_num_instances_quota(context, flavor, min_count, max_count)
        instances = self._provision_instances(
            context, flavor, dict(image, id=image_href), count, display_name=display_name,
            metadata=metadata, key_name=key_name, key_data=key_data, keypairs=keypairs,
            user_data=user_data, availability_zone=availability_zone,
            block_device_mapping=mappings,
            description=description, tags=tags, security_groups=security_groups)
        if self.cells is not None:
            self._cast_schedule_and_build(context, instances, image, requested_networks)
            return instances
        self._recheck_quota(context, flavor, instances)
        for instance in instances:
            # Before the cast: the compute host's events hang under this action.
            self._record_action_start(context, instance, instance_actions.CREATE)
        request_spec = {
            "instance_uuids": [i["uuid"] for i in instances],
            "num_instances": len(instances),
            "flavor": flavor,
            "image": image,
            "project_id": context.project_id,
            "user_id": context.user_id,
            "availability_zone": availability_zone,
        }
        try:
            self.scheduler_rpcapi.run_instance(context, request_spec=request_spec,
                                               filter_properties={},
                                               requested_networks=requested_networks)
        except Exception as exc:
            # The request never reached a scheduler (the broker is unreachable), so
            # nobody would ever move these instances on: ERROR, not BUILD forever.
            self._set_error_state_after_failed_cast(context, instances, exc)
            raise
        return instances

    def _cast_schedule_and_build(self, context, instances: list[dict], image: dict,
                                 requested_networks) -> None:
        """Hand the build requests to the super conductor (a cast: the API answers
        202 at once). If the broker cannot take it, nothing would ever build them:
        they go again and the request fails."""
        try:
            self.compute_task_api.schedule_and_build_instances(
                context, instance_uuids=[i["uuid"] for i in instances], image=image,
                requested_networks=requested_networks)
        except Exception:
            for instance in instances:
                self._destroy_build_request(context, instance["uuid"])
            raise

    @upstream("nova/compute/utils.py", "check_num_instances_quota")
    def _check_num_instances_quota(self, context, flavor: dict, min_count: int,
                                   max_count: int) -> int:
        """How many instances to make: at most ``max_count``, as many as the project's
        quota allows, or ``OverQuota`` (403) if fewer than ``min_count`` fit. Checked
        before any row is written, so a request for 10**30 costs one count query.

        Upstream's was this method of ``API`` until Pike made it
        ``compute_utils.check_num_instances_quota``, which ``_provision_instances``
        calls."""
        count = quota.allowed_count(self.quotas, context.project_id, flavor, min_count,
                                    max_count)
        trace.get_current_span().set_attribute(attr.NOVA_INSTANCE_COUNT, count)
        return count

    def _recheck_quota(self, context, flavor: dict, instances: list[dict]) -> None:
        """Nova's ``[quota] recheck_quota``: two creates checked at the same moment may
        both have passed; whoever is over once the rows exist removes its own."""
        try:
            self.quotas.recheck(context.project_id, quota.deltas_for(flavor, len(instances)))
        except OverQuota:
            self._destroy_unscheduled(context, instances)
            raise

    @upstream(_API, "API._check_metadata_properties_quota")
    def _check_metadata_properties_quota(self, context, metadata: dict | None) -> None:
        """The limit alone (``Quotas.limit_check``: nothing is counted as used); the
        keys' and values' sizes are the schema's (``parameter_types.metadata``)."""
        limit = self.quotas.limits(context.project_id)["metadata_items"]
        if metadata and 0 <= limit < len(metadata):
            raise nova_exception.MetadataLimitExceeded(
                overs="metadata_items", req=len(metadata), used=0, allowed=limit)

    def _get_key_pair(self, context, key_name: str | None) -> tuple[str | None, list | None]:
        """The caller's key pair ``key_name`` (``_validate_and_build_base_options``):
        (its public key, the pair as the instance keeps it). Upstream's
        ``ServersController.create`` turns the ``KeypairNotFound`` into this 400."""
        if key_name is None:
            return None, None
        try:
            keypair = keypairs.key_pair_get(self.db, context.user_id, key_name)
        except nova_exception.KeypairNotFound as exc:
            raise exception.Invalid("Invalid key_name provided.") from exc
        return keypair["public_key"], [keypairs.instance_keypair(keypair)]

    @staticmethod
    def _validate_availability_zone(availability_zone: str | None) -> None:
        """Every compute host here is in Nova's default zone, ``nova``."""
        if availability_zone is not None and availability_zone != DEFAULT_AVAILABILITY_ZONE:
            raise exception.ValidationError(
                detail=f"The requested availability zone is not available: "
                       f"{availability_zone[:64]!r} (this cloud has "
                       f"{DEFAULT_AVAILABILITY_ZONE!r} only).")

    def _set_error_state_after_failed_cast(self, context, instances: list[dict],
                                           exc: Exception) -> None:
        """Fault first, then ERROR, for instances still waiting to be scheduled.

        Upstream answers the failed cast with a 500 and leaves the instances in
        BUILD (docs/decisions.md, "A cast that cannot be sent").
        """
        for instance in instances:
            try:
                db_api.instance_fault_create(self.db, {
                    "instance_uuid": instance["uuid"], "code": 500,
                    "message": str(exc) or type(exc).__name__,
                    "details": "".join(traceback.format_exception(exc))[-4000:]})
                db_api.instance_update(self.db, instance["uuid"],
                                       {"vm_state": vm_states.ERROR, "task_state": None},
                                       expected_task_state=task_states.SCHEDULING)
            except (exception.InstanceNotFound, exception.UnexpectedTaskStateError):
                LOG.info("Instance %s changed while its cast failed; left as it is",
                         instance["uuid"])

    @upstream(_API, "API._record_action_start")
    def _record_action_start(self, context, instance: dict, action: str) -> None:
        """Write the instance action a request starts, keyed by its request id."""
        db_api.action_start(self.db, compute_utils.pack_action_start(context, instance["uuid"],
                                                                     action))
        span = trace.get_current_span()
        span.set_attribute(attr.NOVA_INSTANCE_UUID, instance["uuid"])
        span.set_attribute(attr.NOVA_INSTANCE_ACTION, action)

    def _get_image(self, context, image_href: str) -> dict:
        image_id = image_href.rstrip("/").rsplit("/", 1)[-1]
        try:
            image = self.image_api.show(context, image_id)
        except exception.ImageNotFound as exc:
            raise exception.Invalid(f"Image {image_id} could not be found.") from exc
        if image.get("status") != "active":
            raise exception.Invalid(f"Image {image_id} is not active.")
        return image

    @upstream(_API, "API._validate_bdm")
    def _validate_bdm(self, context, mappings: list[dict], num: int) -> None:
        """Existing volumes must exist and be free; new ones need block storage."""
        uses_volumes = any(m["destination_type"] == "volume" for m in mappings)
        if uses_volumes and self.volume_api is None:
            raise exception.ValidationError(
                detail="Volumes were requested but this cloud runs no block storage service.")
        existing = [m for m in mappings if m["source_type"] == "volume"]
        if existing and num > 1:
            raise exception.ValidationError(
                detail="Cannot attach one or more volumes to multiple instances")
        for mapping in existing:
            try:
                volume = self.volume_api.get(context, mapping["volume_id"])
            except exception.NotFound as exc:
                raise exception.Invalid(f"Block Device Mapping is Invalid: volume "
                                        f"{mapping['volume_id']} could not be found.") from exc
            if volume["status"] != "available":
                raise exception.Invalid(f"Block Device Mapping is Invalid: volume "
                                        f"{volume['id']} status must be 'available', not "
                                        f"'{volume['status']}'.")

    @staticmethod
    def _check_requested_image(flavor: dict, image: dict) -> None:
        """The image's minimums must fit the flavor (``_validate_flavor_image``)."""
        if image.get("min_ram") and flavor["memory_mb"] < image["min_ram"]:
            raise exception.Invalid("Flavor's memory is too small for requested image.")
        if image.get("min_disk") and flavor["root_gb"] and flavor["root_gb"] < image["min_disk"]:
            raise exception.Invalid("Flavor's disk is too small for requested image.")
        size_gb = (image.get("size") or 0) / 1024 ** 3
        if flavor["root_gb"] and size_gb > flavor["root_gb"]:
            raise exception.Invalid("Flavor's disk is too small for requested image.")

    @upstream(_API, "API._provision_instances")
    def _provision_instances(self, context, flavor: dict, image: dict, num: int, *,
                             display_name: str, metadata, key_name, user_data,
                             availability_zone, block_device_mapping=(), key_data=None,
                             keypairs=None, description=None,
                             tags=None, security_groups=None) -> list[dict]:
        # One reservation id for the whole request; each instance its launch index.
        reservation_id = nova_utils.generate_reservation_id()
        if self.cells is not None:
            return self._provision_in_api_database(
                context, flavor, image, num, display_name=display_name, metadata=metadata,
                key_name=key_name, key_data=key_data, keypairs=keypairs, user_data=user_data,
                availability_zone=availability_zone, block_device_mapping=block_device_mapping,
                description=description, tags=tags, reservation_id=reservation_id,
                security_groups=security_groups)
        instances = []
        try:
            for index in range(num):
                name = display_name if num == 1 else f"{display_name}-{index + 1}"
                instance = db_api.instance_create(self.db, self._instance_values(
                    context, flavor, image, name, metadata=metadata, key_name=key_name,
                    key_data=key_data, keypairs=keypairs, user_data=user_data,
                    availability_zone=availability_zone,
                    description=description, tags=tags, reservation_id=reservation_id,
                    launch_index=index, security_groups=security_groups))
                instances.append(instance)
                span = trace.get_current_span()
                set_instance_attributes(span, instance)
                span.set_attribute(attr.NOVA_INSTANCE_DISPLAY_NAME, name)
                for mapping in block_device_mapping:
                    db_api.block_device_mapping_create(
                        self.db, self._reserved_mapping(context, mapping, instance))
        except Exception:
            # As upstream: what this request wrote goes, or it would stay BUILD for good.
            self._destroy_unscheduled(context, instances)
            raise
        return instances

    def _provision_in_api_database(self, context, flavor: dict, image: dict, num: int, *,
                                   display_name: str, block_device_mapping=(),
                                   **fields) -> list[dict]:
        """The modern topology's ``_provision_instances``: no instance row yet, but a
        request spec, a build request and an instance mapping each (``cells_v2.py``);
        an existing volume is reserved for the server (an attachment) as in classic."""
        values = [self._instance_values(
            context, flavor, image, display_name if num == 1 else f"{display_name}-{i + 1}",
            launch_index=i, **fields) for i in range(num)]
        request_spec = {"instance_uuids": [v["uuid"] for v in values], "num_instances": num,
                        "flavor": flavor, "image": image, "project_id": context.project_id,
                        "user_id": context.user_id, "is_bfv": not image["id"],
                        "availability_zone": fields["availability_zone"]}
        mappings: list[list[dict]] = []
        try:
            for instance in values:
                rows: list[dict] = []
                mappings.append(rows)   # before the first reservation: a failure on a
                for mapping in block_device_mapping:   # later one still releases it
                    rows.append(self._reserved_mapping(context, mapping, instance))
        except Exception:
            for rows in mappings:
                for row in rows:
                    if row.get("attachment_id"):
                        self.volume_api.attachment_delete(context, row["attachment_id"])
            raise
        instances = self._provision_build_requests(context, values, request_spec, mappings)
        span = trace.get_current_span()
        for instance in instances:
            set_instance_attributes(span, instance)
            span.set_attribute(attr.NOVA_INSTANCE_DISPLAY_NAME, instance["display_name"])
        return instances

    def _reserved_mapping(self, context, mapping: dict, instance: dict) -> dict:
        """The instance's row of ``mapping``; an existing volume is reserved for it (an
        attachment with no connector yet), as Nova does before answering 202."""
        row = dict(mapping, instance_uuid=instance["uuid"])
        if mapping["source_type"] == "volume":
            row["attachment_id"] = self.volume_api.attachment_create(
                context, mapping["volume_id"], instance["uuid"])["id"]
        return row

    @staticmethod
    def _instance_values(context, flavor: dict, image: dict, name: str, *, metadata,
                         key_name, user_data, availability_zone, key_data=None, keypairs=None,
                         description=None, tags=None, reservation_id=None, launch_index=0,
                         security_groups=None) -> dict:
        """The new instance's fields: building, waiting for the scheduler."""
        properties = image.get("properties") or {}
        return {
            "display_description": description, "locked": False,
            "hostname": nova_utils.sanitize_hostname(name),
            "reservation_id": reservation_id, "launch_index": launch_index,
            "kernel_id": properties.get("kernel_id", ""),
            "ramdisk_id": properties.get("ramdisk_id", ""),
            # The flavor as it is now (instance_extra.flavor), for 2.47's server view.
            "flavor": {key: flavor.get(key) for key in nova_utils.INSTANCE_FLAVOR_KEYS},
            "tags": sorted(set(tags or [])),
            "uuid": str(uuid.uuid4()), "display_name": name,
            "project_id": context.project_id, "user_id": context.user_id,
            "image_ref": image["id"], "flavor_id": flavor["flavorid"],
            "flavor_name": flavor["name"], "memory_mb": flavor["memory_mb"],
            "vcpus": flavor["vcpus"], "root_gb": flavor["root_gb"],
            "ephemeral_gb": flavor["ephemeral_gb"],
            "vm_state": vm_states.BUILDING, "task_state": task_states.SCHEDULING,
            "power_state": power_state.NOSTATE, "metadata": metadata or {},
            "key_name": key_name, "key_data": key_data, "keypairs": keypairs,
            "user_data": user_data,
            "availability_zone": availability_zone,
            # What the server remembers of its image (nova/utils.py).
            "system_metadata": dict(nova_utils.get_system_metadata_from_image(image, flavor),
                                    image_base_image_ref=image["id"],
                                    **({SECURITY_GROUPS_SYSMETA: json.dumps(security_groups)}
                                       if security_groups else {})),
        }

    def _destroy_unscheduled(self, context, instances: list[dict]) -> None:
        """Delete instances no cast was sent for, and give back their volume reservations."""
        for instance in instances:
            try:
                self._local_delete(context, instance)
            except Exception:  # keep going: the others must go too
                LOG.exception("Could not remove instance %s after a failed create",
                              instance["uuid"])

    # Read -----------------------------------------------------------------------------

    @upstream(_API, "API.get")
    def get(self, context: RequestContext, instance_uuid: str,
            read_deleted: bool = False) -> dict:
        """One instance; another project's is NotFound unless the caller is admin.
        ``read_deleted``: a deleted one too (``context.read_deleted = 'yes'``)."""
        read = "yes" if read_deleted else "no"
        if self.cells is not None:
            _cell, instance = self._lookup_instance(context, instance_uuid, read_deleted=read)
        else:
            instance = db_api.instance_get_by_uuid(self.db, instance_uuid, read_deleted=read,
                                                   expected_attrs=db_api.API_EXPECTED_ATTRS)
        if not context.is_admin and instance["project_id"] != context.project_id:
            raise exception.InstanceNotFound(instance_id=instance_uuid)
        return instance

    @upstream(_API, "API.update_instance")
    def update_instance(self, context: RequestContext, instance: dict, updates: dict) -> dict:
        """Save the user's changes (name, description) where the instance lives: its
        cell, or its build request while it has none."""
        if self.cells is None:
            return db_api.instance_update(self.db, instance["uuid"], updates,
                                          expected_attrs=db_api.API_EXPECTED_ATTRS)
        cell, _found = self._lookup_instance(context, instance["uuid"])
        if cell is None:
            raise exception.Conflict(f"Instance {instance['uuid']} is being scheduled; "
                                     "try again once it has a host.")
        return db_api.instance_update(self.cells.target_cell(cell), instance["uuid"], updates,
                                      expected_attrs=db_api.API_EXPECTED_ATTRS)

    # Metadata ---------------------------------------------------------------------------

    @upstream(_API, "API.get_instance_metadata")
    def get_instance_metadata(self, context: RequestContext, instance: dict) -> dict:
        return dict(instance.get("metadata") or {})

    @upstream(_API, "API.delete_instance_metadata")
    @check_instance_lock
    @check_instance_state(vm_state=_METADATA_STATES, task_state=None)
    def delete_instance_metadata(self, context: RequestContext, instance: dict,
                                 key: str) -> None:
        """``instance.delete_metadata_key``: saved where the instance lives."""
        metadata = dict(instance.get("metadata") or {})
        metadata.pop(key, None)
        self.update_instance(context, instance, {"metadata": metadata})

    @upstream(_API, "API.update_instance_metadata")
    @check_instance_lock
    @check_instance_state(vm_state=_METADATA_STATES, task_state=None)
    def update_instance_metadata(self, context: RequestContext, instance: dict,
                                 metadata: dict, delete: bool = False) -> dict:
        """Merge ``metadata`` into the instance's, or replace it all (``delete``); the
        result must fit the ``metadata_items`` quota."""
        if delete:
            new = dict(metadata)
        else:
            new = dict(instance.get("metadata") or {})
            new.update(metadata)
        self._check_metadata_properties_quota(context, new)
        self.update_instance(context, instance, {"metadata": new})
        return new

    @upstream(_API, "API.get_all")
    def get_all(self, context: RequestContext, *, all_tenants: bool = False,
                limit: int | None = None, marker: str | None = None,
                name_match=None, match=None) -> list[dict]:
        """The caller's servers (everyone's with ``all_tenants``), those ``match``
        (a predicate, ``api/search_opts.py``) accepts, a page of them."""
        project_id = None if all_tenants else context.project_id
        if self.cells is not None:
            return self._get_all_in_cells(project_id, limit=limit, marker=marker,
                                          name_match=name_match, match=match)
        return db_api.instance_get_all(self.db, project_id=project_id, limit=limit,
                                       marker=marker, name_match=name_match, match=match,
                                       expected_attrs=db_api.API_EXPECTED_ATTRS)

    def faults_for(self, instances: list[dict]) -> dict[str, dict]:
        uuids = [i["uuid"] for i in instances if i["vm_state"] == vm_states.ERROR]
        if self.cells is not None:
            return self._faults_in_cells(uuids)
        return db_api.instance_fault_get_by_instance_uuids(self.db, uuids)

    @upstream(_API, "API._local_delete")
    def _local_delete(self, context, instance: dict, db: Database | None = None) -> None:
        """No host has the instance: give back its volumes, then delete. One that ran
        once (shelve-offloaded, or in ERROR after an unshelve failed) also has ports,
        and volumes to delete with it. ``db``: the instance's cell (default: ``self.db``)."""
        db = db or self.db
        offloaded = bool(instance.get("launched_at"))
        if offloaded and self.network_api is not None:
            self.network_api.deallocate_for_instance(context, instance)
        for bdm in db_api.block_device_mapping_get_all_by_instance(db, instance["uuid"]):
            if bdm.get("attachment_id") and self.volume_api is not None:
                self.volume_api.attachment_delete(context, bdm["attachment_id"])
                if offloaded and bdm.get("delete_on_termination") and bdm.get("volume_id"):
                    self.volume_api.delete(context, bdm["volume_id"])
        db_api.block_device_mapping_destroy_by_instance(db, instance["uuid"])
        db_api.instance_destroy(db, instance["uuid"])
        if self.cells is not None:
            self._local_delete_cleanup(context, instance["uuid"])

    # External events ------------------------------------------------------------------

    @upstream(_API, "API.external_instance_event")
    def external_instance_event(self, context: RequestContext, instances: list[dict],
                                events: list[dict]) -> None:
        """Send each host the events of its instances, one cast per host."""
        by_host: dict[str, tuple[list, list]] = {}
        for instance in instances:
            for_host = by_host.setdefault(instance["host"], ([], []))
            for_host[0].append(instance)
            for_host[1].extend(e for e in events if e["server_uuid"] == instance["uuid"])
        for host, (host_instances, host_events) in by_host.items():
            self.compute_rpcapi.external_instance_event(context, host_instances, host_events,
                                                        host=host)

    # Delete ---------------------------------------------------------------------------

    @upstream(_API, "API.delete")
    @check_instance_lock
    def delete(self, context: RequestContext, instance: dict) -> None:
        """Not yet (or no longer) on a host: delete here (``_local_delete``); else ask the
        host. A shelved server's snapshot goes first. In the modern topology a server
        still waiting for a cell goes with its build request; one buried in cell0 is
        deleted there."""
        if self.cells is not None:
            if instance["id"] is None and self._delete_while_booting(context, instance):
                return
            cell, instance = self._lookup_instance(context, instance["uuid"])
            if cell is not None and cell["database_connection"] != self.db.url:
                self._local_delete(context, instance, db=self.cells.target_cell(cell))
                return
        if instance["vm_state"] in (vm_states.SHELVED, vm_states.SHELVED_OFFLOADED):
            snapshot_id = (instance.get("system_metadata") or {}).get("shelved_image_id")
            if snapshot_id:
                self._delete_image(context, snapshot_id)
        if not instance["host"]:
            self._local_delete(context, instance)
            self._record_action_start(context, instance, instance_actions.DELETE)
            return
        instance = db_api.instance_update(
            self.db, instance["uuid"], {"task_state": task_states.DELETING})
        self._record_action_start(context, instance, instance_actions.DELETE)
        self.compute_rpcapi.terminate_instance(context, instance=instance, host=instance["host"])


    # Server actions: snapshot, shelve, shelve_offload, unshelve -----------------------

    @upstream(_API, "API.snapshot")
    @check_instance_state(vm_state=[vm_states.ACTIVE, vm_states.STOPPED, vm_states.PAUSED,
                                    vm_states.SUSPENDED])
    def snapshot(self, context: RequestContext, instance: dict, name: str,
                 extra_properties: dict | None = None) -> dict:
        """``createImage``: a queued image now, its data from the host later."""
        image_meta = self.create_image(context, instance, name, "snapshot", extra_properties)
        try:
            instance = db_api.instance_update(
                self.db, instance["uuid"], {"task_state": task_states.IMAGE_SNAPSHOT_PENDING},
                expected_task_state=[None])
        except (exception.InstanceNotFound, exception.UnexpectedTaskStateError) as exc:
            # Another request got there first: its image would stay queued forever.
            self._delete_image(context, image_meta["id"])
            if isinstance(exc, exception.InstanceNotFound):
                raise exception.InstanceInvalidState(
                    attr="vm_state", instance_uuid=instance["uuid"], state=vm_states.DELETED,
                    method="snapshot") from exc
            raise
        self._record_action_start(context, instance, instance_actions.CREATE_IMAGE)
        self._cast_or_revert(context, instance, image_meta["id"],
                             self.compute_rpcapi.snapshot_instance, context, instance,
                             image_meta["id"])
        return image_meta

    @upstream(_API, "API.shelve")
    @check_instance_lock
    @check_instance_state(vm_state=[vm_states.ACTIVE, vm_states.STOPPED, vm_states.PAUSED,
                                    vm_states.SUSPENDED])
    def shelve(self, context: RequestContext, instance: dict,
               clean_shutdown: bool = True) -> None:
        """Snapshot to ``<name>-shelved`` and power off on the host; a volume-backed
        server (nothing local to keep) goes straight to the offload."""
        system_metadata = dict(instance.get("system_metadata") or {})
        system_metadata.setdefault("image_base_image_ref", instance["image_ref"])
        instance = db_api.instance_update(
            self.db, instance["uuid"],
            {"task_state": task_states.SHELVING, "system_metadata": system_metadata},
            expected_task_state=[None])
        self._record_action_start(context, instance, instance_actions.SHELVE)
        if self._is_volume_backed_instance(instance):
            self._cast_or_revert(context, instance, None,
                                 self.compute_rpcapi.shelve_offload_instance, context,
                                 instance, clean_shutdown)
            return
        try:
            image_meta = self.create_image(context, instance,
                                           f"{instance['display_name']}-shelved", "snapshot")
        except Exception:
            self._revert_task_state(instance)
            raise
        self._cast_or_revert(context, instance, image_meta["id"],
                             self.compute_rpcapi.shelve_instance, context, instance,
                             image_meta["id"], clean_shutdown)

    @upstream(_API, "API.shelve_offload")
    @check_instance_lock
    @check_instance_state(vm_state=[vm_states.SHELVED])
    def shelve_offload(self, context: RequestContext, instance: dict,
                       clean_shutdown: bool = True) -> None:
        instance = db_api.instance_update(
            self.db, instance["uuid"], {"task_state": task_states.SHELVING_OFFLOADING},
            expected_task_state=[None])
        self._record_action_start(context, instance, instance_actions.SHELVE_OFFLOAD)
        self._cast_or_revert(context, instance, None,
                             self.compute_rpcapi.shelve_offload_instance, context, instance,
                             clean_shutdown)

    @upstream(_API, "API.unshelve")
    @check_instance_lock
    @check_instance_state(vm_state=[vm_states.SHELVED, vm_states.SHELVED_OFFLOADED])
    def unshelve(self, context: RequestContext, instance: dict) -> None:
        """Through the conductor, which decides: back on its host, or scheduled again."""
        request_spec = self._request_spec_for(context, instance)
        instance = db_api.instance_update(
            self.db, instance["uuid"], {"task_state": task_states.UNSHELVING},
            expected_task_state=[None])
        self._record_action_start(context, instance, instance_actions.UNSHELVE)
        self._cast_or_revert(context, instance, None, self.compute_task_api.unshelve_instance,
                             context, instance, request_spec)

    def _request_spec_for(self, context, instance: dict) -> dict:
        """What the scheduler needs to place the server again (upstream reads the
        ``RequestSpec`` saved at boot; novalab rebuilds it from the instance)."""
        # The flavor the instance embedded at boot (as upstream's saved RequestSpec
        # holds it): the flavor itself may have been deleted since.
        flavor = instance.get("flavor") or db_api.flavor_get_by_flavor_id(
            self.db, instance["flavor_id"])
        return {"instance_uuids": [instance["uuid"]], "num_instances": 1, "flavor": flavor,
                "image": nova_utils.get_image_from_system_metadata(
                    instance.get("system_metadata")),
                "project_id": instance["project_id"], "user_id": instance["user_id"],
                "availability_zone": instance.get("availability_zone")}

    def _cast_or_revert(self, context, instance: dict, image_id: str | None, cast,
                        *args) -> None:
        """Send the cast; if the broker cannot take it, nobody will ever clear the task
        state, so clear it here (and delete the image made for it)."""
        try:
            cast(*args)
        except Exception:
            self._revert_task_state(instance)
            if image_id:
                self._delete_image(context, image_id)
            raise

    def _revert_task_state(self, instance: dict) -> None:
        try:
            db_api.instance_update(self.db, instance["uuid"], {"task_state": None},
                                   expected_task_state=instance["task_state"])
        except (exception.InstanceNotFound, exception.UnexpectedTaskStateError):
            LOG.info("Instance %s changed meanwhile; task state left", instance["uuid"])

    def _is_volume_backed_instance(self, instance: dict) -> bool:
        """Booted from a volume (``compute_utils.is_volume_backed_instance``)."""
        if instance.get("image_ref"):
            return False
        return any(bdm.get("boot_index") == 0 and bdm["destination_type"] == "volume"
                   for bdm in db_api.block_device_mapping_get_all_by_instance(
                       self.db, instance["uuid"]))

    @upstream("nova/compute/utils.py", "create_image")
    def create_image(self, context, instance: dict, name: str, image_type: str,
                     extra_properties: dict | None = None) -> dict:
        """Register the image a snapshot will fill (Glance: ``queued``, no data).

        It starts from what the server remembers of its own image
        (``initialize_instance_snapshot_metadata``), marked with the instance and
        the kind of image. Upstream leaves ``disk_format`` and
        ``container_format`` to the driver's upload; novalab's Glance has no PATCH
        to set them then, so they are set here, to what the driver writes.
        """
        properties = {"instance_uuid": instance["uuid"], "user_id": str(context.user_id),
                      "image_type": image_type, **(extra_properties or {})}
        image_meta = self._initialize_instance_snapshot_metadata(context, instance, name,
                                                                 properties)
        image_meta.update(disk_format=SNAPSHOT_DISK_FORMAT,
                          container_format=SNAPSHOT_CONTAINER_FORMAT)
        return self.image_api.create(context, image_meta)

    @staticmethod
    def _initialize_instance_snapshot_metadata(context, instance: dict, name: str,
                                               extra_properties: dict) -> dict:
        """``compute_utils.initialize_instance_snapshot_metadata``: private to the
        server's project, or shared when someone else (an admin) makes it."""
        image_meta = nova_utils.get_image_from_system_metadata(instance.get("system_metadata"))
        image_meta["name"] = name
        if context.project_id != instance["project_id"]:
            image_meta["visibility"] = "shared"
            extra_properties = dict(extra_properties, instance_owner=instance["project_id"])
        else:
            image_meta["visibility"] = "private"
        properties = {k: v for k, v in image_meta["properties"].items()
                      if k not in NON_INHERITABLE_IMAGE_PROPERTIES
                      and not k.startswith(NON_INHERITABLE_IMAGE_NAMESPACES)}
        image_meta["properties"] = {**properties, **extra_properties}
        return image_meta

    def _delete_image(self, context, image_id: str) -> None:
        try:
            self.image_api.delete(context, image_id)
        except exception.ImageNotFound:
            pass
        except Exception:
            LOG.exception("Could not delete image %s", image_id)


    # Volume attachments (os-volume_attachments) ----------------------------------------

    def volume_bdms(self, context, instance: dict) -> list[dict]:
        """The server's volume mappings, in the order they were made."""
        return [b for b in db_api.block_device_mapping_get_all_by_instance(
            self.db, instance["uuid"]) if b["destination_type"] == "volume"]

    @staticmethod
    def _next_device_name(bdms: list[dict]) -> str:
        """The first free ``/dev/vdX`` after the root disk (upstream asks the host:
        ``reserve_block_device_name``, which the libvirt driver answers the same way,
        ignoring a device name the user asked for)."""
        used = {(b.get("device_name") or "").rsplit("/", 1)[-1] for b in bdms}
        for letter in "bcdefghijklmnopqrstuvwxyz":
            if f"vd{letter}" not in used:
                return f"/dev/vd{letter}"
        raise exception.Invalid("No free disk device names for prefix 'vd'")

    @upstream(_API, "API.attach_volume")
    @check_instance_lock
    @check_instance_state(vm_state=[vm_states.ACTIVE, vm_states.PAUSED, vm_states.STOPPED])
    def attach_volume(self, context: RequestContext, instance: dict, volume_id: str,
                      device: str | None = None) -> str:
        """Reserve the volume and a device name, then cast to the host; answers the device."""
        if device and not device.startswith("/dev/"):
            raise exception.Invalid(f"The supplied device path ({device}) is invalid.")
        return self._attach_volume(context, instance, volume_id)

    # Linked at victoria-eol: later releases folded it into attach_volume.
    @upstream(_API, "API._attach_volume", ref="victoria-eol")
    def _attach_volume(self, context, instance: dict, volume_id: str) -> str:
        volume = self.volume_api.get(context, volume_id)  # VolumeNotFound: a 404
        bdms = db_api.block_device_mapping_get_all_by_instance(self.db, instance["uuid"])
        if any(b.get("volume_id") == volume_id for b in bdms):
            raise exception.Invalid(f"Invalid volume: volume {volume_id} already attached")
        trace.get_current_span().set_attribute(attr.CINDER_VOLUME_ID, volume["id"])
        # _create_volume_bdm: the mapping first, so the device name is taken.
        bdm = db_api.block_device_mapping_create(self.db, {
            "instance_uuid": instance["uuid"], "source_type": "volume",
            "destination_type": "volume", "boot_index": None, "volume_id": volume_id,
            "device_name": self._next_device_name(bdms), "delete_on_termination": False})
        attachment_id = None
        try:
            # _check_attach_and_reserve_volume: Cinder refuses a volume not available.
            attachment_id = self.volume_api.attachment_create(context, volume_id,
                                                              instance["uuid"])["id"]
            bdm = db_api.block_device_mapping_update(self.db, bdm["id"],
                                                     {"attachment_id": attachment_id})
            self._record_action_start(context, instance, instance_actions.ATTACH_VOLUME)
            self.compute_rpcapi.attach_volume(context, instance, bdm)
        except Exception:
            if attachment_id:
                self.volume_api.attachment_delete(context, attachment_id)
            db_api.block_device_mapping_update(self.db, bdm["id"], {"deleted": bdm["id"]})
            raise
        return bdm["device_name"]

    @upstream(_API, "API.detach_volume")
    @check_instance_lock
    @check_instance_state(vm_state=[vm_states.ACTIVE, vm_states.PAUSED, vm_states.STOPPED])
    def detach_volume(self, context: RequestContext, instance: dict, bdm: dict) -> None:
        """``_detach_volume``: Cinder marks the volume detaching, then the host detaches."""
        volume_id = bdm["volume_id"]
        trace.get_current_span().set_attribute(attr.CINDER_VOLUME_ID, volume_id)
        self.volume_api.begin_detaching(context, volume_id)  # _check_and_begin_detach
        self._record_action_start(context, instance, instance_actions.DETACH_VOLUME)
        try:
            self.compute_rpcapi.detach_volume(context, instance, volume_id,
                                              bdm.get("attachment_id"))
        except Exception:
            self.volume_api.roll_detaching(context, volume_id)
            raise

    # Server actions: power (stop, start, reboot, pause, suspend), lock, console output ---

    def _power_action(self, context, instance: dict, task_state: str, action: str,
                      cast, *args) -> None:
        """Save the task state the action starts with (only from None: a second request
        racing this one gets a 409), record the action, cast to the instance's host."""
        try:
            instance = db_api.instance_update(self.db, instance["uuid"],
                                              {"task_state": task_state},
                                              expected_task_state=[None])
        except exception.UnexpectedTaskStateError as exc:
            raise exception.InstanceInvalidState(
                attr="task_state", instance_uuid=instance["uuid"],
                state=exc.kwargs.get("actual"), method=action) from exc
        self._record_action_start(context, instance, action)
        self._cast_or_revert(context, instance, None, cast, context, instance, *args)

    @upstream(_API, "API.stop")
    @check_instance_lock
    @check_instance_state(vm_state=[vm_states.ACTIVE, vm_states.ERROR])
    def stop(self, context: RequestContext, instance: dict, clean_shutdown: bool = True):
        self._power_action(context, instance, task_states.POWERING_OFF, instance_actions.STOP,
                           self.compute_rpcapi.stop_instance, clean_shutdown)

    @upstream(_API, "API.start")
    @check_instance_lock
    @check_instance_state(vm_state=[vm_states.STOPPED])
    def start(self, context: RequestContext, instance: dict) -> None:
        self._power_action(context, instance, task_states.POWERING_ON, instance_actions.START,
                           self.compute_rpcapi.start_instance)

    @upstream(_API, "API.reboot")
    @check_instance_lock
    def reboot(self, context: RequestContext, instance: dict, reboot_type: str) -> None:
        """SOFT from ACTIVE only; HARD also from STOPPED, PAUSED, SUSPENDED and ERROR,
        and may interrupt a reboot (or pause, suspend...) in progress."""
        if reboot_type == "SOFT":
            self._soft_reboot(context, instance)
        else:
            self._hard_reboot(context, instance)

    @upstream(_API, "API._soft_reboot")
    @check_instance_state(vm_state=ALLOW_SOFT_REBOOT, task_state=[None])
    def _soft_reboot(self, context, instance: dict) -> None:
        self._power_action(context, instance, task_states.REBOOTING, instance_actions.REBOOT,
                           self.compute_rpcapi.reboot_instance, None, "SOFT")

    @upstream(_API, "API._hard_reboot")
    @check_instance_state(vm_state=ALLOW_HARD_REBOOT, task_state=task_states.ALLOW_REBOOT)
    def _hard_reboot(self, context, instance: dict) -> None:
        instance = db_api.instance_update(self.db, instance["uuid"],
                                          {"task_state": task_states.REBOOTING_HARD},
                                          expected_task_state=task_states.ALLOW_REBOOT)
        self._record_action_start(context, instance, instance_actions.REBOOT)
        self._cast_or_revert(context, instance, None, self.compute_rpcapi.reboot_instance,
                             context, instance, None, "HARD")

    @upstream(_API, "API.pause")
    @check_instance_lock
    @check_instance_state(vm_state=[vm_states.ACTIVE])
    def pause(self, context: RequestContext, instance: dict) -> None:
        self._power_action(context, instance, task_states.PAUSING, instance_actions.PAUSE,
                           self.compute_rpcapi.pause_instance)

    @upstream(_API, "API.unpause")
    @check_instance_lock
    @check_instance_state(vm_state=[vm_states.PAUSED])
    def unpause(self, context: RequestContext, instance: dict) -> None:
        self._power_action(context, instance, task_states.UNPAUSING, instance_actions.UNPAUSE,
                           self.compute_rpcapi.unpause_instance)

    @upstream(_API, "API.suspend")
    @check_instance_lock
    @check_instance_state(vm_state=[vm_states.ACTIVE])
    def suspend(self, context: RequestContext, instance: dict) -> None:
        self._power_action(context, instance, task_states.SUSPENDING, instance_actions.SUSPEND,
                           self.compute_rpcapi.suspend_instance)

    @upstream(_API, "API.resume")
    @check_instance_lock
    @check_instance_state(vm_state=[vm_states.SUSPENDED])
    def resume(self, context: RequestContext, instance: dict) -> None:
        self._power_action(context, instance, task_states.RESUMING, instance_actions.RESUME,
                           self.compute_rpcapi.resume_instance)

    @staticmethod
    def is_expected_locked_by(context, instance: dict) -> bool:
        """Did whoever locked it stand where the caller stands (the owner's project, or
        not)? Unlocking an admin's lock takes ``unlock_override``."""
        is_owner = instance["project_id"] == context.project_id
        locked_by = instance.get("locked_by")
        return not locked_by or locked_by == ("owner" if is_owner else "admin")

    @upstream(_API, "API.lock")
    def lock(self, context: RequestContext, instance: dict) -> None:
        """``locked_by`` says who: ``owner`` (the server's project) or ``admin``. The
        owner locking again changes nothing; an admin's lock takes over the owner's."""
        is_owner = instance["project_id"] == context.project_id
        if instance.get("locked") and is_owner:
            return
        self._record_action_start(context, instance, instance_actions.LOCK)
        with compute_utils.EventReporter(context, _ApiEvents(self.db), "api_lock", None,
                                         instance["uuid"]):
            db_api.instance_update(self.db, instance["uuid"], {
                "locked": True, "locked_by": "owner" if is_owner else "admin"})

    @upstream(_API, "API.unlock")
    def unlock(self, context: RequestContext, instance: dict) -> None:
        self._record_action_start(context, instance, instance_actions.UNLOCK)
        with compute_utils.EventReporter(context, _ApiEvents(self.db), "api_unlock", None,
                                         instance["uuid"]):
            db_api.instance_update(self.db, instance["uuid"],
                                   {"locked": False, "locked_by": None})

    @upstream(_API, "API.get_console_output")
    def get_console_output(self, context: RequestContext, instance: dict,
                           tail_length=None) -> str:
        """An RPC call to the instance's host (upstream's ``@check_instance_host``: a
        server with no host has no guest to read)."""
        if not instance.get("host"):
            raise nova_exception.InstanceNotReady(instance_id=instance["uuid"])
        return self.compute_rpcapi.get_console_output(context, instance, tail_length)


class _ApiEvents:
    """nova-api records its own events (``api_lock``) straight in its database, where
    a compute host goes through the conductor: the same two calls ``EventReporter``
    makes."""

    def __init__(self, db: Database):
        self.db = db

    def action_event_start(self, context, values: dict) -> None:
        db_api.action_event_start(self.db, values)

    def action_event_finish(self, context, values: dict) -> None:
        db_api.action_event_finish(self.db, values)


class InstanceActionAPI:
    """Reads an instance's actions and their events (``nova.compute.api.InstanceActionAPI``)."""

    def __init__(self, db: Database, tracer):
        self.db = db
        self.tracer = tracer

    @upstream(_API, "InstanceActionAPI.actions_get")
    def actions_get(self, context: RequestContext, instance: dict) -> list[dict]:
        return db_api.actions_get(self.db, instance["uuid"])

    @upstream(_API, "InstanceActionAPI.action_get_by_request_id")
    def action_get_by_request_id(self, context: RequestContext, instance: dict,
                                 request_id: str) -> dict | None:
        return db_api.action_get_by_request_id(self.db, instance["uuid"], request_id)

    @upstream(_API, "InstanceActionAPI.action_events_get")
    def action_events_get(self, context: RequestContext, instance: dict,
                          action_id: int) -> list[dict]:
        return db_api.action_events_get(self.db, action_id)
