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


def enforce(allowed: bool, action: str) -> None:
    """Raise ``PolicyNotAuthorized`` (403) for ``action`` unless ``allowed``."""
    if not allowed:
        raise n_exc.PolicyNotAuthorized(action=action)
