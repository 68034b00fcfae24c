"""Who may do what (``cinder/policies/*.py`` defaults, as code).

Cinder's current defaults, compacted: readers of a project see its volumes,
members create, attach and delete them, admins reach every project. Another
project's volume is not a 403 but a 404: the lookup itself is scoped to the
caller's project (``model_query(project_only=True)``).

A rule is alternatives joined by `` or ``, each a conjunction joined by `` and ``
of ``role:<name>`` and ``project_id:%(project_id)s`` checks (oslo.policy's syntax,
without parentheses).
"""

from __future__ import annotations

from novalab.reference.common import exception
from novalab.reference.common.context import RequestContext

ADMIN = "role:admin"
PROJECT_READER = "role:admin or role:reader and project_id:%(project_id)s"
PROJECT_MEMBER = "role:admin or role:member and project_id:%(project_id)s"

RULES = {
    "volume:create": PROJECT_MEMBER,
    "volume:get": PROJECT_READER,
    "volume:get_all": PROJECT_READER,
    "volume:delete": PROJECT_MEMBER,
    "volume:attachment_create": PROJECT_MEMBER,
    "volume:attachment_update": PROJECT_MEMBER,
    "volume:attachment_delete": PROJECT_MEMBER,
    "volume:attachment_complete": PROJECT_MEMBER,
    "volume_extension:volume_host_attribute": ADMIN,
    "message:get": PROJECT_READER,
    "message:get_all": PROJECT_READER,
    "message:delete": PROJECT_MEMBER,
}


def _holds(check: str, context: RequestContext, target: dict) -> bool:
    kind, _, value = check.partition(":")
    if kind == "role":
        return value in context.roles
    if kind == "project_id":
        return bool(context.project_id) and context.project_id == value % target
    raise ValueError(f"unknown policy check {check!r}")


def check(context: RequestContext, action: str, target: dict | None = None) -> bool:
    target = target or {"project_id": context.project_id}
    return any(all(_holds(c.strip(), context, target) for c in alternative.split(" and "))
               for alternative in RULES[action].split(" or "))


def authorize(context: RequestContext, action: str, target: dict | None = None) -> None:
    """Raise ``Forbidden`` (403) unless ``context`` may do ``action`` on ``target``."""
    if not check(context, action, target):
        raise exception.Forbidden(action=action)
