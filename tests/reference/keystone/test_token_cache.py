"""Keystone's token cache: a repeat validation costs no query, and any identity change
is seen by the very next one (reference/keystone/token_cache.py)."""

from __future__ import annotations

import random

from opentelemetry.trace import SpanKind
from reference.keystone.test_identity import admin, token_for  # noqa: F401 (fixture)

from novalab.reference.keystone.token_cache import TokenCache
from novalab.tracing.attributes import DB_QUERY_TEXT
from novalab.tracing.propagation import signed


def test_the_callers_own_token_is_answered_from_memory(shared_cloud, admin):  # noqa: F811
    demo = token_for(shared_cloud, "demo", "demo").headers["X-Subject-Token"]
    assert admin.get("/auth/tokens", headers={"X-Subject-Token": demo}).status_code == 200
    # The SQL counted is the second validation's own (its trace): the shared cloud's
    # other services may reach keystone's tables at the same moment.
    trace_id = random.getrandbits(128) | 1
    again = admin.get("/auth/tokens", headers={
        "X-Subject-Token": demo, "Accept": "application/json",
        **signed(shared_cloud.wiring.trace_key, trace_id, random.getrandbits(64) | 1)},
        params={"nocatalog": 1})
    assert again.status_code == 200 and again.json()["token"]["user"]["name"] == "demo"
    shared_cloud.telemetry.force_flush()
    spans = shared_cloud.telemetry.finished_spans(trace_id)
    assert [s for s in spans if s.kind == SpanKind.SERVER], "the validation was not traced"
    # Both tokens (the admin's, the caller; demo's, the subject) came from the cache.
    assert not [s for s in spans if "keystone_tokens" in s.attributes.get(DB_QUERY_TEXT, "")]


def test_a_removed_role_is_gone_from_the_very_next_validation(shared_cloud, admin):  # noqa: F811
    user = admin.post("/users", json={"user": {"name": "cached-roles",
                                               "password": "pw"}}).json()["user"]
    demo = admin.get("/projects", params={"name": "demo"}).json()["projects"][0]
    member = admin.get("/roles", params={"name": "member"}).json()["roles"][0]
    grant = f"/projects/{demo['id']}/users/{user['id']}/roles/{member['id']}"
    admin.put(grant)
    token = token_for(shared_cloud, "cached-roles", "demo", "pw").headers["X-Subject-Token"]
    roles = admin.get("/auth/tokens", headers={"X-Subject-Token": token}).json()["token"]["roles"]
    assert "member" in {r["name"] for r in roles}

    assert admin.delete(grant).status_code == 204
    after = admin.get("/auth/tokens", headers={"X-Subject-Token": token})
    # Upstream revokes a token whose grant goes; either way it must not say member.
    assert after.status_code == 404 or "member" not in {
        r["name"] for r in after.json()["token"]["roles"]}
    admin.delete(f"/users/{user['id']}")


def test_an_answer_read_before_a_write_is_not_kept_after_it(tmp_path):
    from novalab.reference.common.db import Database

    db = Database(f"sqlite:///{tmp_path / 'k.db'}")
    cache = TokenCache(db)
    generation = cache.generation
    with db.engine.begin() as conn:  # another request changes identity meanwhile
        conn.exec_driver_sql("CREATE TABLE keystone_users (id TEXT)")
        conn.exec_driver_sql("UPDATE keystone_users SET id = 'x'")
    cache.put("token", "stale answer", generation)
    assert cache.get("token") is None
    cache.put("token", "fresh answer", cache.generation)
    assert cache.get("token") == "fresh answer"
    with db.engine.begin() as conn:  # a new token row changes no other token's answer
        conn.exec_driver_sql("CREATE TABLE keystone_tokens (id TEXT)")
        conn.exec_driver_sql("INSERT INTO keystone_tokens (id) VALUES ('t')")
    assert cache.get("token") == "fresh answer"
    db.dispose()
