"""The catalog and the assignments as an admin reads them: ``region``, ``service``,
``endpoint`` and ``role assignment list``, each as the Identity API reference gives it.

Regions are any token's to read; services, endpoints and assignments are
admins' (a member's request is a 403, as upstream's defaults say).
"""

from __future__ import annotations

import httpx
import jsonschema
import pytest


def login(cloud, user: str, project: str) -> httpx.Client:
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": user, "domain": {"id": "default"},
        "password": cloud.config.credentials.password_for(user)}}},
        "scope": {"project": {"name": project, "domain": {"id": "default"}}}}}
    response = httpx.post(f"{cloud.identity_url}/auth/tokens", json=body)
    assert response.status_code == 201, response.text
    return httpx.Client(base_url=cloud.identity_url, timeout=30, headers={
        "X-Auth-Token": response.headers["X-Subject-Token"]})


@pytest.fixture(scope="module")
def admin(shared_cloud):
    with login(shared_cloud, "admin", "admin") as client:
        yield client


@pytest.fixture(scope="module")
def demo(shared_cloud):
    with login(shared_cloud, "demo", "demo") as client:
        yield client


def spans_named(cloud, name: str) -> list:
    cloud.telemetry.force_flush()
    return [s for s in cloud.telemetry.finished_spans() if s.name == name]


def test_region_one_is_a_real_region_every_endpoint_names(shared_cloud, admin, demo):
    regions = demo.get("/regions").json()["regions"]  # any token reads regions
    assert [(r["id"], r["parent_region_id"]) for r in regions] == [("RegionOne", None)]
    assert demo.get("/regions/RegionOne").json()["region"]["id"] == "RegionOne"
    missing = demo.get("/regions/RegionTwo")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == 404
    endpoints = admin.get("/endpoints").json()["endpoints"]
    assert endpoints and {e["region_id"] for e in endpoints} == {"RegionOne"}
    assert spans_named(shared_cloud, "Manager.list_regions")


def test_services_and_endpoints_match_the_token_catalog(shared_cloud, admin):
    token = admin.get("/auth/tokens", headers={
        "X-Subject-Token": admin.headers["X-Auth-Token"]}).json()["token"]
    services = admin.get("/services").json()["services"]
    assert {(s["id"], s["type"], s["name"]) for s in services} == {
        (s["id"], s["type"], s["name"]) for s in token["catalog"]}
    compute = admin.get("/services", params={"type": "compute"}).json()["services"]
    assert [s["type"] for s in compute] == ["compute"]
    assert admin.get(f"/services/{compute[0]['id']}").json()["service"] == compute[0]
    public = admin.get("/endpoints", params={"interface": "public",
                                             "service_id": compute[0]["id"]}).json()
    (endpoint,) = public["endpoints"]
    catalog = next(s for s in token["catalog"] if s["type"] == "compute")
    in_token = next(e for e in catalog["endpoints"] if e["interface"] == "public")
    assert endpoint["id"] == in_token["id"]
    # The endpoint is stored as a template; the token's catalog fills in the project.
    assert endpoint["url"].replace("$(project_id)s", token["project"]["id"]) == in_token["url"]
    assert admin.get(f"/endpoints/{endpoint['id']}").json()["endpoint"] == endpoint
    assert admin.get("/endpoints/nope").status_code == 404
    assert spans_named(shared_cloud, "Manager.list_endpoints")
    assert spans_named(shared_cloud, "Manager.list_services")


@pytest.mark.parametrize("path", ["/services", "/endpoints", "/role_assignments",
                                  "/projects", "/users", "/roles"])
def test_a_member_is_refused_what_upstream_keeps_for_admins(demo, path):
    response = demo.get(path)
    assert response.status_code == 403, response.text
    assert response.json()["error"]["title"] == "Forbidden"


def test_role_assignments_filter_by_user_project_and_role_with_names(shared_cloud, admin):
    demo_user = admin.get("/users", params={"name": "demo"}).json()["users"][0]
    reader_user = admin.get("/users", params={"name": "reader"}).json()["users"][0]
    project = admin.get("/projects", params={"name": "demo"}).json()["projects"][0]
    roles = {r["name"]: r["id"] for r in admin.get("/roles").json()["roles"]}

    mine = admin.get("/role_assignments", params={"user.id": demo_user["id"]}).json()
    assert mine["role_assignments"]
    assert {a["user"]["id"] for a in mine["role_assignments"]} == {demo_user["id"]}
    assert all("name" not in a["role"] for a in mine["role_assignments"])

    on_demo = admin.get("/role_assignments", params={
        "scope.project.id": project["id"], "include_names": "True"}).json()["role_assignments"]
    pairs = {(a["user"]["name"], a["role"]["name"]) for a in on_demo}
    assert ("reader", "reader") in pairs and ("demo", "member") in pairs
    assert {a["scope"]["project"]["name"] for a in on_demo} == {"demo"}
    assert {a["user"]["domain"]["id"] for a in on_demo} == {"default"}

    readers = admin.get("/role_assignments", params={
        "scope.project.id": project["id"], "role.id": roles["reader"]}).json()
    assert {a["user"]["id"] for a in readers["role_assignments"]} >= {reader_user["id"]}
    assert {a["role"]["id"] for a in readers["role_assignments"]} == {roles["reader"]}
    # Each assignment links to its grant, and the grant is there.
    link = readers["role_assignments"][0]["links"]["assignment"]
    assert admin.head(link.split("/v3", 1)[1]).status_code == 204
    # No group, domain or system grants exist here.
    assert admin.get("/role_assignments", params={"scope.domain.id": "default"}).json()[
        "role_assignments"] == []
    assert spans_named(shared_cloud, "Manager.list_role_assignments")


# -- the bodies, against schemas written from the Identity API reference ---------------------

_LINKS = {"type": "object", "properties": {"self": {"type": "string", "format": "uri"}},
          "required": ["self"], "additionalProperties": False}
_REF = {"type": "object", "properties": {
    "id": {"type": "string"}, "name": {"type": "string"},
    "domain": {"type": "object", "properties": {"id": {"type": "string"},
                                                "name": {"type": "string"}},
               "required": ["id"], "additionalProperties": False}},
    "required": ["id"], "additionalProperties": False}
SCHEMAS = {
    "region": {"type": "object", "properties": {
        "id": {"type": "string"}, "description": {"type": "string"},
        "parent_region_id": {"type": ["string", "null"]}, "links": _LINKS},
        "required": ["id", "description", "parent_region_id", "links"],
        "additionalProperties": False},
    "service": {"type": "object", "properties": {
        "id": {"type": "string"}, "type": {"type": "string"}, "name": {"type": "string"},
        "enabled": {"type": "boolean"}, "description": {"type": "string"}, "links": _LINKS},
        "required": ["id", "type", "enabled", "links"], "additionalProperties": False},
    "endpoint": {"type": "object", "properties": {
        "id": {"type": "string"}, "interface": {"enum": ["public", "internal", "admin"]},
        "region": {"type": "string"}, "region_id": {"type": "string"},
        "service_id": {"type": "string"}, "url": {"type": "string"},
        "enabled": {"type": "boolean"}, "links": _LINKS},
        "required": ["id", "interface", "region_id", "service_id", "url", "enabled", "links"],
        "additionalProperties": False},
    "role_assignment": {"type": "object", "properties": {
        "role": _REF, "user": _REF,
        "scope": {"type": "object", "properties": {"project": _REF},
                  "required": ["project"], "additionalProperties": False},
        "links": {"type": "object", "properties": {"assignment": {"type": "string"}},
                  "required": ["assignment"], "additionalProperties": False}},
        "required": ["role", "user", "scope", "links"], "additionalProperties": False},
}


def collection(key: str, item: dict) -> dict:
    return {"type": "object", "properties": {
        key: {"type": "array", "items": item},
        "links": {"type": "object", "properties": {
            "self": {"type": "string"}, "previous": {"type": ["string", "null"]},
            "next": {"type": ["string", "null"]}},
            "required": ["self", "previous", "next"], "additionalProperties": False}},
        "required": [key, "links"], "additionalProperties": False}


@pytest.mark.parametrize(("path", "kind"), [
    ("/regions", "region"), ("/services", "service"), ("/endpoints", "endpoint"),
    ("/role_assignments", "role_assignment"),
    ("/role_assignments?include_names=1", "role_assignment")])
def test_bodies_match_the_api_reference(admin, path, kind):
    listed = admin.get(path).json()
    key = f"{kind}s"
    assert listed[key]
    jsonschema.validate(listed, collection(key, SCHEMAS[kind]))
    if kind != "role_assignment":
        one = admin.get(f"/{key}/{listed[key][0]['id']}").json()
        jsonschema.validate(one, {"type": "object", "properties": {kind: SCHEMAS[kind]},
                                  "required": [kind], "additionalProperties": False})
