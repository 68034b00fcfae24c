"""The new attach flow (3.27/3.44): reserve, connect, complete, detach, with rbd connection_info."""

from __future__ import annotations

import uuid

CONNECTOR = {"platform": "x86_64", "os_type": "linux", "ip": "127.0.0.1",
             "host": "compute-1", "multipath": False, "do_local_attach": False,
             "initiator": "iqn.1993-08.org.debian:01:novalab"}
V = "3.44"


def _available_volume(demo, **volume) -> dict:
    return demo.wait_volume(demo.create_volume(**volume)["id"])


def _mon(env) -> tuple[str, str]:
    host, _, port = env.w.urls["ceph-mon"].rpartition(":")
    return host, port


def test_reserve_connect_complete_detach(env, demo):
    volume = _available_volume(demo)
    server = str(uuid.uuid4())
    created = demo.request("POST", "/attachments", version=V, json={"attachment": {
        "volume_uuid": volume["id"], "instance_uuid": server}})
    assert created.status_code == 200, created.text
    attachment = created.json()["attachment"]
    assert (attachment["status"], attachment["instance"], attachment["connection_info"]) == \
        ("reserved", server, {})
    assert demo.wait_volume(volume["id"], ("reserved",))["status"] == "reserved"

    updated = demo.request("PUT", f"/attachments/{attachment['id']}", version=V, json={
        "attachment": {"connector": dict(CONNECTOR, mountpoint="/dev/vdb")}})
    assert updated.status_code == 200, updated.text
    info = updated.json()["attachment"]["connection_info"]
    host, port = _mon(env)
    assert info["driver_volume_type"] == "rbd"
    assert info["name"] == f"volumes/volume-{volume['id']}"
    assert (info["hosts"], info["ports"]) == ([host], [port])
    assert (info["cluster_name"], info["auth_enabled"], info["discard"]) == ("ceph", False, True)
    assert info["volume_id"] == volume["id"] and info["attachment_id"] == attachment["id"]
    attaching = demo.request("GET", f"/volumes/{volume['id']}").json()["volume"]
    assert attaching["status"] == "attaching" and attaching["attachments"] == []

    complete = demo.request("POST", f"/attachments/{attachment['id']}/action", version=V,
                            json={"os-complete": None})
    assert complete.status_code == 204
    in_use = demo.request("GET", f"/volumes/{volume['id']}").json()["volume"]
    assert in_use["status"] == "in-use"
    (shown,) = in_use["attachments"]
    assert (shown["server_id"], shown["attachment_id"], shown["device"]) == \
        (server, attachment["id"], "/dev/vdb")
    detail = demo.request("GET", f"/attachments/{attachment['id']}", version=V).json()
    assert detail["attachment"]["status"] == "attached" and detail["attachment"]["attached_at"]
    listed = demo.request("GET", f"/attachments?volume_id={volume['id']}", version=V).json()
    assert [a["id"] for a in listed["attachments"]] == [attachment["id"]]

    refused = demo.request("DELETE", f"/volumes/{volume['id']}")
    assert refused.status_code == 400
    assert "attached" in refused.json()["badRequest"]["message"]

    deleted = demo.request("DELETE", f"/attachments/{attachment['id']}", version=V)
    assert deleted.status_code == 200 and deleted.json() == {"attachments": []}
    after = demo.request("GET", f"/volumes/{volume['id']}").json()["volume"]
    assert after["status"] == "available" and after["attachments"] == []
    assert demo.request("GET", f"/attachments/{attachment['id']}", version=V) \
        .status_code == 404
    assert demo.request("DELETE", f"/volumes/{volume['id']}").status_code == 202
    demo.wait_gone(volume["id"])


def test_create_with_a_connector_connects_at_once(env, demo):
    volume = _available_volume(demo)
    created = demo.request("POST", "/attachments", version=V, json={"attachment": {
        "volume_uuid": volume["id"], "instance_uuid": str(uuid.uuid4()),
        "connector": CONNECTOR}})
    assert created.status_code == 200
    attachment = created.json()["attachment"]
    assert attachment["status"] == "attaching"
    assert attachment["connection_info"]["name"] == f"volumes/volume-{volume['id']}"
    assert demo.request("GET", f"/volumes/{volume['id']}").json()["volume"]["status"] == \
        "attaching"
    assert demo.request("DELETE", f"/attachments/{attachment['id']}", version=V) \
        .status_code == 200
    assert demo.request("GET", f"/volumes/{volume['id']}").json()["volume"]["status"] == \
        "available"


def test_a_volume_attaches_to_one_server_at_a_time(demo):
    volume = _available_volume(demo)
    first = demo.request("POST", "/attachments", version=V, json={"attachment": {
        "volume_uuid": volume["id"], "instance_uuid": str(uuid.uuid4())}})
    assert first.status_code == 200
    second = demo.request("POST", "/attachments", version=V, json={"attachment": {
        "volume_uuid": volume["id"], "instance_uuid": str(uuid.uuid4())}})
    assert second.status_code == 400
    assert "current status is reserved" in second.json()["badRequest"]["message"]
    reserved = first.json()["attachment"]
    # Deleting a reservation needs no backend work and frees the volume.
    assert demo.request("DELETE", f"/attachments/{reserved['id']}", version=V) \
        .status_code == 200
    assert demo.request("GET", f"/volumes/{volume['id']}").json()["volume"]["status"] == \
        "available"


def test_attachment_faults(env, demo, admin):
    missing = demo.request("POST", "/attachments", version=V, json={"attachment": {
        "volume_uuid": str(uuid.uuid4()), "instance_uuid": str(uuid.uuid4())}})
    assert missing.status_code == 404 and "itemNotFound" in missing.json()
    bad = demo.request("POST", "/attachments", version=V, json={"attachment": {
        "volume_uuid": "not-a-uuid"}})
    assert bad.status_code == 400
    no_connector = demo.request("PUT", f"/attachments/{uuid.uuid4()}", version=V,
                                json={"attachment": {}})
    assert no_connector.status_code == 400
    unknown = demo.request("PUT", f"/attachments/{uuid.uuid4()}", version=V,
                           json={"attachment": {"connector": CONNECTOR}})
    assert unknown.status_code == 404
    # Another project's attachment does not exist for demo.
    theirs = admin.wait_volume(admin.create_volume()["id"])
    attachment = admin.request("POST", "/attachments", version=V, json={"attachment": {
        "volume_uuid": theirs["id"], "instance_uuid": str(uuid.uuid4())}}).json()["attachment"]
    assert demo.request("GET", f"/attachments/{attachment['id']}", version=V) \
        .status_code == 404
    assert demo.request("DELETE", f"/attachments/{attachment['id']}", version=V) \
        .status_code == 404
    # os-complete is 3.44; at 3.43 it does not exist.
    old = admin.request("POST", f"/attachments/{attachment['id']}/action", version="3.43",
                        json={"os-complete": None})
    assert old.status_code == 404
    no_such = admin.request("POST", f"/attachments/{attachment['id']}/action", version=V,
                            json={"os-detonate": None})
    assert no_such.status_code == 400


def test_backend_failure_gives_the_reservation_back(env, demo, monkeypatch):
    def broken(volume, connector):
        raise RuntimeError("monitor unreachable")

    monkeypatch.setattr(env.manager.driver, "initialize_connection", broken)
    volume = _available_volume(demo)
    response = demo.request("POST", "/attachments", version=V, json={"attachment": {
        "volume_uuid": volume["id"], "instance_uuid": str(uuid.uuid4()),
        "connector": CONNECTOR}})
    assert response.status_code == 500
    assert response.json()["computeFault"]["message"].startswith(
        "Unable to create attachment for volume (")
    after = demo.request("GET", f"/volumes/{volume['id']}").json()["volume"]
    assert after["status"] == "available"
    listed = demo.request("GET", f"/attachments?volume_id={volume['id']}", version=V).json()
    assert listed["attachments"] == []
