"""One evaluator, upstream's personas: admin, project member, project reader, service."""

from __future__ import annotations

import pytest

from novalab.reference.common import exception, policy
from novalab.reference.common.context import RequestContext

RULES = {
    "thing:create": policy.PROJECT_MEMBER_OR_ADMIN,
    "thing:get": policy.PROJECT_READER_OR_ADMIN,
    "thing:event": policy.ADMIN_OR_SERVICE,
    "thing:alias": "rule:thing:get",
    "thing:public": policy.ANYONE,
    "thing:never": policy.NOBODY,
}
ENFORCER = policy.Enforcer(RULES)
OWNED = {"project_id": "p1"}

PERSONAS = {
    "admin": RequestContext(project_id="admin-project", roles=["admin", "member", "reader"]),
    "member": RequestContext(project_id="p1", roles=["member", "reader"]),
    "reader": RequestContext(project_id="p1", roles=["reader"]),
    "other_member": RequestContext(project_id="p2", roles=["member", "reader"]),
    "service": RequestContext(project_id="service", roles=["service"]),
    "unscoped": RequestContext(),
}


@pytest.mark.parametrize("action, allowed", [
    ("thing:create", {"admin", "member"}),
    ("thing:get", {"admin", "member", "reader"}),
    ("thing:event", {"admin", "service"}),
    ("thing:alias", {"admin", "member", "reader"}),
    ("thing:public", set(PERSONAS)),
    ("thing:never", set()),
])
def test_each_persona_gets_what_upstreams_defaults_give(action, allowed):
    got = {name for name, context in PERSONAS.items()
           if ENFORCER.check(context, action, OWNED)}
    assert got == allowed


def test_without_a_target_the_callers_own_project_is_the_target():
    assert ENFORCER.check(PERSONAS["member"], "thing:create")
    assert not ENFORCER.check(PERSONAS["unscoped"], "thing:create")


def test_authorize_raises_the_services_403():
    class NeutronForbidden(exception.Forbidden):
        pass

    with pytest.raises(NeutronForbidden, match="thing:create"):
        policy.Enforcer(RULES, error=NeutronForbidden).authorize(
            PERSONAS["reader"], "thing:create", OWNED)


def test_a_target_without_the_key_matches_no_project():
    assert not ENFORCER.check(PERSONAS["member"], "thing:create", {"owner": "p1"})
