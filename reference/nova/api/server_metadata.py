"""A server's metadata (``nova/api/openstack/compute/server_metadata.py``).

    GET    /v2.1/servers/{id}/metadata        {"metadata": {...}}       openstack server show
    POST   /v2.1/servers/{id}/metadata        {"metadata": {...}} -> 200 (merge)
                                                             openstack server set --property
    PUT    /v2.1/servers/{id}/metadata        {"metadata": {...}} -> 200 (replace it all)
    GET    /v2.1/servers/{id}/metadata/{key}  {"meta": {key: value}}, or 404
    PUT    /v2.1/servers/{id}/metadata/{key}  {"meta": {key: value}} -> 200 (the key must match)
    DELETE /v2.1/servers/{id}/metadata/{key}  -> 204, or 404      openstack server unset --property

The same key/value pairs a server is created with (``metadata`` in the create body),
stored on the instance where it lives (its cell on the modern topology) and served to
the guest as ``meta`` in ``openstack/latest/meta_data.json``. Changing them goes
through ``compute/api.py``: a locked server refuses non-admins (409), the server must
be ACTIVE, PAUSED, SUSPENDED or STOPPED (409 otherwise), and the result must fit the
``metadata_items`` quota (128 by default; 403 beyond). Readers of the server's project
read, members change (``server-metadata`` policies). Upstream answers 200, not 201, to
POST "for backwards compatibility".
"""

from __future__ import annotations

from flask import Response, g, jsonify, request

from novalab.reference.common import exception
from novalab.reference.nova.api import versions
from novalab.reference.nova.api.actions import raise_http_conflict_for_instance_invalid_state
from novalab.reference.nova.api.common import get_authorized_instance
from novalab.reference.nova.api.schemas import server_metadata as schema
from novalab.reference.nova.compute.api import API as ComputeAPI
from novalab.tracing.spans import upstream

_METADATA = "nova/api/openstack/compute/server_metadata.py"


class ServerMetadataController:
    def __init__(self, compute_api: ComputeAPI, tracer):
        self.compute_api = compute_api
        self.tracer = tracer

    def _server(self, server_id: str, rule: str) -> dict:
        """``common.get_instance`` (another project's server is a 404), then the policy
        against the server's project."""
        return get_authorized_instance(self.compute_api, server_id,
                                       f"os_compute_api:server-metadata:{rule}")

    def _get_metadata(self, server: dict) -> dict:
        return self.compute_api.get_instance_metadata(g.context, server)

    def _update_instance_metadata(self, server: dict, metadata: dict, delete: bool) -> dict:
        """OverQuota is a 403 and InstanceIsLocked a 409 as they stand; a wrong state
        is the 409 naming it."""
        try:
            return self.compute_api.update_instance_metadata(g.context, server, metadata,
                                                             delete)
        except exception.InstanceInvalidState as exc:
            raise_http_conflict_for_instance_invalid_state(exc, "update metadata",
                                                           server["uuid"])

    @upstream(_METADATA, "ServerMetadataController.index")
    def index(self, server_id: str):
        server = self._server(server_id, "index")
        return jsonify({"metadata": self._get_metadata(server)})

    @upstream(_METADATA, "ServerMetadataController.create")
    def create(self, server_id: str):
        metadata = request.get_json(force=True)["metadata"]   # checked: schema.create
        server = self._server(server_id, "create")
        return jsonify({"metadata": self._update_instance_metadata(server, metadata,
                                                                   delete=False)})

    @upstream(_METADATA, "ServerMetadataController.update")
    def update(self, server_id: str, key: str):
        meta_item = request.get_json(force=True)["meta"]      # checked: schema.update
        server = self._server(server_id, "update")
        if key not in meta_item:
            raise exception.Invalid("Request body and URI mismatch")
        self._update_instance_metadata(server, meta_item, delete=False)
        return jsonify({"meta": meta_item})

    @upstream(_METADATA, "ServerMetadataController.update_all")
    def update_all(self, server_id: str):
        metadata = request.get_json(force=True)["metadata"]   # checked: schema.update_all
        server = self._server(server_id, "update_all")
        return jsonify({"metadata": self._update_instance_metadata(server, metadata,
                                                                   delete=True)})

    @upstream(_METADATA, "ServerMetadataController.show")
    def show(self, server_id: str, key: str):
        server = self._server(server_id, "show")
        data = self._get_metadata(server)
        if key not in data:
            raise exception.NotFound("Metadata item was not found")
        return jsonify({"meta": {key: data[key]}})

    @upstream(_METADATA, "ServerMetadataController.delete")
    def delete(self, server_id: str, key: str):
        server = self._server(server_id, "delete")
        if key not in self._get_metadata(server):
            raise exception.NotFound("Metadata item was not found")
        try:
            self.compute_api.delete_instance_metadata(g.context, server, key)
        except exception.InstanceInvalidState as exc:
            raise_http_conflict_for_instance_invalid_state(exc, "delete metadata", server_id)
        return Response(status=204)


def register(app, compute_api: ComputeAPI, tracer) -> None:
    controller = ServerMetadataController(compute_api, tracer)
    prefix = "/v2.1/servers/<server_id>/metadata"
    app.add_url_rule(prefix, "server_metadata_index", controller.index, methods=["GET"])
    app.add_url_rule(prefix, "server_metadata_create",
                     versions.schemas(schema.CREATE)(controller.create), methods=["POST"])
    app.add_url_rule(prefix, "server_metadata_update_all",
                     versions.schemas(schema.UPDATE_ALL)(controller.update_all),
                     methods=["PUT"])
    app.add_url_rule(f"{prefix}/<key>", "server_metadata_show", controller.show,
                     methods=["GET"])
    app.add_url_rule(f"{prefix}/<key>", "server_metadata_update",
                     versions.schemas(schema.UPDATE)(controller.update), methods=["PUT"])
    app.add_url_rule(f"{prefix}/<key>", "server_metadata_delete", controller.delete,
                     methods=["DELETE"])
