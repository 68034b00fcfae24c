"""``/v3`` users, projects, roles and grants, as the Identity API reference gives them.

Enough for an admin's first hour with the unmodified ``openstack`` CLI (``project
create|list|show|set|delete``, ``user ...``, ``role add|remove|list``,
``role assignment list``) and for a class to be run: disable a learner, and its
tokens stop working.
"""

from __future__ import annotations

from flask import Flask, jsonify, request

from novalab.reference.common import validation
from novalab.reference.common.context import RequestContext
from novalab.reference.common.wsgi import json_body
from novalab.reference.keystone import schemas
from novalab.reference.keystone.identity import IdentityAdmin
from novalab.reference.keystone.policy import ENFORCER, context_of

MAX_LIST = 1000


def _bool_arg(name: str) -> bool | None:
    value = request.args.get(name)
    if value is None:
        return None
    return value.lower() not in ("0", "false", "no", "off")


def _links() -> dict:
    return {"self": request.base_url, "previous": None, "next": None}


def register(app: Flask, admin: IdentityAdmin, caller) -> None:
    """Add the routes to ``app``; ``caller()`` returns the validated caller's token body."""

    def context() -> RequestContext:
        return context_of(caller())

    def authorize(action: str, **target) -> RequestContext:
        ctxt = context()
        ENFORCER.authorize(ctxt, action, target or None)
        return ctxt

    def listing(key: str, items: list[dict]):
        return jsonify({key: items[:MAX_LIST], "links": _links()})

    # Users --------------------------------------------------------------------------------

    @app.get("/v3/users")
    def list_users():
        authorize("identity:list_users")
        return listing("users", admin.list_users(request.args.get("name"),
                                                 _bool_arg("enabled")))

    @app.post("/v3/users")
    @validation.schema(schemas.user_create)
    def create_user():
        authorize("identity:create_user")
        user = admin.create_user(json_body()["user"])
        return jsonify({"user": user}), 201

    @app.get("/v3/users/<user_id>")
    def get_user(user_id):
        authorize("identity:get_user", user_id=user_id)
        return jsonify({"user": admin.get_user(user_id)})

    @app.patch("/v3/users/<user_id>")
    @validation.schema(schemas.user_update)
    def update_user(user_id):
        authorize("identity:update_user", user_id=user_id)
        return jsonify({"user": admin.update_user(user_id, json_body()["user"])})

    @app.delete("/v3/users/<user_id>")
    def delete_user(user_id):
        authorize("identity:delete_user", user_id=user_id)
        admin.delete_user(user_id)
        return "", 204

    @app.get("/v3/users/<user_id>/projects")
    def list_user_projects(user_id):
        authorize("identity:list_user_projects", user_id=user_id)
        return listing("projects", admin.user_projects(user_id))

    @app.get("/v3/auth/projects")
    def list_my_projects():
        """The projects the caller's token may be scoped to (any valid token)."""
        return listing("projects", admin.user_projects(context().user_id))

    # Projects -----------------------------------------------------------------------------

    @app.get("/v3/projects")
    def list_projects():
        authorize("identity:list_projects")
        return listing("projects", admin.list_projects(request.args.get("name"),
                                                       _bool_arg("enabled")))

    @app.post("/v3/projects")
    @validation.schema(schemas.project_create)
    def create_project():
        authorize("identity:create_project")
        project = admin.create_project(json_body()["project"])
        return jsonify({"project": project}), 201

    @app.get("/v3/projects/<project_id>")
    def get_project(project_id):
        authorize("identity:get_project", project_id=project_id)
        return jsonify({"project": admin.get_project(project_id)})

    @app.patch("/v3/projects/<project_id>")
    @validation.schema(schemas.project_update)
    def update_project(project_id):
        authorize("identity:update_project", project_id=project_id)
        return jsonify({"project": admin.update_project(project_id, json_body()["project"])})

    @app.delete("/v3/projects/<project_id>")
    def delete_project(project_id):
        authorize("identity:delete_project", project_id=project_id)
        admin.delete_project(project_id)
        return "", 204

    # Roles and grants ---------------------------------------------------------------------

    @app.get("/v3/roles")
    def list_roles():
        authorize("identity:list_roles")
        return listing("roles", admin.list_roles(request.args.get("name")))

    @app.get("/v3/roles/<role_id>")
    def get_role(role_id):
        authorize("identity:get_role")
        return jsonify({"role": admin.get_role(role_id)})

    grant_rule = "/v3/projects/<project_id>/users/<user_id>/roles/<role_id>"

    @app.put(grant_rule)
    @validation.raw_body("a grant is its URL: keystone reads no body")
    def create_grant(project_id, user_id, role_id):
        authorize("identity:create_grant", project_id=project_id)
        admin.grant(project_id, user_id, role_id)
        return "", 204

    @app.route(grant_rule, methods=["HEAD"])
    @app.get(grant_rule)
    def check_grant(project_id, user_id, role_id):
        authorize("identity:check_grant", project_id=project_id)
        admin.check_grant(project_id, user_id, role_id)
        return "", 204

    @app.delete(grant_rule)
    def revoke_grant(project_id, user_id, role_id):
        authorize("identity:revoke_grant", project_id=project_id)
        admin.revoke_grant(project_id, user_id, role_id)
        return "", 204

    @app.get("/v3/projects/<project_id>/users/<user_id>/roles")
    def list_grants(project_id, user_id):
        authorize("identity:list_role_assignments", project_id=project_id)
        ids = {a["role"]["id"] for a in admin.role_assignments(user_id, project_id)}
        return listing("roles", [r for r in admin.list_roles() if r["id"] in ids])

    @app.get("/v3/role_assignments")
    def list_role_assignments():
        """``openstack role assignment list [--user U] [--project P] [--role R] [--names]``.

        Every grant here is a user's on a project, so filtering on a group, a domain
        or the system scope matches nothing (upstream: the same, on such a cloud)."""
        authorize("identity:list_role_assignments")
        args = request.args
        if any(key in args for key in ("group.id", "scope.domain.id", "scope.system")):
            found = []
        else:
            found = admin.role_assignments(args.get("user.id"), args.get("scope.project.id"),
                                           include_names=bool(_bool_arg("include_names")),
                                           role_id=args.get("role.id"))
        for item in found:
            item["links"] = {"assignment": (
                f"{request.host_url.rstrip('/')}/v3/projects/"
                f"{item['scope']['project']['id']}/users/{item['user']['id']}/roles/"
                f"{item['role']['id']}")}
        return jsonify({"role_assignments": found[:MAX_LIST], "links": _links()})

    return authorize
