"""Volumes really live in the Ceph pool: create, from an image, delete, failures."""

from __future__ import annotations

import pytest

from novalab.reference.ceph import rbd
from novalab.reference.ceph.errors import ObjectNotFound
from novalab.reference.cinder import exception
from novalab.reference.cinder.db import api as db_api
from novalab.reference.deploy.seed import cirros_bytes

GiB = 1024 ** 3


def _image_id(env, volume_id: str) -> str:
    return env.ioctx().read(f"rbd_id.volume-{volume_id}").decode()


def test_create_makes_a_thin_rbd_image(env, demo):
    created = demo.create_volume(name="data", description="scratch", metadata={"k": "v"})
    assert created["status"] == "creating" and created["size"] == 1
    volume = demo.wait_volume(created["id"])
    assert volume["status"] == "available" and volume["bootable"] == "false"
    assert (volume["name"], volume["description"], volume["metadata"]) == \
        ("data", "scratch", {"k": "v"})
    ioctx = env.ioctx()
    header = f"rbd_header.{_image_id(env, volume['id'])}"
    assert header in ioctx.list_objects()
    assert f"volume-{volume['id']}" in rbd.RBD().list(ioctx)
    image = rbd.Image(ioctx, f"volume-{volume['id']}")
    assert image.size() == GiB
    # Thin: nothing written yet, so no data object exists and the start reads as zeros.
    assert not [o for o in ioctx.list_objects() if o.startswith(image.block_name_prefix)]
    assert image.read(0, 16) == b"\0" * 16


def test_volume_from_image_holds_the_images_bytes(env, demo):
    created = demo.create_volume(name="boot", imageRef=env.cirros["id"])
    volume = demo.wait_volume(created["id"])
    assert volume["status"] == "available" and volume["bootable"] == "true"
    meta = volume["volume_image_metadata"]
    assert meta["image_id"] == env.cirros["id"] and meta["image_name"] == "cirros"
    assert meta["hw_disk_bus"] == "virtio"
    data = cirros_bytes()
    image = rbd.Image(env.ioctx(), f"volume-{volume['id']}")
    assert image.read(0, len(data)) == data
    assert image.read(len(data), 512) == b"\0" * 512
    bootable = demo.request("GET", "/volumes/detail?bootable=true", version="3.2").json()
    assert volume["id"] in {v["id"] for v in bootable["volumes"]}


def test_delete_removes_the_rbd_image(env, demo):
    volume = demo.create_volume(imageRef=env.cirros["id"])
    demo.wait_volume(volume["id"])
    image_id = _image_id(env, volume["id"])
    prefix = rbd.Image(env.ioctx(), f"volume-{volume['id']}").block_name_prefix
    response = demo.request("DELETE", f"/volumes/{volume['id']}")
    assert response.status_code == 202
    demo.wait_gone(volume["id"])
    ioctx = env.ioctx()
    assert f"volume-{volume['id']}" not in rbd.RBD().list(ioctx)
    left = ioctx.list_objects()
    assert f"rbd_header.{image_id}" not in left
    assert not [o for o in left if o.startswith(prefix)]
    with pytest.raises(ObjectNotFound):
        ioctx.read(f"rbd_id.volume-{volume['id']}")


def test_failed_image_copy_ends_in_error_and_leaves_nothing_in_ceph(env, demo, monkeypatch):
    def broken_download(context, image_id, image_meta=None):
        raise exception.ImageDownloadFailed(image_href=image_id, reason="network unplugged")

    monkeypatch.setattr(env.manager.image_service, "download", broken_download)
    created = demo.create_volume(name="doomed", imageRef=env.cirros["id"])
    volume = demo.wait_volume(created["id"])
    assert volume["status"] == "error" and volume["bootable"] == "false"
    assert f"volume-{volume['id']}" not in rbd.RBD().list(env.ioctx())
    messages = demo.request("GET", f"/messages?resource_uuid={volume['id']}",
                            version="3.3").json()["messages"]
    (message,) = messages
    assert message["user_message"] == \
        "copy image to volume: Driver failed to create the volume."
    assert message["event_id"] == "VOLUME_VOLUME_005_012"
    assert "network unplugged" not in str(message)        # never the exception's text
    shown = demo.request("GET", f"/messages/{message['id']}", version="3.3")
    assert shown.json()["message"]["id"] == message["id"]
    # An errored volume can be deleted: the backend has nothing, the row goes.
    assert demo.request("DELETE", f"/volumes/{volume['id']}").status_code == 202
    demo.wait_gone(volume["id"])
    assert demo.request("DELETE", f"/messages/{message['id']}", version="3.3") \
        .status_code == 204
    assert demo.request("GET", f"/messages/{message['id']}", version="3.3") \
        .status_code == 404


def test_a_volume_not_yet_on_a_backend_is_deleted_by_the_api(env, demo):
    from novalab.reference.cinder.db import api as db_api

    row = db_api.volume_create(env.volume_api.db, {
        "user_id": demo.user_id, "project_id": demo.project_id, "size": 1,
        "status": "creating", "display_name": "unscheduled"})
    assert demo.request("DELETE", f"/volumes/{row['id']}").status_code == 202
    assert demo.request("GET", f"/volumes/{row['id']}").status_code == 404


def test_a_volume_being_created_cannot_be_deleted(env, demo):
    from novalab.reference.cinder.db import api as db_api

    row = db_api.volume_create(env.volume_api.db, {
        "user_id": demo.user_id, "project_id": demo.project_id, "size": 1,
        "status": "creating", "host": "cinder-volume-1@ceph#ceph"})
    response = demo.request("DELETE", f"/volumes/{row['id']}")
    assert response.status_code == 400
    assert "Invalid volume: Volume status must be available" in \
        response.json()["badRequest"]["message"]
    db_api.volume_update(env.volume_api.db, row["id"], {"status": "error"})
    assert demo.request("DELETE", f"/volumes/{row['id']}").status_code == 202
    demo.wait_gone(row["id"])


def test_a_delete_cut_short_is_finished_when_cinder_volume_starts_again(env, demo):
    """cinder-volume died after the API marked the volume ``deleting`` (its cast lost)."""
    volume = demo.create_volume(size=1)
    demo.wait_volume(volume["id"])
    db_api.volume_update(env.manager.db, volume["id"], {"status": "deleting"})
    assert f"volume-{volume['id']}" in rbd.RBD().list(env.ioctx())
    env.manager.init_host()  # the restart
    demo.wait_gone(volume["id"])
    assert f"volume-{volume['id']}" not in rbd.RBD().list(env.ioctx())


def test_a_create_on_a_full_cluster_ends_in_error_with_a_message(env, demo, monkeypatch):
    """Issue 21, finding 14: past the OSDs' reserve the backend has no capacity; the
    volume goes to ``error`` with a user message, nothing is left in Ceph, and once
    space is freed the next create works."""
    import shutil

    from novalab.reference.common import diskspace

    monkeypatch.setattr(diskspace, "disk_usage", lambda path: shutil._ntuple_diskusage(
        100 * GiB, 100 * GiB - 1024 ** 2, 1024 ** 2))
    volume = demo.wait_volume(demo.create_volume(name="no-room")["id"])
    assert volume["status"] == "error"
    assert f"volume-{volume['id']}" not in rbd.RBD().list(env.ioctx())
    (message,) = demo.request("GET", f"/messages?resource_uuid={volume['id']}",
                              version="3.3").json()["messages"]
    assert message["user_message"] == \
        "create volume from backend storage: Driver failed to create the volume."
    monkeypatch.undo()
    assert demo.wait_volume(demo.create_volume(name="room")["id"])["status"] == "available"
