"""Resource providers, inventories and usages over HTTP: shapes, generations, 409s."""

from __future__ import annotations

import uuid

import pytest

from novalab.reference.placement import exception
from novalab.reference.placement.objects.resource_provider import Inventory


def _errors(response) -> dict:
    """The one error of placement's error body (and that the body has that shape)."""
    body = response.json()
    assert list(body) == ["errors"] and len(body["errors"]) == 1, body
    error = body["errors"][0]
    assert error["status"] == response.status_code
    assert error["request_id"] == response.headers["X-OpenStack-Request-ID"]
    return error


def test_create_show_list_update_delete(admin):
    chosen = str(uuid.uuid4())
    created = admin.ok("POST", "/resource_providers", json={"name": "rp-crud", "uuid": chosen})
    assert created["uuid"] == chosen and created["generation"] == 0
    assert created["root_provider_uuid"] == chosen and created["parent_provider_uuid"] is None
    shown = admin.ok("GET", f"/resource_providers/{chosen}")
    assert shown == created
    assert {link["rel"] for link in shown["links"]} == {"self", "inventories", "usages",
                                                        "allocations"}
    assert [p["uuid"] for p in admin.ok("GET", "/resource_providers?name=rp-crud")[
        "resource_providers"]] == [chosen]
    assert admin.ok("GET", f"/resource_providers?uuid={chosen}")["resource_providers"][0][
        "name"] == "rp-crud"
    renamed = admin.ok("PUT", f"/resource_providers/{chosen}", json={"name": "rp-renamed"})
    # A rename is no inventory or allocation write: upstream leaves the generation alone.
    assert renamed["name"] == "rp-renamed" and renamed["generation"] == 0
    admin.ok("DELETE", f"/resource_providers/{chosen}", status=204)
    gone = admin.request("DELETE", f"/resource_providers/{chosen}")
    assert gone.status_code == 404
    assert "No resource provider with uuid" in _errors(gone)["detail"]


def test_create_before_and_after_1_20(admin):
    old = admin.request("POST", "/resource_providers", version="1.19", json={"name": "rp-119"})
    assert old.status_code == 201 and not old.content
    location = old.headers["Location"]
    assert location.startswith("/resource_providers/")
    shown = admin.ok("GET", location, version="1.0")
    assert "root_provider_uuid" not in shown   # 1.14
    new = admin.request("POST", "/resource_providers", version="1.20", json={"name": "rp-120"})
    assert new.status_code == 200 and new.json()["name"] == "rp-120"
    duplicate = admin.request("POST", "/resource_providers", json={"name": "rp-120"})
    assert duplicate.status_code == 409
    error = _errors(duplicate)
    assert error["code"] == "placement.duplicate_name"
    assert "Conflicting resource provider name: rp-120 already exists." in error["detail"]


def test_a_tree_of_providers(admin):
    root = admin.provider("rp-root")
    child = admin.provider("rp-child", parent_provider_uuid=root["uuid"])
    assert child["root_provider_uuid"] == root["uuid"]
    assert child["parent_provider_uuid"] == root["uuid"]
    tree = admin.ok("GET", f"/resource_providers?in_tree={child['uuid']}")
    assert {p["uuid"] for p in tree["resource_providers"]} == {root["uuid"], child["uuid"]}
    parent_busy = admin.request("DELETE", f"/resource_providers/{root['uuid']}")
    assert parent_busy.status_code == 409
    assert _errors(parent_busy)["code"] == "placement.resource_provider.cannot_delete_parent"
    orphan = admin.request("POST", "/resource_providers", json={
        "name": "rp-orphan", "parent_provider_uuid": str(uuid.uuid4())})
    assert orphan.status_code == 400
    assert "parent provider UUID does not exist" in _errors(orphan)["detail"]


def test_every_inventory_write_bumps_the_generation_and_a_stale_one_is_409(admin):
    rp = admin.provider("rp-gen")
    path = f"/resource_providers/{rp['uuid']}/inventories"
    assert rp["generation"] == 0
    put = admin.ok("PUT", path, json={"resource_provider_generation": 0, "inventories": {
        "VCPU": {"total": 8, "allocation_ratio": 16.0}, "MEMORY_MB": {"total": 2048}}})
    assert put["resource_provider_generation"] == 1
    assert put["inventories"]["VCPU"] == {"total": 8, "reserved": 0, "min_unit": 1,
                                          "max_unit": 2**31 - 1, "step_size": 1,
                                          "allocation_ratio": 16.0}
    stale = admin.request("PUT", path, json={"resource_provider_generation": 0,
                                             "inventories": {"VCPU": {"total": 4}}})
    assert stale.status_code == 409
    error = _errors(stale)
    assert error["code"] == "placement.concurrent_update"
    assert error["title"] == "Conflict"
    assert "resource provider generation conflict" in error["detail"]
    one = admin.ok("PUT", f"{path}/VCPU", json={"resource_provider_generation": 1, "total": 6})
    assert one["total"] == 6 and one["resource_provider_generation"] == 2
    stale_one = admin.request("PUT", f"{path}/VCPU",
                              json={"resource_provider_generation": 1, "total": 5})
    assert _errors(stale_one)["code"] == "placement.concurrent_update"
    added = admin.ok("POST", path, status=201, json={"resource_class": "DISK_GB", "total": 10})
    assert added["resource_provider_generation"] == 3
    admin.ok("DELETE", f"{path}/DISK_GB", status=204)
    listed = admin.ok("GET", path)
    assert listed["resource_provider_generation"] == 4
    assert set(listed["inventories"]) == {"VCPU", "MEMORY_MB"}
    assert admin.ok("GET", f"{path}/MEMORY_MB")["resource_provider_generation"] == 4
    assert admin.ok("GET", f"/resource_providers/{rp['uuid']}")["generation"] == 4
    admin.ok("DELETE", path, status=204)   # 1.5
    assert admin.ok("GET", path) == {"resource_provider_generation": 5, "inventories": {}}
    assert admin.request("DELETE", path, version="1.4").status_code == 405


def test_inventory_capacity_and_classes_are_checked(admin):
    rp = admin.provider("rp-cap")
    path = f"/resource_providers/{rp['uuid']}/inventories"

    def put(version, **vcpu):
        return admin.request("PUT", path, version=version, json={
            "resource_provider_generation": admin.ok("GET", path)["resource_provider_generation"],
            "inventories": {"VCPU": {"total": 4, **vcpu}}})

    assert put("1.25", reserved=4).status_code == 400   # reserved == total before 1.26
    assert put("1.26", reserved=4).status_code == 200
    too_much = put("1.26", reserved=5)
    assert too_much.status_code == 400 and "greater than total" in _errors(too_much)["detail"]
    unknown = admin.request("PUT", path, json={"resource_provider_generation": 1,
                                               "inventories": {"CUSTOM_GOLD": {"total": 1}}})
    assert unknown.status_code == 400
    assert "No such resource class CUSTOM_GOLD" in _errors(unknown)["detail"]


def test_usages_of_a_provider_and_of_a_project(admin, demo):
    rp = admin.provider("rp-usage", {"VCPU": {"total": 4}, "DISK_GB": {"total": 100}})
    consumer = str(uuid.uuid4())
    admin.ok("PUT", f"/allocations/{consumer}", status=204, json={
        "allocations": {rp["uuid"]: {"resources": {"VCPU": 2, "DISK_GB": 10}}},
        "project_id": demo.project_id, "user_id": demo.user_id, "consumer_generation": None})
    usages = admin.ok("GET", f"/resource_providers/{rp['uuid']}/usages")
    assert usages == {"resource_provider_generation": 2, "usages": {"VCPU": 2, "DISK_GB": 10}}
    total = admin.ok("GET", f"/usages?project_id={demo.project_id}")["usages"]
    assert total["VCPU"] >= 2 and total["DISK_GB"] >= 10
    # The one placement read a project's own reader may make, and only for its project.
    assert demo.ok("GET", f"/usages?project_id={demo.project_id}") == {"usages": total}
    assert demo.request("GET", f"/usages?project_id={uuid.uuid4().hex}").status_code == 403
    assert admin.request("GET", "/usages").status_code == 400          # project_id required
    assert admin.request("GET", "/usages?project_id=x", version="1.8").status_code == 404


def test_a_writer_that_read_an_older_generation_loses(env, admin):
    """Two writers read generation 1; the second to write finds it moved (the guarded
    UPDATE matches no row) and its whole write is rolled back."""
    uuid_ = admin.provider("rp-race", {"VCPU": {"total": 2}})["uuid"]
    first, second = env.providers.get_by_uuid(uuid_), env.providers.get_by_uuid(uuid_)
    env.providers.set_inventory(first, [Inventory("VCPU", 4)])
    with pytest.raises(exception.ConcurrentUpdateDetected):
        env.providers.set_inventory(second, [Inventory("VCPU", 8), Inventory("DISK_GB", 9)])
    shown = admin.ok("GET", f"/resource_providers/{uuid_}/inventories")
    assert shown["resource_provider_generation"] == 2
    assert {rc: i["total"] for rc, i in shown["inventories"].items()} == {"VCPU": 4}
