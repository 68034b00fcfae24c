"""Flavor management as an admin does it: create, show, describe, delete, extra specs
and private flavors' access (os-flavor-manage, os-flavor-extra-specs, os-flavor-access)."""

from __future__ import annotations

import time

import pytest

V255 = {"OpenStack-API-Version": "compute 2.55"}
V261 = {"OpenStack-API-Version": "compute 2.61"}


def _flavor(name: str, **extra) -> dict:
    return {"flavor": {"name": name, "ram": 128, "vcpus": 1, "disk": 1, **extra}}


@pytest.fixture
def admin(shared_cloud, login):
    return login(shared_cloud, "admin")


@pytest.fixture
def demo(shared_cloud, login):
    return login(shared_cloud, "demo")


@pytest.fixture
def made(admin):
    """Flavors a test creates (their ids), deleted afterwards whatever happened."""
    ids: list[str] = []
    yield ids
    for flavor_id in ids:
        admin.request("DELETE", f"{admin.compute}/flavors/{flavor_id}")


def create(session, made, body, headers=None):
    response = session.request("POST", f"{session.compute}/flavors", json=body,
                               headers=headers or {})
    if response.status_code == 200:
        made.append(response.json()["flavor"]["id"])
    return response


def test_admin_creates_shows_and_deletes(admin, made):
    response = create(admin, made, _flavor("fm.create", swap=16, rxtx_factor="2.0",
                                           **{"OS-FLV-EXT-DATA:ephemeral": "2"}))
    assert response.status_code == 200  # upstream's 200, though it created one
    flavor = response.json()["flavor"]
    assert len(flavor["id"]) == 36  # no id given: a UUID
    assert (flavor["name"], flavor["ram"], flavor["vcpus"], flavor["disk"]) == \
        ("fm.create", 128, 1, 1)
    assert (flavor["swap"], flavor["OS-FLV-EXT-DATA:ephemeral"], flavor["rxtx_factor"]) == \
        (16, 2, 2.0)
    assert flavor["os-flavor-access:is_public"] is True
    assert flavor["OS-FLV-DISABLED:disabled"] is False
    assert "description" not in flavor and "extra_specs" not in flavor  # 2.1
    shown = admin.request("GET", f"{admin.compute}/flavors/{flavor['id']}").json()["flavor"]
    assert shown == flavor
    deleted = admin.request("DELETE", f"{admin.compute}/flavors/{flavor['id']}")
    assert deleted.status_code == 202 and deleted.content == b""
    assert admin.request("GET", f"{admin.compute}/flavors/{flavor['id']}").status_code == 404
    again = admin.request("DELETE", f"{admin.compute}/flavors/{flavor['id']}")
    assert again.status_code == 404
    assert again.json()["itemNotFound"]["message"] == \
        f"Flavor {flavor['id']} could not be found."


def test_given_ids_and_auto(admin, made):
    assert create(admin, made, _flavor("fm.id", id="fm-id-1")).json()["flavor"]["id"] == \
        "fm-id-1"
    assert create(admin, made, _flavor("fm.number", id=7007)).json()["flavor"]["id"] == "7007"
    auto = create(admin, made, _flavor("fm.auto", id="auto")).json()["flavor"]["id"]
    assert auto != "auto" and len(auto) == 36


def test_member_is_forbidden_with_novas_fault(demo, admin, made):
    response = create(demo, made, _flavor("fm.member"))
    assert response.status_code == 403
    assert response.json() == {"forbidden": {
        "code": 403,
        "message": "Policy doesn't allow os_compute_api:os-flavor-manage:create to be "
                   "performed."}}
    flavor = create(admin, made, _flavor("fm.notyours")).json()["flavor"]
    for method, path, body in (
            ("DELETE", f"/flavors/{flavor['id']}", None),
            ("POST", f"/flavors/{flavor['id']}/os-extra_specs", {"extra_specs": {"a": "b"}}),
            ("PUT", f"/flavors/{flavor['id']}/os-extra_specs/a", {"a": "b"}),
            ("DELETE", f"/flavors/{flavor['id']}/os-extra_specs/a", None),
            ("GET", f"/flavors/{flavor['id']}/os-flavor-access", None),
            ("POST", f"/flavors/{flavor['id']}/action",
             {"addTenantAccess": {"tenant": demo.project_id}})):
        refused = demo.request(method, demo.compute + path, json=body)
        assert refused.status_code == 403, (method, path, refused.text)
        assert refused.json()["forbidden"]["code"] == 403
    refused = demo.request("PUT", f"{demo.compute}/flavors/{flavor['id']}",
                           json={"flavor": {"description": "x"}}, headers=V255)
    assert refused.status_code == 403


def test_duplicate_name_or_id_is_409(admin, made):
    create(admin, made, _flavor("fm.dup", id="fm-dup"))
    same_name = create(admin, made, _flavor("fm.dup"))
    assert same_name.status_code == 409
    assert same_name.json()["conflictingRequest"]["message"] == \
        "Flavor with name fm.dup already exists."
    same_id = create(admin, made, _flavor("fm.dup2", id="fm-dup"))
    assert same_id.status_code == 409
    assert same_id.json()["conflictingRequest"]["message"] == \
        "Flavor with ID fm-dup already exists."
    assert create(admin, made, _flavor("m1.nano")).status_code == 409


@pytest.mark.parametrize("body", [
    {},
    {"flavor": {"name": "fm.bad", "ram": 128, "vcpus": 1}},            # no disk
    _flavor("fm.bad", ram=0),                                          # ram >= 1
    _flavor("fm.bad", vcpus="two"),
    _flavor("fm.bad", disk=-1),
    _flavor("fm.bad", swap=2**31),
    _flavor("fm.bad", rxtx_factor=0),
    _flavor("fm.bad", id=" lead"),
    _flavor("fm.bad", id="a/b"),
    _flavor(" fm.bad"),
    _flavor("fm.bad", **{"os-flavor-access:is_public": "maybe"}),
    _flavor("fm.bad", description="only from 2.55"),
    _flavor("fm.bad", unknown=1),
])
def test_bad_body_is_400(admin, made, body):
    response = create(admin, made, body)
    assert response.status_code == 400, response.text
    assert response.json()["badRequest"]["code"] == 400


def test_description_per_microversion(admin, made):
    response = create(admin, made, _flavor("fm.described", description="for tests"), V255)
    assert response.status_code == 200, response.text
    flavor = response.json()["flavor"]
    assert flavor["description"] == "for tests" and "extra_specs" not in flavor
    # 2.1 shows no description; 2.61 adds the (empty) extra specs.
    old = admin.request("GET", f"{admin.compute}/flavors/{flavor['id']}").json()["flavor"]
    assert "description" not in old
    new = admin.request("GET", f"{admin.compute}/flavors/{flavor['id']}",
                        headers=V261).json()["flavor"]
    assert new["description"] == "for tests" and new["extra_specs"] == {}
    # PUT changes the description only, from 2.55 on; before, there is no such method.
    updated = admin.request("PUT", f"{admin.compute}/flavors/{flavor['id']}",
                            json={"flavor": {"description": "changed"}}, headers=V261)
    assert updated.status_code == 200
    assert updated.json()["flavor"]["description"] == "changed"
    assert updated.json()["flavor"]["extra_specs"] == {}
    too_old = admin.request("PUT", f"{admin.compute}/flavors/{flavor['id']}",
                            json={"flavor": {"description": "changed"}})
    assert too_old.status_code == 404
    renamed = admin.request("PUT", f"{admin.compute}/flavors/{flavor['id']}",
                            json={"flavor": {"name": "other"}}, headers=V255)
    assert renamed.status_code == 400
    cleared = admin.request("PUT", f"{admin.compute}/flavors/{flavor['id']}",
                            json={"flavor": {"description": None}}, headers=V255)
    assert cleared.json()["flavor"]["description"] is None
    missing = admin.request("PUT", f"{admin.compute}/flavors/nope",
                            json={"flavor": {"description": "x"}}, headers=V255)
    assert missing.status_code == 404


def test_extra_spec_writes(admin, demo, made):
    flavor_id = create(admin, made, _flavor("fm.specs")).json()["flavor"]["id"]
    specs = f"{admin.compute}/flavors/{flavor_id}/os-extra_specs"
    created = admin.request("POST", specs, json={"extra_specs": {
        "hw:cpu_policy": "shared", "hw:numa_nodes": 1}})
    assert created.status_code == 200
    assert created.json() == {"extra_specs": {"hw:cpu_policy": "shared", "hw:numa_nodes": 1}}
    # Numbers are stored as strings; a second create merges.
    admin.request("POST", specs, json={"extra_specs": {"hw:cpu_policy": "dedicated",
                                                       "quota:cpu_shares": "512"}})
    assert admin.request("GET", specs).json() == {"extra_specs": {
        "hw:cpu_policy": "dedicated", "hw:numa_nodes": "1", "quota:cpu_shares": "512"}}
    # Anyone may read them; the flavor shows them at 2.61.
    assert demo.request("GET", f"{specs}/hw:numa_nodes").json() == {"hw:numa_nodes": "1"}
    shown = demo.request("GET", f"{demo.compute}/flavors/{flavor_id}", headers=V261)
    assert shown.json()["flavor"]["extra_specs"]["hw:cpu_policy"] == "dedicated"
    put = admin.request("PUT", f"{specs}/hw:cpu_policy", json={"hw:cpu_policy": "mixed"})
    assert put.status_code == 200 and put.json() == {"hw:cpu_policy": "mixed"}
    mismatch = admin.request("PUT", f"{specs}/hw:cpu_policy", json={"hw:mem_page_size": "1"})
    assert mismatch.status_code == 400
    assert mismatch.json()["badRequest"]["message"] == "Request body and URI mismatch"
    two = admin.request("PUT", f"{specs}/a", json={"a": "1", "b": "2"})
    assert two.status_code == 400
    for bad in ({"extra_specs": {"bad/key": "x"}}, {"extra_specs": {"k": "x" * 256}},
                {"extra_specs": {"k": None}}, {"extra_specs": {"": "x"}}, {"specs": {}}):
        assert admin.request("POST", specs, json=bad).status_code == 400, bad
    deleted = admin.request("DELETE", f"{specs}/quota:cpu_shares")
    assert deleted.status_code == 200 and deleted.content == b""
    gone = admin.request("DELETE", f"{specs}/quota:cpu_shares")
    assert gone.status_code == 404
    assert gone.json()["itemNotFound"]["message"] == \
        f"Flavor {flavor_id} has no extra specs with key quota:cpu_shares."
    assert admin.request("POST", f"{admin.compute}/flavors/nope/os-extra_specs",
                         json={"extra_specs": {"a": "b"}}).status_code == 404


def _names(session, query="", headers=None) -> set[str]:
    response = session.request("GET", f"{session.compute}/flavors{query}",
                               headers=headers or {})
    assert response.status_code == 200, response.text
    return {f["name"] for f in response.json()["flavors"]}


def test_private_flavor_visibility_and_access(shared_cloud, login, admin, demo, made):
    alt = login(shared_cloud, "alt_demo")
    response = create(admin, made, _flavor("fm.private", id="fm-private",
                                           **{"os-flavor-access:is_public": False}))
    flavor = response.json()["flavor"]
    assert flavor["os-flavor-access:is_public"] is False
    access = f"{admin.compute}/flavors/fm-private/os-flavor-access"
    action = f"{admin.compute}/flavors/fm-private/action"
    assert admin.request("GET", access).json() == {"flavor_access": []}
    # Nobody but admins sees it yet: not listed, not shown, not bootable.
    assert "fm.private" not in _names(demo) | _names(demo, "/detail")
    assert demo.request("GET", f"{demo.compute}/flavors/fm-private").status_code == 404
    assert demo.request("GET", f"{demo.compute}/flavors/fm-private/os-extra_specs") \
        .status_code == 404
    # Admins list public flavors by default, private ones with is_public=false, all with none.
    assert "fm.private" not in _names(admin)
    assert "fm.private" in _names(admin, "?is_public=false")
    assert "m1.nano" not in _names(admin, "?is_public=false")
    assert {"fm.private", "m1.nano"} <= _names(admin, "?is_public=None")
    assert admin.request("GET", f"{admin.compute}/flavors?is_public=perhaps").status_code == 400
    # A member's is_public is ignored: still the public ones and theirs.
    assert "fm.private" not in _names(demo, "?is_public=none")

    granted = admin.request("POST", action,
                            json={"addTenantAccess": {"tenant": demo.project_id}})
    assert granted.status_code == 200
    assert granted.json() == {"flavor_access": [{"flavor_id": "fm-private",
                                                 "tenant_id": demo.project_id}]}
    again = admin.request("POST", action, json={"addTenantAccess": {"tenant": demo.project_id}})
    assert again.status_code == 409
    assert "fm.private" in _names(demo) and "fm.private" in _names(demo, "/detail")
    assert demo.request("GET", f"{demo.compute}/flavors/fm-private").status_code == 200
    assert "fm.private" not in _names(alt)
    assert alt.request("GET", f"{alt.compute}/flavors/fm-private").status_code == 404
    assert admin.request("GET", access).json()["flavor_access"] == [
        {"flavor_id": "fm-private", "tenant_id": demo.project_id}]

    bad = admin.request("POST", action, json={"addTenantAccess": {"tenant": "no such/one"}})
    assert bad.status_code == 400
    removed = admin.request("POST", action,
                            json={"removeTenantAccess": {"tenant": demo.project_id}})
    assert removed.status_code == 200 and removed.json() == {"flavor_access": []}
    not_there = admin.request("POST", action,
                              json={"removeTenantAccess": {"tenant": demo.project_id}})
    assert not_there.status_code == 404
    assert "fm.private" not in _names(demo)
    unknown = admin.request("POST", action, json={"grantEverything": {}})
    assert unknown.status_code == 400

    # Public flavors have no access list, and from 2.7 take no access rows.
    public = f"{admin.compute}/flavors/42"
    assert admin.request("GET", f"{public}/os-flavor-access").status_code == 404
    refused = admin.request("POST", f"{public}/action", headers={
        "OpenStack-API-Version": "compute 2.7"},
        json={"addTenantAccess": {"tenant": demo.project_id}})
    assert refused.status_code == 409
    assert refused.json()["conflictingRequest"]["message"] == \
        "Can not add access to a public flavor."


def _wait(session, server_id, statuses=("ACTIVE", "ERROR"), timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        server = session.request("GET", f"{session.compute}/servers/{server_id}") \
            .json()["server"]
        if server["status"] in statuses:
            return server
        time.sleep(0.1)
    raise AssertionError(f"{server_id} did not reach {statuses}")


def test_boot_private_and_deleted_flavors(shared_cloud, admin, demo, made):
    create(admin, made, _flavor("fm.boot", id="fm-boot", ram=64,
                                **{"os-flavor-access:is_public": False}))
    boot = {"server": {"name": "fm", "flavorRef": "fm-boot",
                       "imageRef": shared_cloud.cirros["id"]}}
    refused = demo.request("POST", f"{demo.compute}/servers", json=boot)
    assert refused.status_code == 400
    assert refused.json()["badRequest"]["message"] == "Flavor fm-boot could not be found."
    admin.request("POST", f"{admin.compute}/flavors/fm-boot/action",
                  json={"addTenantAccess": {"tenant": demo.project_id}})
    accepted = demo.request("POST", f"{demo.compute}/servers", json=boot)
    assert accepted.status_code == 202, accepted.text
    server_id = accepted.json()["server"]["id"]
    try:
        assert _wait(demo, server_id)["status"] == "ACTIVE"
        # Deleting the flavor leaves the server as it was: it keeps its embedded flavor.
        assert admin.request("DELETE", f"{admin.compute}/flavors/fm-boot").status_code == 202
        server = demo.request("GET", f"{demo.compute}/servers/{server_id}",
                              headers={"OpenStack-API-Version": "compute 2.47"}).json()
        assert server["server"]["status"] == "ACTIVE"
        assert (server["server"]["flavor"]["original_name"], server["server"]["flavor"]["ram"]) \
            == ("fm.boot", 64)
        again = demo.request("POST", f"{demo.compute}/servers", json=boot)
        assert again.status_code == 400
        assert again.json()["badRequest"]["message"] == "Flavor fm-boot could not be found."
    finally:
        demo.request("DELETE", f"{demo.compute}/servers/{server_id}")


def test_list_filters_sort_and_pages(admin, made):
    for name, ram in (("fm.page-a", 300), ("fm.page-b", 301)):
        create(admin, made, _flavor(name, id=name, ram=ram))
    ids = [f["id"] for f in admin.request(
        "GET", f"{admin.compute}/flavors?minRam=300").json()["flavors"]]
    assert ids == ["1", "2", "fm.page-a", "fm.page-b"]  # by flavor id, as strings
    desc = admin.request("GET", f"{admin.compute}/flavors?minRam=300&sort_key=memory_mb"
                                "&sort_dir=desc").json()["flavors"]
    assert [f["id"] for f in desc] == ["2", "1", "fm.page-b", "fm.page-a"]
    page = admin.request("GET", f"{admin.compute}/flavors/detail?minRam=300&limit=1"
                                "&sort_key=memory_mb").json()
    assert [f["id"] for f in page["flavors"]] == ["fm.page-a"]
    assert "marker=fm.page-a" in page["flavors_links"][0]["href"]
    nxt = admin.request("GET", f"{admin.compute}/flavors?minRam=300&sort_key=memory_mb"
                               "&marker=fm.page-a").json()
    assert [f["id"] for f in nxt["flavors"]] == ["fm.page-b", "1", "2"]
    assert admin.request("GET", f"{admin.compute}/flavors?marker=nope").status_code == 400
    assert admin.request("GET", f"{admin.compute}/flavors?minRam=x").status_code == 400
    assert admin.request("GET", f"{admin.compute}/flavors?sort_key=evil").status_code == 400
