"""``os-keypairs`` (``nova/api/openstack/compute/keypairs.py``): a user's public keys.

``POST /os-keypairs`` imports a public key (``public_key`` in the body) or
generates a pair and answers the private key, once; ``GET`` lists the caller's
key pairs and shows one by name; ``DELETE`` removes one. What each answers
depends on the microversion the request negotiated:

* 2.1: create answers ``200``, delete ``202``, no ``type`` anywhere;
* 2.2: create ``201``, delete ``204``, and ``type`` (``ssh`` or ``x509``) everywhere;
* 2.10: an admin may name another user (``user_id`` in the body, or ``?user_id=``);
* 2.35: the list pages by name (``limit``, ``marker``, a ``next`` link);
* 2.92: ``public_key`` is required: Nova generates no keys any more.

Every body and query string is checked against its version's schema before
any work (``schemas/keypairs.py``). The policy lets anyone act on their own
key pairs and an admin on anyone's (``user_id:%(user_id)s``).
"""

from __future__ import annotations

from urllib.parse import urlencode

from flask import Response, g, jsonify, request

from novalab.reference.common import exception as common_exception
from novalab.reference.common import validation
from novalab.reference.common.wsgi import json_body
from novalab.reference.nova import exception, policy
from novalab.reference.nova.api import versions
from novalab.reference.nova.api.schemas import keypairs as schema
from novalab.reference.nova.compute.keypairs import KEYPAIR_TYPE_SSH, KeypairAPI
from novalab.tracing.spans import upstream

_KEYPAIRS = "nova/api/openstack/compute/keypairs.py"
POLICY_ROOT = "os_compute_api:os-keypairs:%s"
# CONF.api.max_limit: the most key pairs one page answers.
MAX_LIMIT = 1000
# What the views show (views/keypairs.py); ``type`` from 2.2.
_INDEX_PARAMS = ("name", "public_key", "fingerprint")
_CREATE_PARAMS = (*_INDEX_PARAMS, "user_id")
_SHOW_PARAMS = (*_CREATE_PARAMS, "created_at", "deleted", "deleted_at", "id", "updated_at")


def _validated_query(table) -> dict:
    """The query string, each key a list of its values, checked against the schema of
    this request's version (``table``: (first version, schema) pairs in order)."""
    query = request.args.to_dict(flat=False)
    schema_now = [s for first, s in table if versions.parse(first) <= versions.requested()][-1]
    validation.validate(query, schema_now)
    return query


def _time(value) -> str | None:
    """A timestamp as Nova's JSON serializer writes one (``PERFECT_TIME_FORMAT``)."""
    return value.strftime("%Y-%m-%dT%H:%M:%S.%f") if value is not None else None


def _build_keypair(keypair: dict, params) -> dict:
    body = {}
    for param in params:
        value = keypair[param]
        body[param] = _time(value) if param in ("created_at", "updated_at") else value
    return body


class KeypairController:
    def __init__(self, api: KeypairAPI, tracer):
        self.api = api
        self.tracer = tracer

    @upstream(_KEYPAIRS, "KeypairController.create")
    def create(self):
        params = json_body()["keypair"]  # checked against its version's schema
        user_id = params.get("user_id") if versions.is_supported("2.10") else None
        return self._create(params, user_id=user_id, key_type=versions.is_supported("2.2"))

    def _create(self, params: dict, user_id: str | None, key_type: bool):
        context = g.context
        name = params["name"].strip()  # common.normalize_name
        key_type_value = params.get("type", KEYPAIR_TYPE_SSH)
        user_id = user_id or context.user_id
        policy.authorize(context, POLICY_ROOT % "create", {"user_id": user_id})
        if len(user_id) > 255:  # the column's size; no keystone user has such an id
            raise common_exception.ValidationError(
                detail=f"User ID {user_id[:80]!r}... is not a valid user.")
        if "public_key" in params:
            keypair = self.api.import_key_pair(context, user_id, name, params["public_key"],
                                               key_type_value)
            shown = []
        else:
            # From 2.92 the schema requires public_key: only older versions get here.
            keypair, private_key = self.api.create_key_pair(context, user_id, name,
                                                            key_type_value)
            keypair = dict(keypair, private_key=private_key)
            shown = ["private_key"]
        if key_type:
            shown.append("type")
        response = jsonify({"keypair": _build_keypair(keypair, [*shown, *_CREATE_PARAMS])})
        response.status_code = 201 if versions.is_supported("2.2") else 200
        return response

    def _get_user_id(self, query: dict) -> str | None:
        """``?user_id=`` (its first value), read from 2.10 on."""
        if versions.is_supported("2.10") and query.get("user_id"):
            return query["user_id"][0]
        return None

    @upstream(_KEYPAIRS, "KeypairController.delete")
    def delete(self, id: str):  # noqa: A002 - upstream's name for the key pair's name
        query = _validated_query(schema.DELETE_QUERY)
        context = g.context
        user_id = self._get_user_id(query) or context.user_id
        policy.authorize(context, POLICY_ROOT % "delete", {"user_id": user_id})
        self.api.delete_key_pair(context, user_id, id)
        return Response(status=204 if versions.is_supported("2.2") else 202)

    @upstream(_KEYPAIRS, "KeypairController.show")
    def show(self, id: str):  # noqa: A002
        query = _validated_query(schema.SHOW_QUERY)
        context = g.context
        user_id = self._get_user_id(query) or context.user_id
        policy.authorize(context, POLICY_ROOT % "show", {"user_id": user_id})
        keypair = self.api.get_key_pair(context, user_id, id)
        params = (*_SHOW_PARAMS, "type") if versions.is_supported("2.2") else _SHOW_PARAMS
        return jsonify({"keypair": _build_keypair(keypair, params)})

    @upstream(_KEYPAIRS, "KeypairController.index")
    def index(self):
        query = _validated_query(schema.INDEX_QUERY)
        context = g.context
        user_id = self._get_user_id(query) or context.user_id
        policy.authorize(context, POLICY_ROOT % "index", {"user_id": user_id})
        limit = marker = None
        if versions.is_supported("2.35"):
            # common.get_limit_and_marker: the last value of each; max_limit at most.
            limit = min(MAX_LIMIT, int(query["limit"][-1])) if "limit" in query \
                else MAX_LIMIT
            marker = query["marker"][-1] if "marker" in query else None
        try:
            key_pairs = self.api.get_key_pairs(context, user_id, limit=limit, marker=marker)
        except exception.MarkerNotFound as exc:
            raise common_exception.Invalid(exc.format_message()) from exc
        params = (*_INDEX_PARAMS, "type") if versions.is_supported("2.2") else _INDEX_PARAMS
        body = {"keypairs": [{"keypair": _build_keypair(k, params)} for k in key_pairs]}
        if versions.is_supported("2.35") and limit and limit == len(key_pairs):
            body["keypairs_links"] = [{"rel": "next", "href": self._next_link(
                key_pairs[-1]["name"])}]
        return jsonify(body)

    @staticmethod
    def _next_link(marker: str) -> str:
        """``_get_next_link``: this request's parameters, sorted, with the new marker."""
        params = dict(sorted(request.args.items(multi=True)))
        params["marker"] = marker
        return f"{request.host_url.rstrip('/')}/v2.1/os-keypairs?{urlencode(params)}"


def register(app, compute_api, tracer) -> None:
    """The routes, on the compute API's database and quotas."""
    controller = KeypairController(KeypairAPI(compute_api.db, compute_api.quotas, tracer),
                                   tracer)
    app.add_url_rule("/v2.1/os-keypairs", "keypairs_create",
                     versions.schemas(schema.CREATE)(controller.create), methods=["POST"])
    app.add_url_rule("/v2.1/os-keypairs", "keypairs_index", controller.index,
                     methods=["GET"])
    app.add_url_rule("/v2.1/os-keypairs/<id>", "keypairs_show", controller.show,
                     methods=["GET"])
    app.add_url_rule("/v2.1/os-keypairs/<id>", "keypairs_delete", controller.delete,
                     methods=["DELETE"])
