"""Keystone's token API: issue, validate, revoke; the token store holds only hashes."""

from __future__ import annotations

import hashlib

import httpx
from sqlalchemy import select

from novalab.reference.common.credentials import PERSONA_PASSWORD
from novalab.reference.keystone.models import Token


def auth_body(user="demo", password=PERSONA_PASSWORD, project="demo"):
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
    other = httpx.post(url, json=auth_body("alt_demo", project="alt_demo")) \
        .headers["X-Subject-Token"]
    ok = httpx.get(url, headers={"X-Auth-Token": admin, "X-Subject-Token": demo})
    assert ok.status_code == 200 and ok.json()["token"]["user"]["name"] == "demo"
    # A plain member may not inspect another user's token.
    denied = httpx.get(url, headers={"X-Auth-Token": other, "X-Subject-Token": demo})
    assert denied.status_code == 403
    assert httpx.delete(url, headers={"X-Auth-Token": admin,
                                      "X-Subject-Token": demo}).status_code == 204
    gone = httpx.get(url, headers={"X-Auth-Token": admin, "X-Subject-Token": demo})
    assert gone.status_code == 404
    assert httpx.get(url, headers={"X-Subject-Token": demo}).status_code == 401


def _token(cloud, user: str, project: str | None) -> str:
    body = auth_body(user, cloud.config.credentials.password_for(user), project)
    if project is None:
        del body["auth"]["scope"]
    response = httpx.post(f"{cloud.identity_url}/auth/tokens", json=body)
    assert response.status_code == 201, response.text
    return response.headers["X-Subject-Token"]


def test_only_its_user_or_an_admin_revokes_a_token(shared_cloud):
    """Issue 21, finding 16: any token, unscoped included, revoked anyone's. Upstream's
    ``identity:revoke_token`` (keystone/common/policies/token.py) is ``rule:admin_required
    or rule:token_subject``: the token's own user (from any of its tokens) or an admin;
    everyone else a 403 in keystone's error body, and the token lives on."""
    url = f"{shared_cloud.identity_url}/auth/tokens"
    victim = _token(shared_cloud, "demo", "demo")
    for user, project in [("alt_demo", None), ("alt_demo", "alt_demo"), ("reader", "demo"),
                          ("nova", "service")]:
        attacker = _token(shared_cloud, user, project)
        refused = httpx.delete(url, headers={"X-Auth-Token": attacker, "X-Subject-Token": victim})
        assert refused.status_code == 403, (user, project)
        assert refused.json()["error"]["title"] == "Forbidden"
        assert "identity:revoke_token" in refused.json()["error"]["message"]
    alive = httpx.get(url, headers={"X-Auth-Token": victim, "X-Subject-Token": victim})
    assert alive.status_code == 200
    own_other = _token(shared_cloud, "demo", None)
    assert httpx.delete(url, headers={"X-Auth-Token": own_other,
                                      "X-Subject-Token": victim}).status_code == 204
    assert httpx.get(url, headers={"X-Auth-Token": own_other,
                                   "X-Subject-Token": victim}).status_code == 404


def test_validate_and_check_follow_upstreams_token_policies(shared_cloud):
    """``identity:validate_token`` (GET) is admin, service or the token's own user;
    ``identity:check_token`` (HEAD) admin or the token's own user: a service validates
    the tokens it is sent, and a user may look at any of their own tokens."""
    url = f"{shared_cloud.identity_url}/auth/tokens"
    subject = _token(shared_cloud, "demo", "demo")
    callers = {name: _token(shared_cloud, *login) for name, login in {
        "own_other": ("demo", None), "other_user": ("alt_demo", "alt_demo"),
        "service": ("nova", "service"), "admin": ("admin", "admin")}.items()}
    expected = {"own_other": (200, 200), "other_user": (403, 403), "service": (200, 403),
                "admin": (200, 200)}
    for name, token in callers.items():
        headers = {"X-Auth-Token": token, "X-Subject-Token": subject}
        answers = (httpx.get(url, headers=headers).status_code,
                   httpx.head(url, headers=headers).status_code)
        assert answers == expected[name], name


def test_a_full_database_is_a_503_for_tokens_and_writes_and_recovers(cloud, login):
    """Issue 21, finding 14: a disk full enough that the database cannot grow made every
    API of every service answer 500, token issue included. It is a 503 that says so,
    reads go on, and once space is freed the same services write again.

    SQLite's ``max_page_count`` (per connection) stands for the full disk: every new
    connection of every service may not grow the file, and its free pages are filled."""
    from sqlalchemy import event, text

    databases = list(cloud.wiring.databases.values())
    full = {"on": True}

    def cannot_grow(dbapi_connection, _record):
        if full["on"]:
            pages = dbapi_connection.execute("PRAGMA page_count").fetchone()[0]
            dbapi_connection.execute(f"PRAGMA max_page_count = {pages}")

    def until_refused(send) -> httpx.Response:
        for _ in range(300):
            response = send()
            if response.status_code not in (201, 202):
                return response
        raise AssertionError("the database never filled")

    demo = login(cloud)  # before the disk fills: a session needs a token
    filler = databases[0].engine
    with filler.begin() as conn:
        conn.execute(text("CREATE TABLE test_filler (payload BLOB)"))
    for db in databases:
        event.listen(db.engine, "connect", cannot_grow)
        db.engine.dispose()
    try:
        with filler.connect() as conn:
            for size in (65536, 4096, 256, 16):
                try:
                    while True:
                        conn.execute(text("INSERT INTO test_filler VALUES (:p)"),
                                     {"p": b"\0" * size})
                        conn.commit()
                except Exception:
                    conn.rollback()
        token = until_refused(lambda: httpx.post(f"{cloud.identity_url}/auth/tokens",
                                                 json=auth_body(password=PERSONA_PASSWORD)))
        assert token.status_code == 503, token.text
        assert token.json()["error"]["title"] == "Service Unavailable"
        assert "disk is full" in token.json()["error"]["message"]
        images = f"{demo.image}/v2/images"
        image = until_refused(lambda: demo.request("POST", images, json={"name": "x"}))
        assert image.status_code == 503 and "disk is full" in image.text, image.text
        assert demo.request("GET", images).status_code == 200   # reads go on
    finally:
        full["on"] = False
        for db in databases:
            event.remove(db.engine, "connect", cannot_grow)
            db.engine.dispose()
    assert httpx.post(f"{cloud.identity_url}/auth/tokens",
                      json=auth_body(password=PERSONA_PASSWORD)).status_code == 201
    assert demo.request("POST", images, json={"name": "after"}).status_code == 201
