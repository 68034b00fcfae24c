"""Who may do what (``nova/policies/servers.py`` defaults, as code).

Nova's default rules, compacted: members of a project manage its servers, admins
manage every project's. Reading another project's server is not a 403 but a 404:
the database lookup itself is scoped to the caller's project, so the server
simply does not exist for them.
"""

from __future__ import annotations

from novalab.reference.common import exception
from novalab.reference.common.context import RequestContext

ADMIN = "role:admin"
PROJECT_MEMBER_OR_ADMIN = "role:admin or project_id:%(project_id)s"

RULES = {
    "os_compute_api:servers:create": PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:servers:index": PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:servers:detail": PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:servers:show": PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:servers:delete": PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:servers:index:get_all_tenants": ADMIN,
    "os_compute_api:servers:detail:get_all_tenants": ADMIN,
    "os_compute_api:os-extended-server-attributes": ADMIN,
    # nova/policies/instance_actions.py: the server's project reads its actions and
    # their events; the events' tracebacks are for admins.
    "os_compute_api:os-instance-actions:list": PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:os-instance-actions:show": PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:os-instance-actions:events": ADMIN,
    # Only services (Neutron, Cinder) and admins send external events.
    "os_compute_api:os-server-external-events:create": "role:admin or role:service",
}


def check(context: RequestContext, action: str, target: dict | None = None) -> bool:
    rule = RULES[action]
    target = target or {"project_id": context.project_id}
    for alternative in rule.split(" or "):
        kind, _, value = alternative.partition(":")
        if kind == "role" and value in context.roles:
            return True
        if kind == "project_id" and context.project_id and \
                context.project_id == value % target:
            return True
    return False


def authorize(context: RequestContext, action: str, target: dict | None = None) -> None:
    if not check(context, action, target):
        raise exception.Forbidden(action=action)
