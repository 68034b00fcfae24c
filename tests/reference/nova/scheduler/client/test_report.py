"""In the modern topology each compute node is a placement resource provider."""

from __future__ import annotations

import httpx

from novalab.reference.nova.compute.manager import RESERVED_HOST_MEMORY_MB, compute_node_uuid


def test_compute_nodes_report_their_inventory_to_placement(cloud_factory, login):
    cloud = cloud_factory(topology="modern", computes=2, network=False)
    admin = login(cloud, "admin")
    placement = admin.client.endpoint("placement")
    headers = {"X-Auth-Token": admin.token, "OpenStack-API-Version": "placement 1.28"}
    providers = httpx.get(f"{placement}/resource_providers", headers=headers).json()
    by_name = {p["name"]: p for p in providers["resource_providers"]}
    assert sorted(by_name) == ["compute-1", "compute-2"]
    assert by_name["compute-1"]["uuid"] == compute_node_uuid("compute-1")

    inventories = httpx.get(
        f"{placement}/resource_providers/{by_name['compute-1']['uuid']}/inventories",
        headers=headers).json()["inventories"]
    node = cloud.computes[0].driver.get_available_resource("compute-1")
    assert inventories["VCPU"]["total"] == node["vcpus"]
    assert inventories["MEMORY_MB"]["total"] == node["memory_mb"]
    assert inventories["MEMORY_MB"]["reserved"] == RESERVED_HOST_MEMORY_MB
    assert inventories["DISK_GB"]["total"] == node["local_gb"]
    assert inventories["VCPU"]["allocation_ratio"] == 16.0

    # Reporting again changes nothing: the provider's generation stays.
    generation = by_name["compute-1"]["generation"]
    cloud.computes[0].update_available_resource()
    again = httpx.get(f"{placement}/resource_providers/{by_name['compute-1']['uuid']}",
                      headers=headers).json()
    assert again["generation"] == generation


def test_the_classic_topology_runs_no_placement(cloud, login):
    admin = login(cloud, "admin")
    assert "placement" not in admin.client.catalog
    assert cloud.computes[0].reportclient is None
