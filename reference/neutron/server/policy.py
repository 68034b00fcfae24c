"""Who may see and change what: neutron's default policies in a few functions.

Upstream's policy file (``neutron/conf/policies``) says, roughly: admins see
everything; the ``service`` role (Nova, the metadata proxy) may read any port
and set its binding (``ADMIN_OR_SERVICE``); everyone else sees their own
project's resources and the *shared* networks. A resource one may not see is
reported as not found, never as forbidden, so its existence does not leak.
"""

from __future__ import annotations

from novalab.reference.common.context import RequestContext
from novalab.reference.neutron import exceptions as n_exc


def is_admin(context: RequestContext) -> bool:
    return bool(context.is_admin or "admin" in (context.roles or []))


def is_admin_or_service(context: RequestContext) -> bool:
    return is_admin(context) or "service" in (context.roles or [])


def owns(context: RequestContext, project_id: str | None) -> bool:
    return bool(context.project_id) and context.project_id == project_id


def can_see_network(context: RequestContext, network) -> bool:
    return is_admin_or_service(context) or network.shared or owns(context, network.project_id)


def can_see_port(context: RequestContext, port) -> bool:
    return is_admin_or_service(context) or owns(context, port.project_id)


def is_member_of(context: RequestContext, project_id: str | None) -> bool:
    """``PROJECT_MEMBER``: the member role, on the project that owns the resource (a
    reader of that project may look, not change; a token with no project owns nothing)."""
    return owns(context, project_id) and "member" in (context.roles or [])


def can_change(context: RequestContext, project_id: str | None) -> bool:
    """``ADMIN_OR_PROJECT_MEMBER``: create, update or delete a network or subnet."""
    return is_admin(context) or is_member_of(context, project_id)


def can_change_port(context: RequestContext, project_id: str | None) -> bool:
    """Ports also let services change them: Nova binds and deletes its instances' ports."""
    return is_admin_or_service(context) or is_member_of(context, project_id)


def enforce(allowed: bool, action: str) -> None:
    """Raise ``PolicyNotAuthorized`` (403) for ``action`` unless ``allowed``."""
    if not allowed:
        raise n_exc.PolicyNotAuthorized(action=action)


def can_see_security_group(context: RequestContext, project_id: str | None) -> bool:
    """``get_security_group`` (``ADMIN_OR_PROJECT_READER``); the service role too, as
    for ports, since Nova reads a server's groups. Changing one is :func:`can_change`
    (``ADMIN_OR_PROJECT_MEMBER``; a rule: ``ADMIN_OR_SG_OWNER_MEMBER``)."""
    return is_admin_or_service(context) or owns(context, project_id)
