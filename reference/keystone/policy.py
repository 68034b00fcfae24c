"""Keystone's default policies (``keystone/common/policies/*.py``), compacted.

Admins manage users, projects and grants; a user may read itself and list its
own projects; a member or reader may read the project its token is scoped to.
A token is its own user's to check and revoke (upstream's ``token_subject``:
the same user, from any of their tokens), and an admin's; services also
validate the tokens they are sent.
Upstream distinguishes system, domain and project scope; novalab has one
domain and no system scope, so "system admin" reads here as ``role:admin``.
"""

from __future__ import annotations

from novalab.reference.common import policy
from novalab.reference.common.context import RequestContext

SELF_OR_ADMIN = f"{policy.ADMIN} or user_id:%(user_id)s"
OWN_PROJECT_OR_ADMIN = f"{policy.ADMIN} or project_id:%(project_id)s"
# base.py's token_subject: the subject token's user is the caller.
TOKEN_SUBJECT = "user_id:%(target.token.user_id)s"

RULES = {
    # token.py (its system-reader alternative aside: no system scope here).
    "identity:check_token": f"{policy.ADMIN} or {TOKEN_SUBJECT}",
    "identity:validate_token": f"{policy.ADMIN} or {policy.SERVICE} or {TOKEN_SUBJECT}",
    "identity:revoke_token": f"{policy.ADMIN} or {TOKEN_SUBJECT}",
    "identity:get_user": SELF_OR_ADMIN,
    "identity:list_users": policy.ADMIN,
    "identity:create_user": policy.ADMIN,
    "identity:update_user": policy.ADMIN,
    "identity:delete_user": policy.ADMIN,
    "identity:list_user_projects": SELF_OR_ADMIN,
    "identity:get_project": OWN_PROJECT_OR_ADMIN,
    "identity:list_projects": policy.ADMIN,
    "identity:create_project": policy.ADMIN,
    "identity:update_project": policy.ADMIN,
    "identity:delete_project": policy.ADMIN,
    "identity:get_role": policy.ADMIN,
    "identity:list_roles": policy.ADMIN,
    "identity:create_grant": policy.ADMIN,
    "identity:check_grant": policy.ADMIN,
    "identity:revoke_grant": policy.ADMIN,
    "identity:list_role_assignments": policy.ADMIN,
    # keystone/common/policies/region.py: any valid token reads the regions.
    "identity:list_regions": policy.ANYONE,
    "identity:get_region": policy.ANYONE,
    # service.py, endpoint.py: system readers (here, admins).
    "identity:list_services": policy.ADMIN,
    "identity:get_service": policy.ADMIN,
    "identity:list_endpoints": policy.ADMIN,
    "identity:get_endpoint": policy.ADMIN,
}

ENFORCER = policy.Enforcer(RULES)


def context_of(token: dict) -> RequestContext:
    """Who a validated token's body says is asking."""
    project = token.get("project") or {}
    return RequestContext(user_id=token["user"]["id"], project_id=project.get("id"),
                          roles=[r["name"] for r in token.get("roles", [])])
