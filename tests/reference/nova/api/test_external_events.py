"""``POST /os-server-external-events``: services only, per-event codes, cast to the host."""

from __future__ import annotations

import time


def post_events(session, events):
    return session.request("POST", f"{session.compute}/os-server-external-events",
                           json={"events": events})


def test_members_may_not_send_events(shared_cloud, login):
    demo = login(shared_cloud, "demo")
    response = post_events(demo, [{"name": "network-vif-plugged",
                                   "server_uuid": "0b6ee1f6-5dd1-4f6a-9d62-0c5a2c1f3a11"}])
    assert response.status_code == 403


def test_events_per_instance_codes(cloud, login):
    admin = login(cloud, "admin")
    server = admin.request("POST", f"{admin.compute}/servers", json={"server": {
        "name": "ev", "flavorRef": "42", "imageRef": cloud.cirros["id"]}}).json()["server"]
    deadline = time.monotonic() + 30
    while admin.request("GET", f"{admin.compute}/servers/{server['id']}") \
            .json()["server"]["status"] != "ACTIVE":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    missing = "00000000-0000-4000-8000-000000000000"
    response = post_events(admin, [
        {"name": "network-vif-plugged", "server_uuid": server["id"], "tag": "port-1"},
        {"name": "network-vif-plugged", "server_uuid": missing, "tag": "port-2"}])
    assert response.status_code == 207
    codes = {e["server_uuid"]: e["code"] for e in response.json()["events"]}
    assert codes == {server["id"]: 200, missing: 404}
    assert post_events(admin, [{"name": "network-vif-plugged", "server_uuid": missing}]) \
        .status_code == 404
    bad = post_events(admin, [{"name": "reboot-now", "server_uuid": server["id"]}])
    assert bad.status_code == 400
