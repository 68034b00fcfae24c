"""Who may do what (``cinder/policies/*.py`` defaults), on the common evaluator.

Cinder's current defaults, compacted: readers of a project see its volumes,
members create, attach and delete them, admins reach every project; quotas are
shown to a project's readers and changed only by admins. Another project's
volume is not a 403 but a 404: the lookup itself is scoped to the caller's
project (``model_query(project_only=True)``). The rules are evaluated by
:class:`novalab.reference.common.policy.Enforcer`, with the volume (its
``project_id``) as the target.
"""

from __future__ import annotations

from novalab.reference.common import policy
from novalab.reference.common.context import RequestContext

ADMIN = policy.ADMIN
PROJECT_READER = policy.PROJECT_READER_OR_ADMIN
PROJECT_MEMBER = policy.PROJECT_MEMBER_OR_ADMIN

RULES = {
    "volume:create": PROJECT_MEMBER,
    "volume:get": PROJECT_READER,
    "volume:get_all": PROJECT_READER,
    "volume:delete": PROJECT_MEMBER,
    # cinder/policies/snapshots.py; the extended attributes (progress, project) to readers.
    "volume:create_snapshot": PROJECT_MEMBER,
    "volume:get_snapshot": PROJECT_READER,
    "volume:get_all_snapshots": PROJECT_READER,
    "volume:delete_snapshot": PROJECT_MEMBER,
    "volume_extension:extended_snapshot_attributes": PROJECT_READER,
    "volume:attachment_create": PROJECT_MEMBER,
    "volume:attachment_update": PROJECT_MEMBER,
    "volume:attachment_delete": PROJECT_MEMBER,
    "volume:attachment_complete": PROJECT_MEMBER,
    # cinder/policies/volume_actions.py: Nova's detach marks the volume first.
    "volume_extension:volume_actions:begin_detaching": PROJECT_MEMBER,
    "volume_extension:volume_actions:roll_detaching": PROJECT_MEMBER,
    "volume_extension:volume_host_attribute": ADMIN,
    # The project of a volume to its readers, its migration state to admins
    # (cinder/policies/volumes.py: TENANT_ATTRIBUTE_POLICY, MIG_ATTRIBUTE_POLICY).
    "volume_extension:volume_tenant_attribute": PROJECT_READER,
    "volume_extension:volume_mig_status_attribute": ADMIN,
    "volume_extension:quotas:show": PROJECT_READER,
    "volume_extension:quotas:update": ADMIN,
    "volume_extension:quotas:delete": ADMIN,
    "limits_extension:used_limits": PROJECT_READER,
    "message:get": PROJECT_READER,
    "message:get_all": PROJECT_READER,
    "message:delete": PROJECT_MEMBER,
}

ENFORCER = policy.Enforcer(RULES)


def check(context: RequestContext, action: str, target: dict | None = None) -> bool:
    """Whether ``context`` may do ``action`` on ``target`` (default: its own project)."""
    return ENFORCER.check(context, action, target)


def authorize(context: RequestContext, action: str, target: dict | None = None) -> None:
    """Raise ``Forbidden`` (403) unless ``context`` may do ``action`` on ``target``."""
    ENFORCER.authorize(context, action, target)
