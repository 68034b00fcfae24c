"""The servers resource (``nova/api/openstack/compute/servers.py``).

``ServersController.create`` is where a boot enters Nova: validate the body
against the schema, check policy, resolve the flavor, hand over to
``compute_api.create`` and answer ``202 Accepted`` with the new server's id. The
build has not happened yet; the client polls ``GET /servers/{id}``.

``_create_image`` is the ``createImage`` action (``POST /servers/{id}/action``,
see ``actions.py``): a snapshot of the server into a new Glance image, answered
``202`` with the image's URL in ``Location`` (below 2.45) or its id in the body
(``{"image_id": ...}``, from 2.45).

Each body is checked against the schema of the request's microversion
(``schemas/servers.py``), and each view shows what that version shows
(``views.py``; docs/nova.md has the table).
"""

from __future__ import annotations

from urllib.parse import urlencode

from flask import Response, g, jsonify, request
from opentelemetry import trace

from novalab.reference.common import exception, validation
from novalab.reference.common.db import Database
from novalab.reference.common.wsgi import json_body
from novalab.reference.nova import policy
from novalab.reference.nova.api import search_opts, versions, views
from novalab.reference.nova.api.actions import (
    action,
    raise_http_conflict_for_instance_invalid_state,
)
from novalab.reference.nova.api.schemas import servers as schema
from novalab.reference.nova.api.schemas.parameter_types import is_true
from novalab.reference.nova.compute import instance_actions
from novalab.reference.nova.compute.api import API as ComputeAPI
from novalab.reference.nova.db import api as db_api
from novalab.reference.nova.servicegroup import service_is_up
from novalab.tracing import attributes as attr
from novalab.tracing.spans import set_instance_attributes, upstream

_SERVERS = "nova/api/openstack/compute/servers.py"
# CONF.api.max_limit: the most items one page of a list answers.
MAX_LIMIT = 1000


def api_base() -> str:
    return request.host_url.rstrip("/") + "/v2.1"


class ServersController:
    def __init__(self, db: Database, compute_api: ComputeAPI, tracer):
        self.db = db
        self.compute_api = compute_api
        self.tracer = tracer

    @upstream(_SERVERS, "ServersController.create")
    def create(self):
        context = g.context
        server = json_body()["server"]  # checked against schema.CREATE
        policy.authorize(context, "os_compute_api:servers:create",
                         {"project_id": context.project_id})
        self._refuse_device_tags(server)
        flavor = self._get_flavor(server["flavorRef"])
        image_ref = self._boot_image(server)
        mappings = self._block_device_mapping(server, image_ref)
        boots_from_volume = any(m["boot_index"] == 0 and m["destination_type"] == "volume"
                                for m in mappings)
        min_count = int(server.get("min_count", 1))  # 1..2**31-1 by the schema
        max_count = int(server.get("max_count", min_count))
        if min_count > max_count:
            raise exception.ValidationError(
                detail="min_count must be <= max_count")
        networks = self._requested_networks(server.get("networks"))
        # Names (or ids), each once (upstream dedupes through a set).
        security_groups = list(dict.fromkeys(
            sg["name"] for sg in server.get("security_groups") or [] if sg.get("name")))
        instances = self.compute_api.create(
            context, flavor, "" if boots_from_volume else image_ref,
            boot_image=image_ref, block_device_mapping=mappings,
            display_name=server["name"],
            min_count=min_count, max_count=max_count, metadata=server.get("metadata"),
            key_name=server.get("key_name"), user_data=server.get("user_data"),
            availability_zone=server.get("availability_zone"), requested_networks=networks,
            description=server.get("description"), tags=server.get("tags"),
            security_groups=security_groups)
        first = instances[0]
        # What a trace is found by: the server's id and name, and what was asked of it.
        span = trace.get_current_span()
        span.set_attribute(attr.NOVA_INSTANCE_UUID, first["uuid"])
        span.set_attribute(attr.NOVA_INSTANCE_DISPLAY_NAME, first["display_name"])
        span.set_attribute(attr.NOVA_INSTANCE_ACTION, instance_actions.CREATE)
        # ViewBuilder.create: the id, links and disk config (no name), and the groups
        # as asked (``default`` if none). Upstream also answers adminPass; novalab
        # sets no guest password, so it does not claim one.
        view = {"id": first["uuid"], "links": views.server_summary(api_base(), first)["links"],
                "OS-DCF:diskConfig": server.get("OS-DCF:diskConfig", "MANUAL"),
                "security_groups": server.get("security_groups", [{"name": "default"}])}
        response = jsonify({"server": view})
        response.status_code = 202
        response.headers["Location"] = view["links"][0]["href"]
        return response

    @staticmethod
    def _requested_networks(networks) -> list[dict] | None:
        """``_get_requested_networks``: a list as given; from 2.37 also ``"none"`` (no
        network at all) or ``"auto"`` (the one network the project can use, as for
        no list below 2.37), as a request naming Nova's special network ids."""
        if networks in ("none", "auto"):
            return [{"network_id": networks}]
        return networks

    @staticmethod
    def _refuse_device_tags(server: dict) -> None:
        """Device tags (2.32, 2.42) are for the guest's device metadata, which novalab's
        metadata service does not serve: refused, rather than accepted and ignored."""
        networks = server.get("networks")
        items = (networks if isinstance(networks, list) else []) + \
            (server.get("block_device_mapping_v2") or [])
        if any("tag" in item for item in items):
            raise exception.ValidationError(
                detail="Device tags (a 'tag' on a network or block device) are for the "
                       "guest's device metadata, which novalab does not implement (see "
                       "README.md, \"Left out, on purpose\").")

    @staticmethod
    def _boot_image(server: dict) -> str:
        """The image to boot from: ``imageRef``, else an image mapping at boot index 0.

        Clients such as the openstack CLI send both for an image boot; a boot from
        a volume has no image at all ("").
        """
        image_ref = server.get("imageRef") or ""
        for bdm in server.get("block_device_mapping_v2") or []:
            if bdm.get("source_type") == "image" and str(bdm.get("boot_index")) == "0":
                if image_ref and bdm.get("uuid") != image_ref and \
                        bdm.get("destination_type", "local") == "local":
                    raise exception.ValidationError(
                        detail="imageRef and the boot block device mapping name different "
                               "images.")
                image_ref = image_ref or bdm.get("uuid") or ""
        return image_ref

    @staticmethod
    def _block_device_mapping(server: dict, image_ref: str) -> list[dict]:
        """The mappings as Nova stores them; a plain image boot is one image->local mapping."""
        mappings = []
        for bdm in server.get("block_device_mapping_v2") or []:
            source = bdm.get("source_type")
            dest = bdm.get("destination_type") or ("local" if source == "image" else "volume")
            boot_index = bdm.get("boot_index")
            boot_index = int(boot_index) if boot_index not in (None, "") else None
            if source in ("volume", "snapshot") and dest != "volume":
                raise exception.ValidationError(
                    detail=f"A {source} can only be mapped to destination_type volume")
            if source == "snapshot":
                raise exception.ValidationError(detail="Volume snapshots are not supported.")
            if source == "blank" and dest == "volume" and not bdm.get("volume_size"):
                raise exception.ValidationError(detail="A blank volume needs a volume_size.")
            if source == "image" and dest == "local" and boot_index != 0:
                raise exception.ValidationError(
                    detail="An image can only be mapped locally as the boot disk.")
            delete = is_true(bdm.get("delete_on_termination", False))
            mappings.append({
                "source_type": source, "destination_type": dest, "boot_index": boot_index,
                "device_name": bdm.get("device_name"),
                "image_id": bdm.get("uuid") if source == "image" else None,
                "volume_id": bdm.get("uuid") if source == "volume" else None,
                "volume_size": int(bdm["volume_size"]) if bdm.get("volume_size") else None,
                "delete_on_termination": delete})
        if not any(m["boot_index"] == 0 for m in mappings):
            if not image_ref:
                raise exception.ValidationError(detail="Missing imageRef attribute")
            mappings.insert(0, {"source_type": "image", "destination_type": "local",
                                "boot_index": 0, "image_id": image_ref,
                                "delete_on_termination": True})
        return mappings

    def _get_flavor(self, flavor_ref) -> dict:
        """The flavor asked for, as the caller may see it: a private flavor their
        project was not given, or a deleted one, is not found (400)."""
        flavor_id = str(flavor_ref).rstrip("/").rsplit("/", 1)[-1]
        try:
            return db_api.flavor_get_by_flavor_id(self.db, flavor_id, g.context)
        except exception.FlavorNotFound as exc:
            raise exception.Invalid(f"Flavor {flavor_id} could not be found.") from exc

    @upstream(_SERVERS, "ServersController.show")
    def show(self, server_id: str):
        context = g.context
        instance = self.compute_api.get(context, server_id)
        policy.authorize(context, "os_compute_api:servers:show",
                         {"project_id": instance["project_id"]})
        # What this poll saw (steps 55-58): the states a client watching --wait reads.
        set_instance_attributes(trace.get_current_span(), instance)
        return jsonify({"server": self._details([instance])[0]})

    def _details(self, instances: list[dict]) -> list[dict]:
        """Detail views, with faults, addresses and volumes read in one query each."""
        context = g.context
        uuids = [i["uuid"] for i in instances]
        faults = self.compute_api.faults_for(instances)
        caches = db_api.instance_info_cache_get_by_instances(self.db, uuids)
        bdms = db_api.block_device_mapping_get_all_by_instances(self.db, uuids)
        is_admin = policy.check(context, "os_compute_api:os-extended-server-attributes")
        show_extra_specs = versions.is_supported("2.47") and policy.check(
            context, "os_compute_api:servers:show:flavor-extra-specs")
        statuses = self._host_statuses(instances)
        servers = [views.server_detail(api_base(), i, faults.get(i["uuid"]), is_admin=is_admin,
                                       network_info=caches.get(i["uuid"]),
                                       bdms=bdms[i["uuid"]], show_extra_specs=show_extra_specs,
                                       host_status=statuses.get(i["uuid"]))
                   for i in instances]
        self._add_security_grps(servers)
        return servers

    @upstream("nova/api/openstack/compute/views/servers.py", "ViewBuilder._add_security_grps")
    def _add_security_grps(self, servers: list[dict]) -> None:
        """Each server's groups by name, from its ports in Neutron (one query for all);
        a server whose ports are in none has no ``security_groups`` key."""
        sg_api = self.compute_api.security_group_api
        if not servers or sg_api is None:
            return
        bindings = sg_api.get_instances_security_groups_bindings(
            g.context, [s["id"] for s in servers])
        for server in servers:
            if bindings.get(server["id"]):
                server["security_groups"] = bindings[server["id"]]

    def _host_statuses(self, instances: list[dict]) -> dict[str, str]:
        """``host_status`` (2.16) of each server the policies let the caller see it of:
        any status for admins (``show:host_status``), or only UNKNOWN
        (``show:host_status:unknown-only``)."""
        if not versions.is_supported("2.16") or not instances:
            return {}
        if policy.check(g.context, "os_compute_api:servers:show:host_status"):
            unknown_only = False
        elif policy.check(g.context, "os_compute_api:servers:show:host_status:unknown-only"):
            unknown_only = True
        else:
            return {}
        services = {s["host"]: s for s in db_api.service_get_all(self.db, "nova-compute")}
        statuses = {i["uuid"]: views.host_status(i, services, service_is_up)
                    for i in instances}
        return {uuid: status for uuid, status in statuses.items()
                if not unknown_only or status == "UNKNOWN"}

    def _list(self, detail: bool):
        context = g.context
        action = "os_compute_api:servers:detail" if detail else "os_compute_api:servers:index"
        policy.authorize(context, action)
        query = request.args.to_dict()
        validation.validate(query, _QUERY)
        all_tenants = "all_tenants" in query and \
            query["all_tenants"].lower() in ("1", "true", "")
        if all_tenants:
            policy.authorize(context, f"{action}:get_all_tenants")
        # common.get_limit_and_marker: no limit (or 0) is max_limit, and none is more.
        limit = min(int(query.get("limit") or 0) or MAX_LIMIT, MAX_LIMIT)
        match = search_opts.build(
            request.args, is_admin=context.is_admin,
            flavor_exists=self._flavor_exists, addresses=self._addresses)
        if match is search_opts.NOTHING:
            return jsonify({"servers": []})
        instances = self.compute_api.get_all(context, all_tenants=all_tenants, limit=limit,
                                             marker=query.get("marker"), match=match)
        if detail:
            servers = self._details(instances)
        else:
            servers = [views.server_summary(api_base(), i) for i in instances]
        body = {"servers": servers}
        if instances and len(instances) == limit:
            path = "servers/detail" if detail else "servers"
            query.update(limit=str(limit), marker=instances[-1]["uuid"])
            body["servers_links"] = [{"rel": "next", "href":
                                      f"{api_base()}/{path}?{urlencode(query)}"}]
        return jsonify(body)

    def _flavor_exists(self, flavor_id: str) -> bool:
        """Whether the caller may see the flavor (upstream looks it up in their context:
        a private flavor they lost access to filters to nothing)."""
        try:
            db_api.flavor_get_by_flavor_id(self.db, flavor_id, g.context)
        except exception.FlavorNotFound:
            return False
        return True

    def _addresses(self, instance: dict, ip_version: int) -> list[str]:
        """The server's fixed IPs of one version, from its network info cache."""
        caches = db_api.instance_info_cache_get_by_instances(self.db, [instance["uuid"]])
        return [ip["address"] for vif in caches.get(instance["uuid"]) or []
                for subnet in (vif.get("network") or {}).get("subnets", [])
                for ip in subnet.get("ips", []) if ip.get("version", 4) == ip_version]

    @upstream(_SERVERS, "ServersController.index")
    def index(self):
        return self._list(detail=False)

    @upstream(_SERVERS, "ServersController.detail")
    def detail(self):
        return self._list(detail=True)

    @upstream(_SERVERS, "ServersController.update")
    def update(self, server_id: str):
        """``PUT /servers/{id}``: a new name, and from 2.19 a new description. Below 2.75
        the answer is the show view without the extended attributes, as upstream."""
        context = g.context
        body = json_body()["server"]  # checked against schema.UPDATE
        instance = self.compute_api.get(context, server_id)
        policy.authorize(context, "os_compute_api:servers:update",
                         {"project_id": instance["project_id"]})
        updates = {}
        if "name" in body:
            updates["display_name"] = body["name"]
        if "description" in body:
            updates["display_description"] = body["description"]
        if "OS-DCF:diskConfig" in body and body["OS-DCF:diskConfig"] != "MANUAL":
            raise exception.ValidationError(
                detail="OS-DCF:diskConfig AUTO (resizing the guest's partition) is not "
                       "implemented by novalab (see README.md, \"Left out, on purpose\").")
        if updates:
            instance = self.compute_api.update_instance(context, instance, updates)
        caches = db_api.instance_info_cache_get_by_instances(self.db, [instance["uuid"]])
        show_extra_specs = versions.is_supported("2.47") and policy.check(
            context, "os_compute_api:servers:show:flavor-extra-specs",
            {"project_id": instance["project_id"]})
        return jsonify({"server": views.server_update(
            api_base(), instance, network_info=caches.get(instance["uuid"]),
            show_extra_specs=show_extra_specs)})

    @upstream(_SERVERS, "ServersController.delete")
    def delete(self, server_id: str):
        context = g.context
        instance = self.compute_api.get(context, server_id)
        policy.authorize(context, "os_compute_api:servers:delete",
                         {"project_id": instance["project_id"]})
        self.compute_api.delete(context, instance)
        return "", 204


    @action("createImage", schema.create_image)
    @upstream(_SERVERS, "ServersController._create_image")
    def _create_image(self, server_id: str, body: dict):
        context = g.context
        instance = self.compute_api.get(context, server_id)
        policy.authorize(context, "os_compute_api:servers:create_image",
                         {"project_id": instance["project_id"]})
        entity = body["createImage"]
        metadata = entity.get("metadata") or {}
        # Below 2.39 the image's metadata counts against the metadata_items quota.
        self.compute_api._check_metadata_properties_quota(context, metadata)
        span = trace.get_current_span()
        span.set_attribute(attr.NOVA_INSTANCE_UUID, instance["uuid"])
        span.set_attribute(attr.NOVA_INSTANCE_ACTION, instance_actions.CREATE_IMAGE)
        if self.compute_api._is_volume_backed_instance(instance):
            # Upstream snapshots each volume in Cinder (snapshot_volume_backed).
            raise exception.ValidationError(
                detail="Snapshots of a server booted from a volume are volume snapshots, "
                       "which novalab does not implement (see README.md, \"Left out, on "
                       "purpose\").")
        try:
            image = self.compute_api.snapshot(context, instance, entity["name"],
                                              extra_properties=metadata)
        except exception.InstanceInvalidState as exc:
            raise_http_conflict_for_instance_invalid_state(exc, "createImage", server_id)
        if versions.is_supported("2.45"):
            response = jsonify({"image_id": image["id"]})
            response.status_code = 202
            return response
        response = Response(status=202)
        response.headers["Location"] = self.compute_api.image_api.generate_image_url(
            image["id"])
        return response


_QUERY = validation.validator_for(schema.query_params_v21)


def register(app, controller: ServersController) -> None:
    app.add_url_rule("/v2.1/servers", "servers_create",
                     versions.schemas(schema.CREATE)(controller.create),
                     methods=["POST"])
    app.add_url_rule("/v2.1/servers/<server_id>", "servers_update",
                     versions.schemas(schema.UPDATE)(controller.update), methods=["PUT"])
    app.add_url_rule("/v2.1/servers", "servers_index", controller.index, methods=["GET"])
    app.add_url_rule("/v2.1/servers/detail", "servers_detail", controller.detail,
                     methods=["GET"])
    app.add_url_rule("/v2.1/servers/<server_id>", "servers_show", controller.show,
                     methods=["GET"])
    app.add_url_rule("/v2.1/servers/<server_id>", "servers_delete", controller.delete,
                     methods=["DELETE"])
