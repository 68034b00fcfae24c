"""Keystone's v3 API in small: version discovery, ``/v3/auth/tokens``, and the
users, projects and grants of :mod:`identity_api`.

``POST`` authenticates (password method, optional project scope) and returns the
token in ``X-Subject-Token`` with the body in the response; ``GET`` lets a service
validate a user's token (the caller authenticates with its own ``X-Auth-Token``);
``DELETE`` revokes.
"""

from __future__ import annotations

from flask import Flask, jsonify, request

from novalab.reference.common import exception, validation
from novalab.reference.common.wsgi import install_common_handlers, json_body, keystone_fault
from novalab.reference.keystone import catalog_api, identity_api, schemas
from novalab.reference.keystone.core import Keystone
from novalab.reference.keystone.identity import IdentityAdmin
from novalab.reference.keystone.policy import ENFORCER, context_of
from novalab.tracing.http import instrument_flask

VERSION = {
    "id": "v3.14",
    "status": "stable",
    "updated": "2020-04-07T00:00:00Z",
    "media-types": [{"base": "application/json",
                     "type": "application/vnd.openstack.identity-v3+json"}],
}


def create_app(keystone: Keystone, tracer_provider=None) -> Flask:
    app = Flask("keystone")
    if tracer_provider is not None:
        # First, so the SERVER span also covers the auth and version hooks below.
        instrument_flask(app, tracer_provider)
    install_common_handlers(app, fault=keystone_fault)

    def version_doc():
        base = request.host_url.rstrip("/")
        return dict(VERSION, links=[{"rel": "self", "href": f"{base}/v3/"}])

    @app.get("/")
    def versions():
        response = jsonify({"versions": {"values": [version_doc()]}})
        response.status_code = 300
        return response

    @app.get("/v3")
    @app.get("/v3/")
    def version():
        return jsonify({"version": version_doc()})

    @app.post("/v3/auth/tokens")
    @validation.schema(schemas.authenticate)
    def issue_token():
        auth = json_body()["auth"]
        identity = auth["identity"]
        if "password" not in identity["methods"]:
            raise exception.NotAuthorized("Only the 'password' method is supported.")
        if "password" not in identity:
            raise exception.ValidationError(detail="'password' is required for the method.")
        user_ref = identity["password"]["user"]
        if not user_ref.get("id") and not user_ref.get("name"):
            raise exception.ValidationError(detail="The user needs an 'id' or a 'name'.")
        user = keystone.authenticate(user_ref, user_ref["password"])
        project = None
        if "project" in auth.get("scope", {}):
            if not auth["scope"]["project"].get("id") and not auth["scope"]["project"].get("name"):
                raise exception.ValidationError(detail="The project needs an 'id' or a 'name'.")
            project = keystone.find_project(auth["scope"]["project"])
        token_id, token = keystone.issue_token(user, ["password"], project)
        response = jsonify({"token": token})
        response.status_code = 201
        response.headers["X-Subject-Token"] = token_id
        return response

    def _caller_token() -> dict:
        caller = request.headers.get("X-Auth-Token")
        if not caller:
            raise exception.NotAuthorized()
        try:
            return keystone.validate_token(caller, include_catalog=False)
        except exception.NotFound as exc:
            raise exception.NotAuthorized() from exc

    def _subject_token(action: str, include_catalog: bool = False) -> tuple[str, dict]:
        """The ``X-Subject-Token`` and its body, once policy lets the caller at it: as
        upstream, the subject is validated first (404 if it is not a live token), its
        user is the policy's ``target.token.user_id``."""
        caller = _caller_token()
        subject = request.headers.get("X-Subject-Token")
        if not subject:
            raise exception.ValidationError(detail="X-Subject-Token header is required.")
        token = keystone.validate_token(subject, include_catalog=include_catalog)
        ENFORCER.authorize(context_of(caller), action,
                           {"target.token.user_id": token["user"]["id"]})
        return subject, token

    @app.get("/v3/auth/tokens")
    @app.route("/v3/auth/tokens", methods=["HEAD"])
    def validate_token():
        action = "identity:check_token" if request.method == "HEAD" else \
            "identity:validate_token"
        subject, token = _subject_token(action, "nocatalog" not in request.args)
        response = jsonify({"token": token})
        response.headers["X-Subject-Token"] = subject
        return response

    @app.delete("/v3/auth/tokens")
    def revoke_token():
        subject, _ = _subject_token("identity:revoke_token")
        keystone.revoke_token(subject)
        return "", 204

    @app.get("/v3/auth/catalog")
    def catalog():
        caller = _caller_token()
        project = caller.get("project") or {}
        return jsonify({"catalog": keystone.catalog(project.get("id"))})

    authorize = identity_api.register(app, IdentityAdmin(keystone.db, keystone.tracer),
                                      _caller_token)
    catalog_api.register(app, catalog_api.CatalogAdmin(keystone.db, keystone.tracer), authorize)
    return app
