"""Keystone's users, projects and grants; bad bodies are 400s; disabling revokes tokens."""

from __future__ import annotations

import time

import httpx
import pytest
from conftest import make_cloud


def token_for(cloud, user, project=None, password=None) -> httpx.Response:
    password = password or cloud.config.credentials.password_for(user)
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": user, "domain": {"id": "default"}, "password": password}}}}}
    if project:
        body["auth"]["scope"] = {"project": {"name": project, "domain": {"id": "default"}}}
    return httpx.post(f"{cloud.identity_url}/auth/tokens", json=body)


@pytest.fixture(scope="module")
def shared_cloud(tmp_path_factory):
    """The module's cloud, its services trusting a validated token for 1 s (the default
    is 10 s): the revocation tests wait that cache out."""
    with make_cloud(tmp_path_factory.mktemp("identity"), token_cache_time=1.0) as running:
        yield running
    running.telemetry.shutdown()


@pytest.fixture(scope="module")
def admin(shared_cloud):
    token = token_for(shared_cloud, "admin", "admin").headers["X-Subject-Token"]
    client = httpx.Client(base_url=shared_cloud.identity_url,
                          headers={"X-Auth-Token": token}, timeout=30)
    yield client
    client.close()


@pytest.mark.parametrize("body", [
    {"auth": {"identity": {"methods": 5}}},
    {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": {"a": 1}, "password": "x"}}}}},
    {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": "demo", "password": "x" * 5000}}}}},
    {"auth": {"identity": {"methods": ["password"], "password": "novalab"}}},
    {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": "demo", "domain": {"id": "default"}, "password": "novalab"}}},
        "scope": {"project": ["demo"]}}},
    {"auth": "yes"},
])
def test_malformed_auth_bodies_are_400_not_500(shared_cloud, body):
    response = httpx.post(f"{shared_cloud.identity_url}/auth/tokens", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == 400


def test_the_seeded_personas_can_log_in(shared_cloud):
    reader = token_for(shared_cloud, "reader", "demo")
    assert reader.status_code == 201
    assert [r["name"] for r in reader.json()["token"]["roles"]] == ["reader"]
    other = token_for(shared_cloud, "alt_demo", "alt_demo").json()["token"]
    assert other["project"]["name"] == "alt_demo"
    unscoped = token_for(shared_cloud, "demo").json()["token"]
    assert "roles" not in unscoped and "project" not in unscoped


def test_an_admin_creates_a_project_a_user_and_a_grant(shared_cloud, admin):
    project = admin.post("/projects", json={"project": {"name": "class-a"}})
    assert project.status_code == 201
    project = project.json()["project"]
    assert admin.post("/projects", json={"project": {"name": "class-a"}}).status_code == 409
    user = admin.post("/users", json={"user": {
        "name": "learner1", "password": "s3cret", "default_project_id": project["id"],
        "email": "l1@example.org"}}).json()["user"]
    assert user["email"] == "l1@example.org" and "password" not in user
    member = admin.get("/roles", params={"name": "member"}).json()["roles"][0]
    grant = f"/projects/{project['id']}/users/{user['id']}/roles/{member['id']}"
    assert admin.put(grant).status_code == 204
    assert admin.head(grant).status_code == 204
    token = token_for(shared_cloud, "learner1", "class-a", password="s3cret")
    assert token.status_code == 201
    # member implies reader, as keystone-manage bootstrap sets it up.
    assert [r["name"] for r in token.json()["token"]["roles"]] == ["member", "reader"]
    listed = admin.get("/projects", params={"name": "class-a"}).json()["projects"]
    assert [p["id"] for p in listed] == [project["id"]]


def test_ids_are_the_servers_never_the_clients(admin):
    response = admin.post("/projects", json={"project": {"name": "chosen", "id": "../x"}})
    assert response.status_code == 400
    assert "Additional properties" in response.json()["error"]["message"]


def test_only_admins_manage_identity_and_a_user_reads_itself(shared_cloud):
    demo_token = token_for(shared_cloud, "demo", "demo")
    token = demo_token.headers["X-Subject-Token"]
    me = demo_token.json()["token"]["user"]["id"]
    project = demo_token.json()["token"]["project"]["id"]
    demo = httpx.Client(base_url=shared_cloud.identity_url, headers={"X-Auth-Token": token})
    assert demo.post("/users", json={"user": {"name": "evil"}}).status_code == 403
    assert demo.get("/users").status_code == 403
    assert demo.get(f"/users/{me}").json()["user"]["name"] == "demo"
    assert demo.get(f"/projects/{project}").status_code == 200
    other = token_for(shared_cloud, "alt_demo", "alt_demo").json()["token"]["project"]["id"]
    assert demo.get(f"/projects/{other}").status_code == 403
    assert demo.patch(f"/projects/{project}",
                      json={"project": {"enabled": False}}).status_code == 403
    assert [p["name"] for p in demo.get("/auth/projects").json()["projects"]] == ["demo"]


@pytest.mark.parametrize("kind", ["user", "project"])
def test_disabling_revokes_existing_tokens_at_keystone_and_at_every_service(
        shared_cloud, admin, kind):
    project = admin.post("/projects", json={"project": {"name": f"revoke-{kind}"}}).json()
    project = project["project"]
    user = admin.post("/users", json={"user": {"name": f"revoke-{kind}",
                                               "password": "pw"}}).json()["user"]
    member = admin.get("/roles", params={"name": "member"}).json()["roles"][0]
    admin.put(f"/projects/{project['id']}/users/{user['id']}/roles/{member['id']}")
    token = token_for(shared_cloud, user["name"], project["name"], "pw").headers[
        "X-Subject-Token"]
    servers = f"{shared_cloud.urls['nova']}/v2.1/servers"
    assert httpx.get(servers, headers={"X-Auth-Token": token}).status_code == 200

    target = f"/users/{user['id']}" if kind == "user" else f"/projects/{project['id']}"
    assert admin.patch(target, json={kind: {"enabled": False}}).status_code == 200

    # Keystone refuses the token at once ...
    check = admin.get("/auth/tokens", headers={"X-Subject-Token": token})
    assert check.status_code == 404
    # ... and nova-api once its validation cache (here 1 s; 10 s by default) lapses.
    deadline = time.monotonic() + 60
    status = 200
    while status == 200 and time.monotonic() < deadline:
        status = httpx.get(servers, headers={"X-Auth-Token": token}).status_code
        time.sleep(0.5)
    assert status == 401
    # Enabling again does not bring a revoked token back.
    admin.patch(target, json={kind: {"enabled": True}})
    assert admin.get("/auth/tokens", headers={"X-Subject-Token": token}).status_code == 404


def test_deleting_a_user_revokes_and_removes_its_grants(shared_cloud, admin):
    user = admin.post("/users", json={"user": {"name": "gone", "password": "pw"}}).json()
    user = user["user"]
    demo = admin.get("/projects", params={"name": "demo"}).json()["projects"][0]
    member = admin.get("/roles", params={"name": "member"}).json()["roles"][0]
    admin.put(f"/projects/{demo['id']}/users/{user['id']}/roles/{member['id']}")
    token = token_for(shared_cloud, "gone", "demo", "pw").headers["X-Subject-Token"]
    assert admin.delete(f"/users/{user['id']}").status_code == 204
    assert admin.get("/auth/tokens", headers={"X-Subject-Token": token}).status_code == 404
    assert admin.get(f"/users/{user['id']}").status_code == 404
    assert not admin.get("/role_assignments", params={"user.id": user["id"]}).json()[
        "role_assignments"]
