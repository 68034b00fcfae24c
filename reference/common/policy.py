"""One policy evaluator for every service, with upstream's default personas.

Since the "secure RBAC" work (Yoga to 2023.x) every OpenStack service ships the
same personas as its defaults:

- **admin**: ``role:admin`` acts on every project;
- **project member**: ``role:member`` on the project that owns the resource
  creates, changes and deletes it;
- **project reader**: ``role:reader`` on that project only looks;
- **service**: ``role:service`` is what services (Nova calling Neutron, Neutron
  calling Nova back) use for the calls only they make.

A token with no project scope carries no roles and matches none of them.

Rules use oslo.policy's syntax, compacted: alternatives joined by `` or ``, each a
conjunction joined by `` and `` of ``role:<name>``, ``project_id:%(project_id)s``
(the target's project must be the caller's), ``user_id:%(user_id)s`` (the
target's user must be the caller: Keystone's "a user may read itself"),
``rule:<name>`` (another rule of the same table), ``@`` (anyone) and ``!``
(no one). There are no parentheses: every default upstream ships reads as
"or" of "and"s. oslo.policy itself would pull in oslo.config and a
policy-file loader; this is the part of it the defaults need.
"""

from __future__ import annotations

from collections.abc import Mapping

from novalab.reference.common import exception
from novalab.reference.common.context import RequestContext

ADMIN = "role:admin"
SERVICE = "role:service"
PROJECT_READER = "role:reader and project_id:%(project_id)s"
PROJECT_MEMBER = "role:member and project_id:%(project_id)s"
PROJECT_READER_OR_ADMIN = f"{ADMIN} or {PROJECT_READER}"
PROJECT_MEMBER_OR_ADMIN = f"{ADMIN} or {PROJECT_MEMBER}"
ADMIN_OR_SERVICE = f"{ADMIN} or {SERVICE}"
ANYONE = "@"
NOBODY = "!"


class Enforcer:
    """Evaluate a service's rule table (``{"volume:create": PROJECT_MEMBER, ...}``)."""

    def __init__(self, rules: Mapping[str, str],
                 error: type[exception.NovaLabException] = exception.Forbidden):
        self.rules = dict(rules)
        self.error = error

    def check(self, context: RequestContext, action: str, target: dict | None = None) -> bool:
        """Whether ``context`` may do ``action`` on ``target`` (its ``project_id``)."""
        target = target if target is not None else {"project_id": context.project_id}
        return self._evaluate(self.rules[action], context, target, depth=0)

    def authorize(self, context: RequestContext, action: str, target: dict | None = None) -> None:
        """Raise the service's 403 for ``action`` unless :meth:`check` allows it."""
        if not self.check(context, action, target):
            raise self.error(action=action)

    def _evaluate(self, rule: str, context: RequestContext, target: dict, depth: int) -> bool:
        if depth > 10:
            raise ValueError(f"policy rules nest too deep at {rule!r}")
        return any(all(self._holds(check.strip(), context, target, depth)
                       for check in alternative.split(" and "))
                   for alternative in rule.split(" or "))

    def _holds(self, check: str, context: RequestContext, target: dict, depth: int) -> bool:
        if check == ANYONE:
            return True
        if check == NOBODY:
            return False
        kind, _, value = check.partition(":")
        if kind == "role":
            return value in (context.roles or [])
        if kind in ("project_id", "user_id"):
            try:
                wanted = value % target
            except KeyError:
                return False
            mine = getattr(context, kind)
            return bool(mine) and mine == wanted
        if kind == "rule":
            return self._evaluate(self.rules[value], context, target, depth + 1)
        raise ValueError(f"unknown policy check {check!r}")
