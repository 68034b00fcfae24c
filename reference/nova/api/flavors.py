"""Flavors, the sizes to boot with (``flavors.py``, ``flavors_extraspecs.py``,
``flavor_access.py``).

Anyone reads them: ``GET /flavors`` (id, name, links; ``description`` from
2.55), ``/flavors/detail`` and ``/flavors/{id}`` (the sizes too; ``extra_specs``
from 2.61, for those the ``os-flavor-extra-specs:index`` policy lets read them),
and the extra specs on their own, which is how a client below 2.61 reads them:

    GET /v2.1/flavors/{id}/os-extra_specs          {"extra_specs": {"hw:cpu_policy": ...}}
    GET /v2.1/flavors/{id}/os-extra_specs/{key}    {"hw:cpu_policy": "dedicated"}

Only admins write them (``os-flavor-manage``, ``os-flavor-extra-specs`` and
``os-flavor-access`` policies):

    POST   /v2.1/flavors                              200, the new flavor (id: a UUID if none)
    PUT    /v2.1/flavors/{id}                         its description (2.55)
    DELETE /v2.1/flavors/{id}                         202; servers keep the flavor they embedded
    POST   /v2.1/flavors/{id}/os-extra_specs          {"extra_specs": {...}}, merged
    PUT    /v2.1/flavors/{id}/os-extra_specs/{key}    {key: value}
    DELETE /v2.1/flavors/{id}/os-extra_specs/{key}
    GET    /v2.1/flavors/{id}/os-flavor-access        the projects a private flavor is for
    POST   /v2.1/flavors/{id}/action                  addTenantAccess / removeTenantAccess

A private flavor (``os-flavor-access:is_public: false``) is seen, listed and
booted only by admins and by the projects it was shared with: for anyone else
it does not exist (404, and a boot's 400 "Flavor ... could not be found.").
"""

from __future__ import annotations

import uuid
from urllib.parse import urlencode

from flask import Response, g, jsonify, request

from novalab.reference.common import exception, validation
from novalab.reference.common.db import Database
from novalab.reference.common.wsgi import json_body
from novalab.reference.nova import exception as nova_exception
from novalab.reference.nova import policy
from novalab.reference.nova.api import identity, versions
from novalab.reference.nova.api.actions import ActionResource, action
from novalab.reference.nova.api.schemas import flavors as schema
from novalab.reference.nova.api.schemas.parameter_types import TRUE_STRINGS
from novalab.reference.nova.api.servers import MAX_LIMIT, api_base
from novalab.reference.nova.api.views import flavor_view
from novalab.reference.nova.db import api as db_api
from novalab.tracing.spans import upstream

_FLAVORS = "nova/api/openstack/compute/flavors.py"
_EXTRA_SPECS = "nova/api/openstack/compute/flavors_extraspecs.py"
_ACCESS = "nova/api/openstack/compute/flavor_access.py"
MANAGE_POLICY = "os_compute_api:os-flavor-manage:%s"
EXTRA_SPECS_POLICY = "os_compute_api:os-flavor-extra-specs:%s"
ACCESS_POLICY = "os_compute_api:os-flavor-access"
_FALSE_STRINGS = frozenset(("false", "0", "off", "no", "f", "n"))


def _include_extra_specs() -> bool:
    return versions.is_supported("2.61") and policy.check(
        g.context, EXTRA_SPECS_POLICY % "index")


def _show(flavor: dict, status: int = 200):
    """``ViewBuilder.show``: the flavor in detail, as the request's version shapes it."""
    response = jsonify({"flavor": flavor_view(api_base(), flavor, detail=True,
                                              show_extra_specs=_include_extra_specs())})
    response.status_code = status
    return response


def _parse_is_public(value: str | None) -> bool | None:
    """``_parse_is_public``: none given is public only; "none" is all of them."""
    if value is None:
        return True
    if value.lower() == "none":  # utils.is_none_string
        return None
    if value.lower() in TRUE_STRINGS | {"t", "y"}:  # strutils.bool_from_string, strict
        return True
    if value.lower() in _FALSE_STRINGS:
        return False
    raise exception.ValidationError(detail=f"Invalid is_public filter [{value[:255]}]")


def _int_filter(query: dict, name: str) -> int | None:
    if name not in query:
        return None
    try:
        return int(query[name])
    except ValueError:
        raise exception.ValidationError(
            detail=f"Invalid {name} filter [{query[name][:255]}]") from None


class FlavorsController:
    def __init__(self, db: Database, tracer):
        self.db = db
        self.tracer = tracer

    # Read ------------------------------------------------------------------------------

    def _get_flavors(self) -> tuple[list[dict], int]:
        """``_get_flavors``: what the caller may list, filtered, sorted and paged."""
        validation.validate(request.args.to_dict(flat=False), schema.index_query)
        query = request.args.to_dict()  # the last value of each
        context = g.context
        filters: dict = {}
        if context.is_admin:
            # Only an admin picks public, private (false) or all (none).
            filters["is_public"] = _parse_is_public(query.get("is_public"))
        else:
            filters.update(is_public=True, disabled=False)
        filters["min_memory_mb"] = _int_filter(query, "minRam")
        filters["min_root_gb"] = _int_filter(query, "minDisk")
        limit = min(int(query.get("limit") or 0) or MAX_LIMIT, MAX_LIMIT)
        marker = query.get("marker")
        try:
            flavors = db_api.flavor_get_all(
                self.db, context, sort_key=query.get("sort_key") or "flavorid",
                sort_dir=query.get("sort_dir") or "asc", limit=limit, marker=marker,
                **filters)
        except nova_exception.MarkerNotFound:
            raise exception.ValidationError(detail=f"marker [{marker}] not found") from None
        return flavors, limit

    def _list(self, detail: bool):
        flavors, limit = self._get_flavors()
        extra_specs = detail and _include_extra_specs()
        body = {"flavors": [flavor_view(api_base(), f, detail=detail,
                                        show_extra_specs=extra_specs) for f in flavors]}
        if flavors and len(flavors) == limit:  # _get_collection_links
            query = dict(request.args.items(), limit=str(limit),
                         marker=flavors[-1]["flavorid"])
            path = "flavors/detail" if detail else "flavors"
            body["flavors_links"] = [{"rel": "next",
                                      "href": f"{api_base()}/{path}?{urlencode(query)}"}]
        return jsonify(body)

    @upstream(_FLAVORS, "FlavorsController.index")
    def index(self):
        return self._list(detail=False)

    @upstream(_FLAVORS, "FlavorsController.detail")
    def detail(self):
        return self._list(detail=True)

    @upstream(_FLAVORS, "FlavorsController.show")
    def show(self, flavor_id: str):
        return _show(db_api.flavor_get_by_flavor_id(self.db, flavor_id, g.context))

    # Manage (admins) -------------------------------------------------------------------

    @upstream(_FLAVORS, "FlavorsController.create")
    def create(self):
        context = g.context
        policy.authorize(context, MANAGE_POLICY % "create")
        vals = json_body()["flavor"]  # checked against its version's schema
        flavorid = vals.get("id")
        if not flavorid or flavorid == "auto":
            # flavors.create: none (or novaclient's "auto") and Nova makes one.
            flavorid = str(uuid.uuid4())
        values = {
            "name": vals["name"].strip(),
            "flavorid": str(flavorid),
            "memory_mb": int(vals["ram"]),
            "vcpus": int(vals["vcpus"]),
            "root_gb": int(vals["disk"]),
            "ephemeral_gb": int(vals.get("OS-FLV-EXT-DATA:ephemeral", 0)),
            "swap": int(vals.get("swap", 0)),
            "rxtx_factor": float(vals.get("rxtx_factor", 1.0)),
            "is_public": str(vals.get("os-flavor-access:is_public", True)).lower()
            in TRUE_STRINGS,
            # A description only from 2.55: before, the schema refuses one.
            "description": vals.get("description") if versions.is_supported("2.55")
            else None,
        }
        # Not shared with the creator's project even if private (bug 1209101).
        return _show(db_api.flavor_create(self.db, values))

    @upstream(_FLAVORS, "FlavorsController.update")
    def update(self, flavor_id: str):
        policy.authorize(g.context, MANAGE_POLICY % "update")
        description = json_body()["flavor"]["description"]
        return _show(db_api.flavor_update(self.db, flavor_id, {"description": description}))

    @upstream(_FLAVORS, "FlavorsController.delete")
    def delete(self, flavor_id: str):
        policy.authorize(g.context, MANAGE_POLICY % "delete")
        db_api.flavor_destroy(self.db, flavor_id)
        return Response(status=202)

    # Extra specs -----------------------------------------------------------------------

    @upstream(_EXTRA_SPECS, "FlavorExtraSpecsController.index")
    def extra_specs_index(self, flavor_id: str):
        policy.authorize(g.context, EXTRA_SPECS_POLICY % "index")
        flavor = db_api.flavor_get_by_flavor_id(self.db, flavor_id, g.context)
        return jsonify({"extra_specs": flavor["extra_specs"]})

    @upstream(_EXTRA_SPECS, "FlavorExtraSpecsController.show")
    def extra_specs_show(self, flavor_id: str, key: str):
        policy.authorize(g.context, EXTRA_SPECS_POLICY % "show")
        flavor = db_api.flavor_get_by_flavor_id(self.db, flavor_id, g.context)
        if key not in flavor["extra_specs"]:
            raise exception.NotFound(
                f"Flavor {flavor_id} has no extra specs with key {key[:255]}.")
        return jsonify({key: flavor["extra_specs"][key]})

    @staticmethod
    def _check_extra_specs_value(specs: dict) -> dict:
        """Numbers are stored as their string, at most 255 characters of it."""
        checked = {}
        for key, value in specs.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                value = str(value)
                if len(value) > 255:
                    raise exception.ValidationError(
                        detail="extra_specs value has more than 255 characters.")
            checked[key] = value
        return checked

    @upstream(_EXTRA_SPECS, "FlavorExtraSpecsController.create")
    def extra_specs_create(self, flavor_id: str):
        context = g.context
        policy.authorize(context, EXTRA_SPECS_POLICY % "create")
        body = json_body()
        specs = self._check_extra_specs_value(body["extra_specs"])
        db_api.flavor_get_by_flavor_id(self.db, flavor_id, context)  # common.get_flavor
        db_api.flavor_extra_specs_update_or_create(self.db, flavor_id, specs)
        return jsonify(body)  # as sent (200, though it created them)

    @upstream(_EXTRA_SPECS, "FlavorExtraSpecsController.update")
    def extra_specs_update(self, flavor_id: str, key: str):
        context = g.context
        policy.authorize(context, EXTRA_SPECS_POLICY % "update")
        body = json_body()
        specs = self._check_extra_specs_value(body)
        if key not in body:
            raise exception.ValidationError(detail="Request body and URI mismatch")
        db_api.flavor_get_by_flavor_id(self.db, flavor_id, context)
        db_api.flavor_extra_specs_update_or_create(self.db, flavor_id, specs)
        return jsonify(body)

    @upstream(_EXTRA_SPECS, "FlavorExtraSpecsController.delete")
    def extra_specs_delete(self, flavor_id: str, key: str):
        context = g.context
        policy.authorize(context, EXTRA_SPECS_POLICY % "delete")
        db_api.flavor_get_by_flavor_id(self.db, flavor_id, context)
        db_api.flavor_extra_specs_delete(self.db, flavor_id, key)
        return Response(status=200)  # 200 and no body, as upstream

    # Access to private flavors ---------------------------------------------------------

    @staticmethod
    def _marshall_flavor_access(flavor_id: str, projects: list[str]):
        return jsonify({"flavor_access": [{"flavor_id": flavor_id, "tenant_id": project}
                                          for project in projects]})

    @upstream(_ACCESS, "FlavorAccessController.index")
    def access_index(self, flavor_id: str):
        context = g.context
        policy.authorize(context, ACCESS_POLICY)
        flavor = db_api.flavor_get_by_flavor_id(self.db, flavor_id, context)
        if flavor["is_public"]:
            raise exception.NotFound("Access list not available for public flavors.")
        return self._marshall_flavor_access(
            flavor["flavorid"], db_api.flavor_access_get_by_flavor_id(self.db, flavor_id))

    @action("addTenantAccess", schema.add_tenant_access)
    @upstream(_ACCESS, "FlavorActionController._add_tenant_access")
    def _add_tenant_access(self, flavor_id: str, body: dict):
        context = g.context
        policy.authorize(context, ACCESS_POLICY + ":add_tenant_access")
        tenant = identity.verify_project_id(body["addTenantAccess"]["tenant"])
        flavor = db_api.flavor_get_by_flavor_id(self.db, flavor_id, context)
        if versions.is_supported("2.7") and flavor["is_public"]:
            raise exception.Conflict("Can not add access to a public flavor.")
        return self._marshall_flavor_access(
            flavor["flavorid"], db_api.flavor_access_add(self.db, flavor_id, tenant))

    @action("removeTenantAccess", schema.remove_tenant_access)
    @upstream(_ACCESS, "FlavorActionController._remove_tenant_access")
    def _remove_tenant_access(self, flavor_id: str, body: dict):
        context = g.context
        policy.authorize(context, ACCESS_POLICY + ":remove_tenant_access")
        # Whether the project exists does not matter: its row goes either way.
        tenant = body["removeTenantAccess"]["tenant"]
        flavor = db_api.flavor_get_by_flavor_id(self.db, flavor_id, context)
        return self._marshall_flavor_access(
            flavor["flavorid"], db_api.flavor_access_remove(self.db, flavor_id, tenant))


def register(app, controller: FlavorsController) -> None:
    def rule(path, endpoint, view, methods=("GET",)):
        app.add_url_rule(f"/v2.1/flavors{path}", endpoint, view, methods=list(methods))

    rule("", "flavors_index", controller.index)
    rule("", "flavors_create", versions.schemas(schema.CREATE)(controller.create), ["POST"])
    rule("/detail", "flavors_detail", controller.detail)
    rule("/<flavor_id>", "flavors_show", controller.show)
    rule("/<flavor_id>", "flavors_update",
         versions.min_version("2.55")(versions.schemas(schema.UPDATE)(controller.update)),
         ["PUT"])
    rule("/<flavor_id>", "flavors_delete", controller.delete, ["DELETE"])
    rule("/<flavor_id>/os-extra_specs", "flavors_extra_specs_index",
         controller.extra_specs_index)
    rule("/<flavor_id>/os-extra_specs", "flavors_extra_specs_create",
         validation.schema(schema.extra_specs_create)(controller.extra_specs_create),
         ["POST"])
    rule("/<flavor_id>/os-extra_specs/<key>", "flavors_extra_specs_show",
         controller.extra_specs_show)
    rule("/<flavor_id>/os-extra_specs/<key>", "flavors_extra_specs_update",
         validation.schema(schema.extra_specs_update)(controller.extra_specs_update), ["PUT"])
    rule("/<flavor_id>/os-extra_specs/<key>", "flavors_extra_specs_delete",
         controller.extra_specs_delete, ["DELETE"])
    rule("/<flavor_id>/os-flavor-access", "flavors_access_index", controller.access_index)
    # POST /flavors/{id}/action: the flavor's own actions, not the servers'.
    resource = ActionResource(controller)

    def flavor_action(flavor_id: str):
        return resource.dispatch(flavor_id)

    flavor_action.body_schema = resource.body_schema
    rule("/<flavor_id>/action", "flavors_action", flavor_action, ["POST"])
