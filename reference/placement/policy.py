"""Who may do what (``placement/policies/*.py`` defaults), on the common evaluator.

Placement is a service's API: its defaults let an admin or a caller with the
``service`` role (nova-scheduler and nova-compute, as the ``nova`` user) do
everything, and nobody else anything, except one read: a project's reader may
see that project's total usage (``GET /usages?project_id=``), which is how
quota counting in placement reads it. A demo member listing providers gets a 403.
"""

from __future__ import annotations

from novalab.reference.common import policy
from novalab.reference.common.context import RequestContext
from novalab.reference.placement import exception

ADMIN_OR_SERVICE = policy.ADMIN_OR_SERVICE
ADMIN_OR_PROJECT_READER_OR_SERVICE = f"{policy.ADMIN} or {policy.PROJECT_READER} or " \
                                     f"{policy.SERVICE}"

RP = "placement:resource_providers:%s"
INVENTORY = "placement:resource_providers:inventories:%s"
ALLOCATION = "placement:allocations:%s"

RULES = {
    **{RP % action: ADMIN_OR_SERVICE
       for action in ("list", "create", "show", "update", "delete")},
    **{INVENTORY % action: ADMIN_OR_SERVICE
       for action in ("list", "create", "show", "update", "delete")},
    **{ALLOCATION % action: ADMIN_OR_SERVICE
       for action in ("list", "manage", "update", "delete")},
    "placement:resource_providers:allocations:list": ADMIN_OR_SERVICE,
    "placement:resource_providers:usages": ADMIN_OR_SERVICE,
    "placement:usages": ADMIN_OR_PROJECT_READER_OR_SERVICE,
    "placement:allocation_candidates:list": ADMIN_OR_SERVICE,
    "placement:resource_classes:list": ADMIN_OR_SERVICE,
}

ENFORCER = policy.Enforcer(RULES, error=exception.Forbidden)


def authorize(context: RequestContext, action: str, target: dict | None = None) -> None:
    """Raise placement's 403 unless ``context`` may do ``action`` (``context.can``)."""
    ENFORCER.authorize(context, action, target)
