"""Allocations and allocation candidates: consumer generations, capacity, the math."""

from __future__ import annotations

import uuid

import pytest


def _error(response) -> dict:
    (error,) = response.json()["errors"]
    return error


def _put(session, consumer, allocations, generation=None, version="1.29", **body):
    return session.request("PUT", f"/allocations/{consumer}", version=version, json={
        "allocations": {rp: {"resources": resources} for rp, resources in allocations.items()},
        "project_id": "p-alloc", "user_id": "u-alloc", "consumer_generation": generation,
        **body})


def test_consumer_generations_guard_a_consumers_allocations(nova, admin):
    rp = admin.provider("rp-consumer", {"VCPU": {"total": 4}, "MEMORY_MB": {"total": 1024}})
    consumer = str(uuid.uuid4())
    # A new consumer: the caller says it expects none (null); anything else is a 409.
    stale_new = _put(nova, consumer, {rp["uuid"]: {"VCPU": 1}}, generation=0)
    assert stale_new.status_code == 409
    assert _error(stale_new)["code"] == "placement.concurrent_update"
    assert "expected null but got 0" in _error(stale_new)["detail"]
    assert _put(nova, consumer, {rp["uuid"]: {"VCPU": 1, "MEMORY_MB": 64}}).status_code == 204
    held = nova.ok("GET", f"/allocations/{consumer}")
    assert held == {"allocations": {rp["uuid"]: {"resources": {"VCPU": 1, "MEMORY_MB": 64},
                                                 "generation": 2}},
                    "project_id": "p-alloc", "user_id": "u-alloc", "consumer_generation": 1}
    # Another writer who read no allocations (null) or generation 0 is refused.
    assert _put(nova, consumer, {rp["uuid"]: {"VCPU": 2}}).status_code == 409
    assert _put(nova, consumer, {rp["uuid"]: {"VCPU": 2}}, generation=0).status_code == 409
    assert _put(nova, consumer, {rp["uuid"]: {"VCPU": 2}}, generation=1).status_code == 204
    assert nova.ok("GET", f"/allocations/{consumer}")["consumer_generation"] == 2
    # Before 1.28 nobody checks (and nobody is told the generation).
    old = nova.request("PUT", f"/allocations/{consumer}", version="1.27", json={
        "allocations": {rp["uuid"]: {"resources": {"VCPU": 3}}},
        "project_id": "p-alloc", "user_id": "u-alloc"})
    assert old.status_code == 204
    assert "consumer_generation" not in nova.ok("GET", f"/allocations/{consumer}",
                                                version="1.27")
    by_provider = nova.ok("GET", f"/resource_providers/{rp['uuid']}/allocations")
    assert by_provider["allocations"] == {consumer: {"resources": {"VCPU": 3},
                                                     "consumer_generation": 3}}
    # Empty allocations with the right generation: the safe delete (1.28).
    assert _put(nova, consumer, {}, generation=3).status_code == 204
    assert nova.ok("GET", f"/allocations/{consumer}") == {"allocations": {}}
    usages = nova.ok("GET", f"/resource_providers/{rp['uuid']}/usages")
    assert usages["usages"] == {"VCPU": 0, "MEMORY_MB": 0}
    # Every allocation write moved the provider's generation: 1 (inventory) + 4 writes.
    assert usages["resource_provider_generation"] == 5


def test_capacity_and_unit_constraints_refuse_an_allocation(nova, admin):
    rp = admin.provider("rp-full", {"VCPU": {"total": 4, "reserved": 1, "allocation_ratio": 2.0,
                                             "max_unit": 4, "step_size": 2}})
    one, two = str(uuid.uuid4()), str(uuid.uuid4())
    assert _put(nova, one, {rp["uuid"]: {"VCPU": 4}}).status_code == 204   # capacity (4-1)*2=6
    full = _put(nova, two, {rp["uuid"]: {"VCPU": 4}})
    assert full.status_code == 409
    assert "The requested amount would exceed the capacity" in _error(full)["detail"]
    odd = _put(nova, two, {rp["uuid"]: {"VCPU": 1}})     # not a multiple of step_size
    assert odd.status_code == 409 and "constraints" in _error(odd)["detail"]
    assert _put(nova, two, {rp["uuid"]: {"VCPU": 2}}).status_code == 204   # 6 used of 6
    no_disk = _put(nova, str(uuid.uuid4()), {rp["uuid"]: {"DISK_GB": 1}})
    assert no_disk.status_code == 409 and "invalid" in _error(no_disk)["detail"]
    missing = _put(nova, str(uuid.uuid4()), {str(uuid.uuid4()): {"VCPU": 2}})
    assert missing.status_code == 400 and "does not exist" in _error(missing)["detail"]
    in_use = admin.request("DELETE", f"/resource_providers/{rp['uuid']}")
    assert in_use.status_code == 409
    assert _error(in_use)["code"] == "placement.resource_provider.inuse"
    inventory_in_use = admin.request("DELETE", f"/resource_providers/{rp['uuid']}/inventories")
    assert _error(inventory_in_use)["code"] == "placement.inventory.inuse"
    for consumer in (one, two):
        nova.ok("DELETE", f"/allocations/{consumer}", status=204)
    assert nova.request("DELETE", f"/allocations/{one}").status_code == 404
    admin.ok("DELETE", f"/resource_providers/{rp['uuid']}", status=204)


def test_post_allocations_moves_a_consumer_in_one_write(nova, admin):
    """What a migration does (1.13): the instance's allocation moves to the migration
    record on the source, the instance claims the destination, atomically."""
    source = admin.provider("rp-source", {"VCPU": {"total": 2}})
    dest = admin.provider("rp-dest", {"VCPU": {"total": 2}})
    instance, migration = str(uuid.uuid4()), str(uuid.uuid4())
    assert _put(nova, instance, {source["uuid"]: {"VCPU": 2}}).status_code == 204
    owner = {"project_id": "p-alloc", "user_id": "u-alloc"}
    body = {migration: {"allocations": {source["uuid"]: {"resources": {"VCPU": 2}}},
                        "consumer_generation": None, **owner},
            instance: {"allocations": {dest["uuid"]: {"resources": {"VCPU": 2}}},
                       "consumer_generation": 1, **owner}}
    assert nova.request("POST", "/allocations", version="1.12", json=body).status_code == 404
    nova.ok("POST", "/allocations", status=204, json=body)
    assert list(nova.ok("GET", f"/allocations/{instance}")["allocations"]) == [dest["uuid"]]
    assert list(nova.ok("GET", f"/allocations/{migration}")["allocations"]) == [source["uuid"]]
    # One stale consumer fails the whole request: nothing changes.
    body = {migration: {"allocations": {}, "consumer_generation": 0, **owner},
            instance: {"allocations": {}, "consumer_generation": 2, **owner}}
    assert nova.request("POST", "/allocations", json=body).status_code == 409
    assert nova.ok("GET", f"/allocations/{migration}")["allocations"]
    body[migration]["consumer_generation"] = 1
    nova.ok("POST", "/allocations", status=204, json=body)
    assert nova.ok("GET", f"/resource_providers/{source['uuid']}/usages")["usages"] == {"VCPU": 0}


def test_allocations_before_1_12_are_a_list(nova, admin):
    rp = admin.provider("rp-list", {"DISK_GB": {"total": 10}})
    consumer = str(uuid.uuid4())
    body = {"allocations": [{"resource_provider": {"uuid": rp["uuid"]},
                             "resources": {"DISK_GB": 3}}]}
    assert nova.request("PUT", f"/allocations/{consumer}", version="1.7",
                        json=body).status_code == 204
    # From 1.8 the owner is required.
    refused = nova.request("PUT", f"/allocations/{consumer}", version="1.8", json=body)
    assert refused.status_code == 400 and "JSON does not validate" in _error(refused)["detail"]
    assert nova.ok("GET", f"/allocations/{consumer}", version="1.11") == {
        "allocations": {rp["uuid"]: {"resources": {"DISK_GB": 3}, "generation": 2}}}
    nova.ok("DELETE", f"/allocations/{consumer}", status=204)


# -- allocation candidates -------------------------------------------------------------------

@pytest.fixture(scope="module")
def hosts(admin, nova):
    """Two compute nodes: one roomy and overcommitted, one nearly full."""
    roomy = admin.provider("cn-roomy", {
        "VCPU": {"total": 4, "reserved": 1, "allocation_ratio": 4.0},   # capacity 12
        "MEMORY_MB": {"total": 2048, "reserved": 512, "allocation_ratio": 1.5},   # 2304
        "DISK_GB": {"total": 100, "max_unit": 50}})
    tight = admin.provider("cn-tight", {
        "VCPU": {"total": 2}, "MEMORY_MB": {"total": 1024, "step_size": 256},
        "DISK_GB": {"total": 20}})
    for rp, resources in ((tight, {"VCPU": 1, "MEMORY_MB": 768}), (roomy, {"VCPU": 5})):
        assert _put(nova, str(uuid.uuid4()), {rp["uuid"]: resources}).status_code == 204
    return roomy, tight


def _candidates(session, query, version="1.29"):
    found = session.ok("GET", f"/allocation_candidates?{query}", version=version)
    hosts = [next(iter(r["allocations"])) for r in found["allocation_requests"]]
    return hosts, found


def test_capacity_is_total_minus_reserved_times_ratio_minus_used(nova, hosts):
    roomy, tight = hosts
    found, body = _candidates(nova, "resources=VCPU:1,MEMORY_MB:256,DISK_GB:1")
    assert set(found) >= {roomy["uuid"], tight["uuid"]}
    assert body["provider_summaries"][roomy["uuid"]]["resources"] == {
        "VCPU": {"capacity": 12, "used": 5}, "MEMORY_MB": {"capacity": 2304, "used": 0},
        "DISK_GB": {"capacity": 100, "used": 0}}
    assert body["provider_summaries"][tight["uuid"]]["resources"]["MEMORY_MB"] == {
        "capacity": 1024, "used": 768}
    request = next(r for r in body["allocation_requests"] if tight["uuid"] in r["allocations"])
    assert request == {"allocations": {tight["uuid"]: {"resources": {
        "VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1}}}}
    # tight has 1 VCPU and 256 MB left: a second of either does not fit.
    assert tight["uuid"] not in _candidates(nova, "resources=VCPU:2")[0]
    assert tight["uuid"] not in _candidates(nova, "resources=MEMORY_MB:512")[0]
    # roomy: 12 - 5 = 7 VCPU left; 7 fits, 8 does not.
    assert roomy["uuid"] in _candidates(nova, "resources=VCPU:7")[0]
    assert roomy["uuid"] not in _candidates(nova, "resources=VCPU:8")[0]
    # Units: tight's memory comes in steps of 256, roomy's disk at most 50 at once.
    assert tight["uuid"] not in _candidates(nova, "resources=MEMORY_MB:100")[0]
    assert roomy["uuid"] not in _candidates(nova, "resources=DISK_GB:60")[0]
    assert tight["uuid"] in _candidates(nova, "resources=DISK_GB:20")[0]


def test_candidates_change_shape_with_the_microversion(nova, hosts):
    roomy, _ = hosts
    _, old = _candidates(nova, "resources=VCPU:1", version="1.10")
    request = next(r for r in old["allocation_requests"]
                   if r["allocations"][0]["resource_provider"]["uuid"] == roomy["uuid"])
    assert request == {"allocations": [{"resource_provider": {"uuid": roomy["uuid"]},
                                        "resources": {"VCPU": 1}}]}
    # Before 1.27 a summary lists only the requested classes; no traits before 1.17.
    assert old["provider_summaries"][roomy["uuid"]] == {
        "resources": {"VCPU": {"capacity": 12, "used": 5}}}
    _, limited = _candidates(nova, "resources=VCPU:1&limit=1", version="1.16")
    assert len(limited["allocation_requests"]) == 1 and len(limited["provider_summaries"]) == 1
    assert nova.request("GET", "/allocation_candidates?resources=VCPU:1",
                        version="1.9").status_code == 404


def test_candidates_across_a_tree_from_1_29(nova, admin):
    """A host whose disk is a child provider: one candidate spans the tree."""
    host = admin.provider("cn-nested", {"VCPU": {"total": 64}})
    disk = admin.provider("cn-nested-disk", {"DISK_GB": {"total": 4000}},
                          parent_provider_uuid=host["uuid"])
    query = "resources=VCPU:33,DISK_GB:3000"   # only this tree has that much of either
    _, nested = _candidates(nova, query)
    assert nested["allocation_requests"] == [{"allocations": {
        host["uuid"]: {"resources": {"VCPU": 33}},
        disk["uuid"]: {"resources": {"DISK_GB": 3000}}}}]
    assert nested["provider_summaries"][disk["uuid"]]["root_provider_uuid"] == host["uuid"]
    assert nested["provider_summaries"][disk["uuid"]]["parent_provider_uuid"] == host["uuid"]
    assert _candidates(nova, query, version="1.28")[1] == {
        "allocation_requests": [], "provider_summaries": {}}
    # Granular (1.25): resources1 must come from one provider, and none has both.
    grouped = "resources1=VCPU:33,DISK_GB:3000&group_policy=none"
    assert _candidates(nova, grouped)[1]["allocation_requests"] == []


def test_bad_candidate_queries_are_400(nova):
    for query, words in (("", "resources"), ("resources=VCPU:0", "amount >= 1"),
                         ("resources=VCPU", "Badly formed"),
                         ("resources=CUSTOM_GOLD:1", "No such resource class"),
                         ("resources=VCPU:1&required=HW_CPU_X86_AVX", "No such trait"),
                         ("resources1=VCPU:1&resources2=VCPU:1", "group_policy"),
                         ("resources=VCPU:1&bogus=1", "Invalid query string parameters")):
        response = nova.request("GET", f"/allocation_candidates?{query}")
        assert response.status_code == 400, query
        assert words in _error(response)["detail"], (query, response.text)
