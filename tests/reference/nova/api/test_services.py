"""``os-services`` on a cloud of two compute hosts: every service that reports state,
its zone and heartbeat; disabling a compute service per microversion, which the
scheduler then really avoids; deleting one; admins only."""

from __future__ import annotations

from datetime import timedelta

import nova_admin_views
from nova_admin_views import at, boot, delete
from sqlalchemy import select

from novalab.reference.common.db import utcnow
from novalab.reference.nova.db import api as db_api
from novalab.reference.nova.db.models import Service
from novalab.reference.nova.servicegroup import Heartbeat, service_is_up

# The module's own two-host cloud and its admin and demo sessions.
cloud, users = nova_admin_views.cloud, nova_admin_views.users


def services(session, query="", version="2.1") -> list[dict]:
    response = session.request("GET", f"{session.compute}/os-services{query}",
                               headers=at(version))
    assert response.status_code == 200, response.text
    return response.json()["services"]


def put(session, path, body, version="2.1"):
    return session.request("PUT", f"{session.compute}/os-services/{path}", json=body,
                           headers=at(version))


def compute_uuid(session, host) -> str:
    return services(session, f"?host={host}&binary=nova-compute", "2.53")[0]["id"]


def test_every_reporting_service_is_listed_with_its_zone(cloud, users):
    listed = services(users["admin"])
    assert sorted((s["binary"], s["zone"]) for s in listed) == [
        ("nova-compute", "nova"), ("nova-compute", "nova"),
        ("nova-conductor", "internal"), ("nova-scheduler", "internal")]
    assert {s["state"] for s in listed} == {"up"}
    assert {s["status"] for s in listed} == {"enabled"}
    assert "forced_down" not in listed[0]
    assert [s["host"] for s in services(users["admin"], "?binary=nova-compute")] == \
        ["compute-1", "compute-2"]
    assert [s["binary"] for s in services(users["admin"], "?host=compute-2")] == \
        ["nova-compute"]
    at_253 = services(users["admin"], version="2.53")
    assert all(len(s["id"]) == 36 and s["forced_down"] is False for s in at_253)


def test_the_services_report_state(cloud):
    """Each beat bumps report_count and last_seen_up (the scheduler's own row here)."""
    db = cloud.wiring.database("test")
    (row,) = [s for s in db_api.service_get_all(db, "nova-scheduler")]
    beat = Heartbeat(db, row["host"], "nova-scheduler", "scheduler", 3600)
    beat.report_state()
    beat.report_state()
    after = db_api.service_get(db, service_id=row["id"])
    assert after["report_count"] >= row["report_count"] + 2
    assert after["last_seen_up"] > row["last_seen_up"]
    assert service_is_up(after)
    assert not service_is_up(after, now=after["last_seen_up"] + timedelta(seconds=61))
    assert not service_is_up(dict(after, forced_down=True))


def test_disable_and_enable_by_action_before_2_53(cloud, users):
    admin = users["admin"]
    body = {"host": "compute-2", "binary": "nova-compute"}
    answer = put(admin, "disable-log-reason", dict(body, disabled_reason="maintenance"))
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"service": dict(body, status="disabled",
                                             disabled_reason="maintenance")}
    (shown,) = services(admin, "?host=compute-2")
    assert (shown["status"], shown["disabled_reason"]) == ("disabled", "maintenance")
    assert put(admin, "enable", body).json() == {"service": dict(body, status="enabled")}
    assert services(admin, "?host=compute-2")[0]["disabled_reason"] is None
    assert put(admin, "disable", body).json()["service"]["status"] == "disabled"
    assert put(admin, "enable", body).status_code == 200
    # Only compute services change; unknown hosts and actions are 404s.
    assert put(admin, "disable", {"host": "compute-2", "binary": "nova-scheduler"}) \
        .status_code == 400
    assert put(admin, "disable", {"host": "nowhere", "binary": "nova-compute"}) \
        .status_code == 404
    assert put(admin, "force-down", body).status_code == 404  # an action from 2.11
    assert put(admin, "force-down", dict(body, forced_down=True)).status_code == 400
    assert put(admin, "disable-log-reason", body).status_code == 400
    assert put(admin, "disable", dict(body, status="disabled")).status_code == 400


def test_force_down_from_2_11(cloud, users):
    admin = users["admin"]
    body = {"host": "compute-2", "binary": "nova-compute"}
    answer = put(admin, "force-down", dict(body, forced_down=True), "2.11")
    assert answer.json() == {"service": dict(body, forced_down=True)}
    try:
        (shown,) = services(admin, "?host=compute-2", "2.11")
        assert (shown["forced_down"], shown["state"]) == (True, "down")
    finally:
        put(admin, "force-down", dict(body, forced_down=False), "2.11")
    assert services(admin, "?host=compute-2", "2.11")[0]["state"] == "up"


def test_update_by_uuid_from_2_53(cloud, users):
    admin = users["admin"]
    uuid = compute_uuid(admin, "compute-2")
    answer = put(admin, uuid, {"status": "disabled", "disabled_reason": "new disk"}, "2.53")
    assert answer.status_code == 200, answer.text
    service = answer.json()["service"]
    assert (service["id"], service["status"], service["disabled_reason"], service["zone"]) \
        == (uuid, "disabled", "new disk", "nova")
    assert put(admin, uuid, {"status": "enabled", "disabled_reason": "x"}, "2.53") \
        .status_code == 400
    assert put(admin, uuid, {}, "2.53").status_code == 400
    assert put(admin, "disable", {"status": "enabled"}, "2.53").status_code == 400
    assert put(admin, "5b1c4b8e-0000-4000-8000-000000000000", {"status": "enabled"},
               "2.53").status_code == 404
    scheduler = services(admin, "?binary=nova-scheduler", "2.53")[0]["id"]
    assert put(admin, scheduler, {"status": "disabled"}, "2.53").status_code == 400
    enabled = put(admin, uuid, {"status": "enabled"}, "2.53").json()["service"]
    assert (enabled["status"], enabled["disabled_reason"]) == ("enabled", None)


def test_the_scheduler_skips_a_disabled_host(cloud, users):
    """ComputeFilter: with compute-1 disabled every boot lands on compute-2; with both
    disabled there is no valid host."""
    admin, demo = users["admin"], users["demo"]
    first, second = compute_uuid(admin, "compute-1"), compute_uuid(admin, "compute-2")
    put(admin, first, {"status": "disabled", "disabled_reason": "drain"}, "2.53")
    booted = []
    try:
        for index in range(3):
            server = boot(demo, cloud, f"avoid-{index}")
            booted.append(server["id"])
            assert server["status"] == "ACTIVE"
            shown = admin.request("GET", f"{admin.compute}/servers/{server['id']}",
                                  headers=at("2.53")).json()["server"]
            assert shown["OS-EXT-SRV-ATTR:host"] == "compute-2"
        put(admin, second, {"status": "disabled"}, "2.53")
        server = boot(demo, cloud, "nowhere")
        booted.append(server["id"])
        assert server["status"] == "ERROR"
        assert "No valid host was found" in server["fault"]["message"]
    finally:
        put(admin, first, {"status": "enabled"}, "2.53")
        put(admin, second, {"status": "enabled"}, "2.53")
        for server_id in booted:
            delete(demo, server_id)


def test_delete_refuses_a_host_with_instances(cloud, users):
    admin, demo = users["admin"], users["demo"]
    server = boot(demo, cloud, "keeps-its-host")
    host = admin.request("GET", f"{admin.compute}/servers/{server['id']}",
                         headers=at("2.53")).json()["server"]["OS-EXT-SRV-ATTR:host"]
    uuid = compute_uuid(admin, host)
    try:
        refused = admin.request("DELETE", f"{admin.compute}/os-services/{uuid}",
                                headers=at("2.53"))
        assert refused.status_code == 409
        assert "hosting instances" in refused.json()["conflictingRequest"]["message"]
    finally:
        delete(demo, server["id"])
    assert admin.request("DELETE", f"{admin.compute}/os-services/not-a-uuid",
                         headers=at("2.53")).status_code == 400
    assert admin.request("DELETE", f"{admin.compute}/os-services/abc").status_code == 400
    assert admin.request("DELETE", f"{admin.compute}/os-services/9999").status_code == 404


def test_members_are_refused(cloud, users):
    demo = users["demo"]
    assert demo.request("GET", f"{demo.compute}/os-services").status_code == 403
    assert put(demo, "disable", {"host": "compute-1", "binary": "nova-compute"}) \
        .status_code == 403
    assert demo.request("DELETE", f"{demo.compute}/os-services/1").status_code == 403


def test_delete_an_empty_compute_service_last(cloud, users):
    """The service and its node go: the hypervisor list no longer shows it."""
    admin = users["admin"]
    (row,) = services(admin, "?host=compute-2")
    assert admin.request("DELETE", f"{admin.compute}/os-services/{row['id']}") \
        .status_code == 204
    assert [s["host"] for s in services(admin, "?binary=nova-compute")] == ["compute-1"]
    hypervisors = admin.request("GET", f"{admin.compute}/os-hypervisors").json()
    assert [h["hypervisor_hostname"] for h in hypervisors["hypervisors"]] == ["compute-1"]
    with cloud.wiring.database("test").session() as session:
        deleted = session.scalars(select(Service).where(Service.id == row["id"])).one()
        assert deleted.deleted == row["id"] and deleted.deleted_at <= utcnow()
