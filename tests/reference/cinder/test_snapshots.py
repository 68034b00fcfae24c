"""Volume snapshots over HTTP: really RBD snapshots in the Ceph pool, with Cinder's states,
quotas, refusals and views per microversion (checked against Tempest's schemas)."""

from __future__ import annotations

import time
import uuid

import pytest
from tempest.lib.api_schema.response.volume import snapshots as tempest_snapshots
from tempest.lib.common.jsonschema_validator import FORMAT_CHECKER, JSONSCHEMA_VALIDATOR

from novalab.reference.ceph import rbd

MiB = 1 << 20


def matches(response, schema) -> dict:
    assert response.status_code in schema["status_code"], response.text
    body = response.json() if response.content else None
    if "response_body" in schema:
        JSONSCHEMA_VALIDATOR(schema["response_body"],
                             format_checker=FORMAT_CHECKER).validate(body)
    return body


def wait_snapshot(session, snapshot_id: str, statuses=("available", "error"),
                  timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        snapshot = session.request("GET", f"/snapshots/{snapshot_id}").json()["snapshot"]
        if snapshot["status"] in statuses:
            return snapshot
        time.sleep(0.02)
    raise AssertionError(f"snapshot {snapshot_id} did not reach {statuses}")


def wait_snapshot_gone(session, snapshot_id: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if session.request("GET", f"/snapshots/{snapshot_id}").status_code == 404:
            return
        time.sleep(0.02)
    raise AssertionError(f"snapshot {snapshot_id} was not deleted")


def create_snapshot(session, volume_id: str, version: str | None = None, **fields):
    return session.request("POST", "/snapshots", version,
                           json={"snapshot": {"volume_id": volume_id, **fields}})


@pytest.fixture
def quota_of(admin):
    touched = []

    def set_quota(project_id: str, **values):
        touched.append(project_id)
        response = admin.request("PUT", f"/os-quota-sets/{project_id}",
                                 json={"quota_set": values})
        assert response.status_code == 200, response.text

    yield set_quota
    for project_id in touched:
        admin.request("DELETE", f"/os-quota-sets/{project_id}")


def usage(session) -> dict:
    body = session.request("GET", f"/os-quota-sets/{session.project_id}?usage=true").json()
    return {k: v["in_use"] for k, v in body["quota_set"].items() if isinstance(v, dict)}


def test_a_snapshot_is_an_rbd_snapshot_of_the_volume(env, demo):
    volume = demo.wait_volume(demo.create_volume(name="snap-me")["id"])
    ioctx = env.ioctx()
    with rbd.Image(ioctx, f"volume-{volume['id']}") as image:
        image.write(b"written before", 3 * MiB)
    before = usage(demo)

    created = matches(create_snapshot(demo, volume["id"], name="first", description="d",
                                      metadata={"k": "v"}),
                      tempest_snapshots.create_snapshot)["snapshot"]
    assert (created["status"], created["size"], created["volume_id"], created["name"]) == \
        ("creating", 1, volume["id"], "first")
    snapshot = wait_snapshot(demo, created["id"])
    assert snapshot["status"] == "available"
    assert snapshot["os-extended-snapshot-attributes:progress"] == "100%"
    assert snapshot["os-extended-snapshot-attributes:project_id"] == demo.project_id
    matches(demo.request("GET", f"/snapshots/{created['id']}"),
            tempest_snapshots.show_snapshot)
    # Really on the store: the RBD snapshot, with the data of its moment.
    with rbd.Image(ioctx, f"volume-{volume['id']}") as image:
        assert [s["name"] for s in image.list_snaps()] == [f"snapshot-{created['id']}"]
        image.write(b"written after!", 3 * MiB)
    with rbd.Image(ioctx, f"volume-{volume['id']}",
                   snapshot=f"snapshot-{created['id']}") as snap:
        assert snap.read(3 * MiB, 14) == b"written before"
    after = usage(demo)
    assert (after["snapshots"], after["gigabytes"]) == \
        (before["snapshots"] + 1, before["gigabytes"] + 1)

    listed = matches(demo.request("GET", "/snapshots"),
                     tempest_snapshots.list_snapshots_no_detail)["snapshots"]
    assert created["id"] in [s["id"] for s in listed]
    detailed = matches(demo.request("GET", "/snapshots/detail"),
                       tempest_snapshots.list_snapshots_with_detail)["snapshots"]
    assert created["id"] in [s["id"] for s in detailed]
    only = demo.request("GET", f"/snapshots?volume_id={volume['id']}").json()["snapshots"]
    assert [s["id"] for s in only] == [created["id"]]

    # A volume with snapshots is not deleted: Cinder's 400.
    refused = demo.request("DELETE", f"/volumes/{volume['id']}")
    assert refused.status_code == 400, refused.text
    assert "have snapshots" in refused.json()["badRequest"]["message"]
    assert demo.wait_volume(volume["id"])["status"] == "available"

    assert demo.request("DELETE", f"/snapshots/{created['id']}").status_code == 202
    wait_snapshot_gone(demo, created["id"])
    with rbd.Image(ioctx, f"volume-{volume['id']}") as image:
        assert image.list_snaps() == []
    assert usage(demo)["snapshots"] == before["snapshots"]
    assert demo.request("DELETE", f"/volumes/{volume['id']}").status_code == 202
    demo.wait_gone(volume["id"])


@pytest.mark.parametrize("version, group, user", [
    ("3.0", False, False), ("3.13", False, False), ("3.14", True, False),
    ("3.40", True, False), ("3.41", True, True), ("3.44", True, True)])
def test_fields_follow_the_version(env, demo, version, group, user):
    volume = demo.wait_volume(demo.create_volume()["id"])
    created = create_snapshot(demo, volume["id"], version).json()["snapshot"]
    wait_snapshot(demo, created["id"])
    shown = demo.request("GET", f"/snapshots/{created['id']}", version).json()["snapshot"]
    assert ("group_snapshot_id" in shown) == group
    assert ("user_id" in shown) == user
    if user:
        assert shown["user_id"] == demo.user_id
    summary = demo.request("GET", "/snapshots", version).json()["snapshots"][0]
    assert "user_id" not in summary and "os-extended-snapshot-attributes:progress" not in summary
    demo.request("DELETE", f"/snapshots/{created['id']}")
    wait_snapshot_gone(demo, created["id"])
    demo.request("DELETE", f"/volumes/{volume['id']}")


def test_refusals_and_policy(env, demo, admin, quota_of):
    volume = demo.wait_volume(demo.create_volume()["id"])
    missing = str(uuid.uuid4())
    assert create_snapshot(demo, missing).status_code == 404
    assert demo.request("GET", f"/snapshots/{missing}").status_code == 404
    assert demo.request("POST", "/snapshots", json={"snapshot": {}}).status_code == 400
    bad_force = create_snapshot(demo, volume["id"], force="maybe")
    assert bad_force.status_code == 400
    assert "Invalid value 'maybe' for force" in bad_force.json()["badRequest"]["message"]
    reader = env.login("reader", "demo")
    assert reader.request("GET", "/snapshots").status_code == 200
    assert create_snapshot(reader, volume["id"]).status_code == 403
    other = env.login("alt_demo")
    assert create_snapshot(other, volume["id"]).status_code == 404

    # In use: only with force, as upstream before 3.66.
    attachment = demo.request("POST", "/attachments", "3.44", json={"attachment": {
        "volume_uuid": volume["id"], "instance_uuid": str(uuid.uuid4()),
        "connector": {"host": "compute-x", "ip": "127.0.0.1"}}}).json()["attachment"]
    assert demo.request("POST", f"/attachments/{attachment['id']}/action", "3.44",
                        json={"os-complete": None}).status_code == 204
    assert demo.wait_volume(volume["id"], ("in-use",))["status"] == "in-use"
    in_use = create_snapshot(demo, volume["id"])
    assert in_use.status_code == 400, in_use.text
    assert in_use.json()["badRequest"]["message"] == (
        f"Invalid volume: Volume {volume['id']} status must be available, but current "
        "status is: in-use.")
    forced = create_snapshot(demo, volume["id"], force=True)
    assert forced.status_code == 202, forced.text
    snapshot_id = forced.json()["snapshot"]["id"]
    assert wait_snapshot(demo, snapshot_id)["status"] == "available"

    # Over quota: 413 before any row.
    quota_of(demo.project_id, snapshots=usage(demo)["snapshots"])
    over = create_snapshot(demo, volume["id"], force=True)
    assert over.status_code == 413, over.text
    assert "Maximum number of snapshots allowed" in over.json()["overLimit"]["message"]

    demo.request("DELETE", f"/snapshots/{snapshot_id}")
    wait_snapshot_gone(demo, snapshot_id)
    demo.request("DELETE", f"/attachments/{attachment['id']}", "3.44")
    demo.request("DELETE", f"/volumes/{volume['id']}")


def test_a_backend_failure_is_error_with_a_message(env, demo, monkeypatch):
    volume = demo.wait_volume(demo.create_volume()["id"])

    def refuse(snapshot):
        raise RuntimeError("the pool is full")

    monkeypatch.setattr(env.manager.driver, "create_snapshot", refuse)
    created = create_snapshot(demo, volume["id"]).json()["snapshot"]
    snapshot = wait_snapshot(demo, created["id"])
    assert snapshot["status"] == "error"
    messages = demo.request("GET", "/messages", "3.3").json()["messages"]
    mine = [m for m in messages if m["resource_uuid"] == created["id"]]
    assert [(m["resource_type"], m["user_message"]) for m in mine] == \
        [("VOLUME_SNAPSHOT", "create snapshot: Snapshot failed to create.")]
    monkeypatch.undo()
    assert demo.request("DELETE", f"/snapshots/{created['id']}").status_code == 202
    wait_snapshot_gone(demo, created["id"])
    demo.request("DELETE", f"/volumes/{volume['id']}")


def test_the_list_pages_newest_first_with_limit_and_marker(env, demo):
    volume = demo.wait_volume(demo.create_volume(name="paged")["id"])
    made = []
    for index in range(3):
        response = create_snapshot(demo, volume["id"], name=f"page-{index}")
        assert response.status_code == 202, response.text
        made.append(wait_snapshot(demo, response.json()["snapshot"]["id"])["id"])
    mine = [s["id"] for s in demo.request("GET", "/snapshots").json()["snapshots"]
            if s["id"] in made]
    assert mine == made[::-1]  # newest first
    page = demo.request("GET", f"/snapshots?limit=1&marker={made[2]}").json()["snapshots"]
    assert [s["id"] for s in page] == [made[1]]
    missing = demo.request("GET", f"/snapshots?marker={uuid.uuid4()}")
    assert missing.status_code == 400
    for snapshot_id in made:
        demo.request("DELETE", f"/snapshots/{snapshot_id}")
        wait_snapshot_gone(demo, snapshot_id)
