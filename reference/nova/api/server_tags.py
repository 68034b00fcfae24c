"""A server's tags (``nova/api/openstack/compute/server_tags.py``, microversion 2.26).

    GET    /v2.1/servers/{id}/tags            {"tags": [...]}          openstack server show
    PUT    /v2.1/servers/{id}/tags            {"tags": [...]} -> 200   (replace them all)
    DELETE /v2.1/servers/{id}/tags            -> 204                   (remove them all)
    GET    /v2.1/servers/{id}/tags/{tag}      -> 204, or 404           (has it?)
    PUT    /v2.1/servers/{id}/tags/{tag}      -> 201 (Location), 204 if already there
                                                            openstack server set --tag
    DELETE /v2.1/servers/{id}/tags/{tag}      -> 204, or 404            server unset --tag

Tags change only while the server is ACTIVE, PAUSED, SUSPENDED or STOPPED (a 409
naming the state otherwise); a server carries at most 50. Reading needs the
server's project reader role, changing its member role (``os-server-tags``
policies). ``GET /servers?tags=...`` filters by them (``search_opts.py``).
Below 2.26 none of these paths exist (404).
"""

from __future__ import annotations

import json

from flask import Response, g, jsonify, request

from novalab.reference.common import exception, validation
from novalab.reference.nova.api import versions
from novalab.reference.nova.api.actions import raise_http_conflict_for_instance_invalid_state
from novalab.reference.nova.api.common import get_authorized_instance
from novalab.reference.nova.api.schemas import server_tags as schema
from novalab.reference.nova.compute import vm_states
from novalab.reference.nova.compute.api import API as ComputeAPI
from novalab.reference.nova.db import api as db_api
from novalab.tracing.spans import upstream

_TAGS = "nova/api/openstack/compute/server_tags.py"
_TAG = validation.validator_for(schema.tag)
_UPDATE = validation.validator_for(schema.update)
_TAGGABLE = (vm_states.ACTIVE, vm_states.PAUSED, vm_states.SUSPENDED, vm_states.STOPPED)


class ServerTagsController:
    def __init__(self, compute_api: ComputeAPI, tracer):
        self.compute_api = compute_api
        self.tracer = tracer

    def _instance(self, server_id: str, rule: str) -> dict:
        return get_authorized_instance(self.compute_api, server_id,
                                       f"os_compute_api:os-server-tags:{rule}")

    def _changeable(self, server_id: str, rule: str, action: str):
        """``_check_instance_in_valid_state``: the instance and the database it lives in."""
        instance = self._instance(server_id, rule)
        if instance["vm_state"] not in _TAGGABLE:
            exc = exception.InstanceInvalidState(attr="vm_state", state=instance["vm_state"],
                                                 instance_uuid=server_id, method=action)
            raise_http_conflict_for_instance_invalid_state(exc, action, server_id)
        api = self.compute_api
        if api.cells is None:
            return instance, api.db
        cell, _found = api._lookup_instance(g.context, server_id)
        return instance, api.cells.target_cell(cell)

    @upstream(_TAGS, "ServerTagsController.index")
    def index(self, server_id: str):
        instance = self._instance(server_id, "index")
        return jsonify({"tags": sorted(instance.get("tags") or [])})

    @upstream(_TAGS, "ServerTagsController.show")
    def show(self, server_id: str, tag: str):
        instance = self._instance(server_id, "show")
        if tag not in (instance.get("tags") or []):
            raise exception.NotFound(f"Server {server_id} has no tag '{tag}'")
        return Response(status=204)

    @upstream(_TAGS, "ServerTagsController.update")
    def update(self, server_id: str, tag: str):
        if request.data:   # no body, or JSON null (schema.update)
            try:
                body = json.loads(request.data)
            except ValueError as exc:
                raise exception.Invalid("Malformed request body") from exc
            validation.validate(body, _UPDATE)
        instance, db = self._changeable(server_id, "update", "update tag")
        try:
            validation.validate(tag, _TAG)
        except exception.ValidationError as exc:
            raise exception.ValidationError(
                detail=f"Tag '{tag}' is invalid. It must be a non empty string without "
                       f"characters '/' and ','. Validation error message: "
                       f"{exc.format_message()}") from exc
        tags = db_api.instance_tag_get_by_instance_uuid(db, server_id)
        if len(tags) >= schema.MAX_TAG_COUNT:
            raise exception.ValidationError(
                detail=f"The number of tags exceeded the per-server limit "
                       f"{schema.MAX_TAG_COUNT}")
        if tag in tags:
            return Response(status=204)
        db_api.instance_tag_add(db, server_id, tag)
        response = Response(status=201)
        response.headers["Location"] = \
            f"{request.host_url.rstrip('/')}/v2.1/servers/{server_id}/tags/{tag}"
        return response

    @upstream(_TAGS, "ServerTagsController.update_all")
    def update_all(self, server_id: str):
        tags = request.get_json(force=True)["tags"]   # checked against schema.update_all
        _instance, db = self._changeable(server_id, "update_all", "update tags")
        return jsonify({"tags": db_api.instance_tag_set(db, server_id, tags)})

    @upstream(_TAGS, "ServerTagsController.delete")
    def delete(self, server_id: str, tag: str):
        _instance, db = self._changeable(server_id, "delete", "delete tag")
        db_api.instance_tag_delete(db, server_id, tag)
        return Response(status=204)

    @upstream(_TAGS, "ServerTagsController.delete_all")
    def delete_all(self, server_id: str):
        _instance, db = self._changeable(server_id, "delete_all", "delete tags")
        db_api.instance_tag_delete_all(db, server_id)
        return Response(status=204)


def register(app, compute_api: ComputeAPI, tracer) -> None:
    controller = ServerTagsController(compute_api, tracer)
    since = versions.min_version("2.26")
    prefix = "/v2.1/servers/<server_id>/tags"
    app.add_url_rule(prefix, "server_tags_index", since(controller.index), methods=["GET"])
    app.add_url_rule(prefix, "server_tags_update_all",
                     since(versions.schemas(schema.UPDATE_ALL)(controller.update_all)),
                     methods=["PUT"])
    app.add_url_rule(prefix, "server_tags_delete_all", since(controller.delete_all),
                     methods=["DELETE"])
    app.add_url_rule(f"{prefix}/<tag>", "server_tags_show", since(controller.show),
                     methods=["GET"])
    update = since(controller.update)
    update.body_schema = schema.update
    app.add_url_rule(f"{prefix}/<tag>", "server_tags_update", update, methods=["PUT"])
    app.add_url_rule(f"{prefix}/<tag>", "server_tags_delete", since(controller.delete),
                     methods=["DELETE"])
