"""``os-availability-zone``: ``nova`` for the compute hosts (novalab has no host
aggregates), ``internal`` for the scheduler and conductor, hidden from the plain list;
a zone whose every service is disabled is not available."""

from __future__ import annotations

import nova_admin_views
from nova_admin_views import at, boot, delete

# The module's own two-host cloud and its admin and demo sessions.
cloud, users = nova_admin_views.cloud, nova_admin_views.users


def zones(session, detail=False, version="2.1"):
    return session.request("GET", f"{session.compute}/os-availability-zone"
                                  f"{'/detail' if detail else ''}", headers=at(version))


def test_anyone_sees_the_zones_without_the_internal_one(cloud, users):
    for user in ("demo", "admin"):
        response = zones(users[user])
        assert response.status_code == 200
        assert response.json() == {"availabilityZoneInfo": [
            {"zoneName": "nova", "zoneState": {"available": True}, "hosts": None}]}


def test_detail_has_every_host_and_service_for_admins(cloud, users):
    info = zones(users["admin"], detail=True, version="2.61").json()["availabilityZoneInfo"]
    by_zone = {zone["zoneName"]: zone for zone in info}
    assert sorted(by_zone) == ["internal", "nova"]
    nova = by_zone["nova"]["hosts"]
    assert sorted(nova) == ["compute-1", "compute-2"]
    assert set(nova["compute-1"]) == {"nova-compute"}
    compute = nova["compute-1"]["nova-compute"]
    assert (compute["available"], compute["active"]) == (True, True)
    (controller,) = by_zone["internal"]["hosts"].values()
    assert set(controller) == {"nova-conductor", "nova-scheduler"}
    assert zones(users["demo"], detail=True).status_code == 403


def test_a_zone_of_disabled_services_is_not_available(cloud, users):
    admin = users["admin"]
    body = {"host": None, "binary": "nova-compute"}
    for host in ("compute-1", "compute-2"):
        put = admin.request("PUT", f"{admin.compute}/os-services/disable",
                            json=dict(body, host=host))
        assert put.status_code == 200
    try:
        assert zones(users["demo"]).json()["availabilityZoneInfo"] == [
            {"zoneName": "nova", "zoneState": {"available": False}, "hosts": None}]
        detail = zones(admin, detail=True).json()["availabilityZoneInfo"]
        assert {"zoneName": "nova", "zoneState": {"available": False}, "hosts": None} \
            in detail
    finally:
        for host in ("compute-1", "compute-2"):
            admin.request("PUT", f"{admin.compute}/os-services/enable",
                          json=dict(body, host=host))
    assert zones(users["demo"]).json()["availabilityZoneInfo"][0]["zoneState"] == \
        {"available": True}


def test_a_server_is_in_its_hosts_zone(cloud, users):
    """``OS-EXT-AZ:availability_zone``: the zone of the host it landed on."""
    server = boot(users["demo"], cloud, "zoned")
    try:
        assert server["OS-EXT-AZ:availability_zone"] == "nova"
    finally:
        delete(users["demo"], server["id"])
