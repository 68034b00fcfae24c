"""Keystone's token API: issue, validate, revoke; the token store holds only hashes."""

from __future__ import annotations

import hashlib

import httpx
from sqlalchemy import select

from novalab.reference.keystone.models import Token


def auth_body(user="demo", password="novalab", project="demo"):
    return {"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": user, "domain": {"id": "default"}, "password": password}}},
        "scope": {"project": {"name": project, "domain": {"id": "default"}}}}}


def test_version_discovery(shared_cloud):
    root = httpx.get(shared_cloud.urls["keystone"] + "/")
    assert root.status_code == 300
    assert root.json()["versions"]["values"][0]["id"].startswith("v3")
    assert httpx.get(shared_cloud.identity_url).json()["version"]["status"] == "stable"


def test_issue_token_with_catalog_and_store(shared_cloud):
    response = httpx.post(f"{shared_cloud.identity_url}/auth/tokens", json=auth_body())
    assert response.status_code == 201
    token_id = response.headers["X-Subject-Token"]
    token = response.json()["token"]
    assert token["project"]["name"] == "demo"
    assert {r["name"] for r in token["roles"]} == {"member", "reader"}
    assert token["expires_at"].endswith("Z")
    types = {s["type"]: s for s in token["catalog"]}
    assert {"identity", "compute", "image"} <= set(types)
    assert types["compute"]["endpoints"][0]["url"] == shared_cloud.urls["nova"] + "/v2.1"
    # The store keeps a SHA-256 of the token, never the token itself.
    db = shared_cloud.wiring.database("keystone")
    with db.session() as session:
        hashes = set(session.scalars(select(Token.id_hash)))
    assert hashlib.sha256(token_id.encode()).hexdigest() in hashes
    assert token_id not in hashes


def test_wrong_password_is_401(shared_cloud):
    response = httpx.post(f"{shared_cloud.identity_url}/auth/tokens",
                          json=auth_body(password="wrong"))
    assert response.status_code == 401
    assert response.json()["error"]["title"] == "Unauthorized"


def test_unknown_project_is_401_and_malformed_is_400(shared_cloud):
    response = httpx.post(f"{shared_cloud.identity_url}/auth/tokens",
                          json=auth_body(project="nope"))
    assert response.status_code == 401
    response = httpx.post(f"{shared_cloud.identity_url}/auth/tokens", json={"auth": {}})
    assert response.status_code == 400


def test_validate_and_revoke(shared_cloud):
    url = f"{shared_cloud.identity_url}/auth/tokens"
    admin_body = auth_body("admin", shared_cloud.config.credentials.admin, "admin")
    admin = httpx.post(url, json=admin_body).headers["X-Subject-Token"]
    demo = httpx.post(url, json=auth_body()).headers["X-Subject-Token"]
    other = httpx.post(url, json=auth_body()).headers["X-Subject-Token"]
    ok = httpx.get(url, headers={"X-Auth-Token": admin, "X-Subject-Token": demo})
    assert ok.status_code == 200 and ok.json()["token"]["user"]["name"] == "demo"
    # A plain member may not inspect someone else's token.
    denied = httpx.get(url, headers={"X-Auth-Token": other, "X-Subject-Token": demo})
    assert denied.status_code == 403
    assert httpx.delete(url, headers={"X-Auth-Token": admin,
                                      "X-Subject-Token": demo}).status_code == 204
    gone = httpx.get(url, headers={"X-Auth-Token": admin, "X-Subject-Token": demo})
    assert gone.status_code == 404
    assert httpx.get(url, headers={"X-Subject-Token": demo}).status_code == 401
