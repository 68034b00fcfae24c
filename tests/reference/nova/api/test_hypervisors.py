"""``os-hypervisors`` on a cloud of two compute hosts: what the compute nodes' rows
hold, the services' state, per microversion (integer ids below 2.53, uuids from it,
the searches as routes or query parameters), and admins only."""

from __future__ import annotations

import json
from datetime import timedelta

import nova_admin_views
import pytest
from nova_admin_views import at, boot, delete
from sqlalchemy import select, update

from novalab.reference.common.db import utcnow
from novalab.reference.nova.compute.utils import compute_node_uuid
from novalab.reference.nova.db.models import ComputeNode, Service

# The module's own two-host cloud and its admin and demo sessions.
cloud, users = nova_admin_views.cloud, nova_admin_views.users


def rows(cloud) -> dict[str, dict]:
    """The compute node rows by host name, as the resource trackers saved them."""
    with cloud.wiring.database("test").session() as session:
        return {n.hypervisor_hostname: {c.key: getattr(n, c.key)
                                        for c in n.__mapper__.column_attrs}
                for n in session.scalars(select(ComputeNode).where(ComputeNode.deleted == 0))}


def get(session, path, version="2.1"):
    return session.request("GET", f"{session.compute}/os-hypervisors{path}",
                           headers=at(version))


def test_list_and_detail_are_the_compute_node_rows(cloud, users):
    admin = users["admin"]
    nodes = rows(cloud)
    listed = get(admin, "").json()["hypervisors"]
    assert listed == [{"id": nodes[name]["id"], "hypervisor_hostname": name, "state": "up",
                       "status": "enabled"} for name in ("compute-1", "compute-2")]
    for hypervisor in get(admin, "/detail").json()["hypervisors"]:
        node = nodes[hypervisor["hypervisor_hostname"]]
        for field in ("vcpus", "memory_mb", "local_gb", "vcpus_used", "memory_mb_used",
                      "local_gb_used", "running_vms", "hypervisor_type",
                      "hypervisor_version"):
            assert hypervisor[field] == node[field], field
        # libvirt's own answer: the test driver's connection says TEST.
        assert hypervisor["hypervisor_type"] == cloud.computes[0].driver._host \
            .get_connection().getType()
        assert hypervisor["free_ram_mb"] == node["memory_mb"] - node["memory_mb_used"]
        assert hypervisor["cpu_info"] == node["cpu_info"]  # a string below 2.28
        assert hypervisor["service"]["host"] == node["host"]
        assert isinstance(hypervisor["service"]["id"], int)


def test_2_53_ids_are_uuids_and_cpu_info_an_object(cloud, users):
    admin = users["admin"]
    nodes = rows(cloud)
    detail = get(admin, "/detail", "2.53").json()["hypervisors"]
    assert [h["id"] for h in detail] == [compute_node_uuid(name)
                                         for name in ("compute-1", "compute-2")]
    first = detail[0]
    assert first["cpu_info"] == json.loads(nodes["compute-1"]["cpu_info"])
    shown = get(admin, f"/{first['id']}", "2.53").json()["hypervisor"]
    assert shown == first
    # The service's uuid is the one os-services shows.
    services = admin.request("GET", f"{admin.compute}/os-services?host=compute-1",
                             headers=at("2.53")).json()["services"]
    assert first["service"]["id"] == services[0]["id"]
    assert get(admin, "/1", "2.53").status_code == 400  # not a uuid
    assert get(admin, f"/{first['id']}").status_code == 404  # not an integer at 2.1
    assert get(admin, f"/{nodes['compute-2']['id']}").json()["hypervisor"][
        "hypervisor_hostname"] == "compute-2"


def test_a_boot_shows_on_its_hypervisor(cloud, users):
    admin, demo = users["admin"], users["demo"]
    server = boot(demo, cloud, "on-a-host")
    assert server["status"] == "ACTIVE"
    shown = admin.request("GET", f"{admin.compute}/servers/{server['id']}",
                          headers=at("2.53")).json()["server"]
    host = shown["OS-EXT-SRV-ATTR:host"]
    try:
        found = get(admin, f"/detail?hypervisor_hostname_pattern={host}&with_servers=1",
                    "2.53").json()["hypervisors"]
        assert [h["hypervisor_hostname"] for h in found] == [host]
        (hypervisor,) = found
        assert hypervisor["running_vms"] == 1
        assert hypervisor["vcpus_used"] == 1  # m1.nano
        assert hypervisor["memory_mb_used"] == 512 + 64  # reserved_host_memory_mb + m1.nano
        assert hypervisor["servers"] == [{"name": shown["OS-EXT-SRV-ATTR:instance_name"],
                                          "uuid": server["id"]}]
        stats = get(admin, "/statistics").json()["hypervisor_statistics"]
        assert (stats["count"], stats["running_vms"], stats["vcpus"]) == \
            (2, 1, sum(n["vcpus"] for n in rows(cloud).values()))
        # Before 2.53, the searches are routes of their own.
        servers = get(admin, f"/{host}/servers").json()["hypervisors"]
        assert servers[0]["servers"][0]["uuid"] == server["id"]
        assert get(admin, "/compute-/search").json()["hypervisors"][1][
            "hypervisor_hostname"] == "compute-2"
        assert get(admin, f"/{host}/servers", "2.53").status_code == 404
        assert get(admin, "/nothing-like-it/search").status_code == 404
    finally:
        delete(demo, server["id"])
    (hypervisor,) = get(admin, f"?hypervisor_hostname_pattern={host}", "2.53").json()[
        "hypervisors"]
    assert "servers" not in hypervisor
    assert get(admin, f"/{compute_node_uuid(host)}", "2.53").json()["hypervisor"][
        "running_vms"] == 0


def test_paging_from_2_33(cloud, users):
    admin = users["admin"]
    page = get(admin, "?limit=1", "2.33").json()
    assert [h["hypervisor_hostname"] for h in page["hypervisors"]] == ["compute-1"]
    (link,) = page["hypervisors_links"]
    assert link["rel"] == "next" and f"marker={page['hypervisors'][0]['id']}" in link["href"]
    rest = get(admin, f"?limit=1&marker={page['hypervisors'][0]['id']}", "2.33").json()
    assert [h["hypervisor_hostname"] for h in rest["hypervisors"]] == ["compute-2"]
    assert get(admin, "?marker=999", "2.33").status_code == 400
    assert get(admin, "?hypervisor_hostname_pattern=compute&limit=1", "2.53").status_code \
        == 400
    assert get(admin, "?unknown=1", "2.53").status_code == 400
    assert "hypervisors_links" not in get(admin, "?limit=1").json()  # 2.1 does not page


def test_state_follows_the_heartbeat_and_status_the_service(cloud, users):
    admin = users["admin"]
    db = cloud.wiring.database("test")
    with db.session() as session:
        session.execute(update(Service).where(Service.host == "compute-2").values(
            last_seen_up=utcnow() - timedelta(seconds=120)))
    try:
        states = {h["hypervisor_hostname"]: h["state"]
                  for h in get(admin, "").json()["hypervisors"]}
        assert states == {"compute-1": "up", "compute-2": "down"}
    finally:
        with db.session() as session:
            session.execute(update(Service).where(Service.host == "compute-2").values(
                last_seen_up=utcnow()))
    assert {h["state"] for h in get(admin, "").json()["hypervisors"]} == {"up"}


@pytest.mark.parametrize("path", ["", "/detail", "/statistics", "/1", "/compute/search",
                                  "/compute/servers"])
def test_members_are_refused(cloud, users, path):
    response = get(users["demo"], path)
    assert response.status_code == 403
    assert "os_compute_api:os-hypervisors" in response.json()["forbidden"]["message"]


def test_uptime_is_not_implemented(cloud, users):
    """The CLI's ``hypervisor show`` asks, and takes 501 for "not available"."""
    node_id = rows(cloud)["compute-1"]["id"]
    assert get(users["admin"], f"/{node_id}/uptime").status_code == 501
    assert get(users["admin"], "/9999/uptime").status_code == 404
