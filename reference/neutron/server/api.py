"""neutron-server's REST API v2.0: networks, subnets and ports behind token auth.

The shapes are Neutron's: ``{"port": {...}}`` in and out, lists as
``{"ports": [...]}`` filtered by any attribute given in the query string
(``?device_id=X&network_id=Y``, repeated for "any of"; ``fixed_ips=ip_address=...``)
and trimmed with ``?fields=id&fields=name``. Every error is a
``{"NeutronError": {"type", "message", "detail"}}`` body with the matching status.
"""

from __future__ import annotations

from flask import Flask, g, jsonify, request

from novalab.reference.common import validation
from novalab.reference.common.auth_token import AuthProtocol
from novalab.reference.common.wsgi import install_common_handlers, json_body
from novalab.reference.neutron import exceptions as n_exc
from novalab.reference.neutron.server import attributes, extensions
from novalab.reference.neutron.server import quotas as neutron_quotas
from novalab.reference.neutron.server.plugin import Ml2Plugin
from novalab.tracing.http import instrument_flask

# Query parameters that are not attribute filters.
NON_FILTERS = {"fields", "limit", "marker", "sort_key", "sort_dir", "page_reverse"}
HTTP_TYPES = {400: "HTTPBadRequest", 401: "HTTPUnauthorized", 403: "HTTPForbidden",
              404: "HTTPNotFound", 405: "HTTPMethodNotAllowed", 409: "HTTPConflict",
              415: "HTTPUnsupportedMediaType", 503: "HTTPServiceUnavailable"}


def neutron_fault(code: int, message: str, error_type: str | None = None):
    response = jsonify({"NeutronError": {
        "type": error_type or HTTP_TYPES.get(code, "HTTPInternalServerError"),
        "message": message, "detail": ""}})
    response.status_code = code
    return response


def _filters() -> dict[str, list[str]]:
    return {key: request.args.getlist(key) for key in request.args if key not in NON_FILTERS}


def _fields(item: dict) -> dict:
    wanted = request.args.getlist("fields")
    return {k: v for k, v in item.items() if k in wanted} if wanted else item


def create_app(plugin: Ml2Plugin, auth: AuthProtocol, tracer_provider=None) -> Flask:
    app = Flask("neutron-server")
    if tracer_provider is not None:
        # First, so the SERVER span also covers authentication.
        instrument_flask(app, tracer_provider)
    install_common_handlers(app, fault=neutron_fault)
    auth.install(app, public_paths=("",))

    @app.errorhandler(n_exc.NeutronException)
    def _neutron_error(exc: n_exc.NeutronException):
        return neutron_fault(exc.code, exc.msg, type(exc).__name__)

    @app.get("/")
    def versions():
        base = request.host_url.rstrip("/")
        return jsonify({"versions": [{"id": "v2.0", "status": "CURRENT", "links": [
            {"href": f"{base}/v2.0/", "rel": "self"}]}]})

    @app.get("/v2.0")
    @app.get("/v2.0/")
    def resources():
        base = request.host_url.rstrip("/") + "/v2.0"
        return jsonify({"resources": [
            {"name": name, "collection": f"{name}s",
             "links": [{"href": f"{base}/{name}s", "rel": "self"}]}
            for name in ("network", "subnet", "port", "quota")] + [
            {"name": name, "collection": f"{name}s",
             "links": [{"href": f"{base}/{name.replace('_', '-')}s", "rel": "self"}]}
            for name in ("security_group", "security_group_rule")]})

    # /v2.0/extensions, /v2.0/agents, and the 404s of extensions not loaded.
    extensions.register(app, plugin, _fields, _filters)

    def register(resource: str, create, show, listing, update, remove, path: str = ""):
        """CRUD of ``resource`` under ``/v2.0/<path>`` (default: the plural); no PUT
        where ``update`` is None (security group rules cannot be changed)."""
        collection = f"/v2.0/{path or resource + 's'}"
        item = f"{collection}/<item_id>"

        def index():
            return jsonify({f"{resource}s": [_fields(x) for x in listing(g.context, _filters())]})

        def post():
            attrs = json_body()[resource]
            attributes.enforce(g.context, resource, "POST", attrs)
            project = attrs.get("project_id") or attrs.get("tenant_id") or g.context.project_id
            if project:
                quotas.check_deltas(project, {resource: 1})
            response = jsonify({resource: create(g.context, attrs)})
            response.status_code = 201
            return response

        def get(item_id):
            return jsonify({resource: _fields(show(g.context, item_id))})

        def put(item_id):
            attrs = json_body()[resource]
            attributes.enforce(g.context, resource, "PUT", attrs)
            return jsonify({resource: update(g.context, item_id, attrs)})

        def delete(item_id):
            remove(g.context, item_id)
            return "", 204

        app.add_url_rule(collection, f"{resource}_index", index, methods=["GET"])
        # The attribute map is the one declaration: schema, allowed attributes, policy.
        post = validation.schema(attributes.to_json_schema(resource, "POST"),
                                 error=n_exc.HTTPBadRequest)(post)
        if update is not None:
            put = validation.schema(attributes.to_json_schema(resource, "PUT"),
                                    error=n_exc.HTTPBadRequest)(put)
        app.add_url_rule(collection, f"{resource}_create", post, methods=["POST"])
        app.add_url_rule(item, f"{resource}_show", get, methods=["GET"])
        if update is not None:
            app.add_url_rule(item, f"{resource}_update", put, methods=["PUT"])
        app.add_url_rule(item, f"{resource}_delete", delete, methods=["DELETE"])

    quotas = neutron_quotas.network_quotas(plugin.db)
    plugin.quotas = quotas  # a new group's template rules are checked against it
    neutron_quotas.register(app, quotas)
    register("network", plugin.create_network, plugin.get_network, plugin.get_networks,
             plugin.update_network, plugin.delete_network)
    register("subnet", plugin.create_subnet, plugin.get_subnet, plugin.get_subnets,
             plugin.update_subnet, plugin.delete_subnet)
    register("port", plugin.create_port, plugin.get_port, plugin.get_ports,
             plugin.update_port, plugin.delete_port)
    # The security-group extension.
    register("security_group", plugin.create_security_group, plugin.get_security_group,
             plugin.get_security_groups, plugin.update_security_group,
             plugin.delete_security_group, path="security-groups")
    register("security_group_rule", plugin.create_security_group_rule,
             plugin.get_security_group_rule, plugin.get_security_group_rules, None,
             plugin.delete_security_group_rule, path="security-group-rules")
    return app
