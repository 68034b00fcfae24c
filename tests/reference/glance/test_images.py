"""Glance v2 images: records, upload and download with checksums, ownership."""

from __future__ import annotations

import hashlib

from novalab.reference.deploy.seed import cirros_bytes


def test_seeded_cirros_has_real_bytes(shared_cloud, login):
    session = login(shared_cloud)
    images = session.request("GET", f"{session.image}/v2/images?name=cirros").json()["images"]
    (cirros,) = images
    data = cirros_bytes()
    assert cirros["status"] == "active" and cirros["size"] == len(data)
    assert cirros["checksum"] == hashlib.md5(data).hexdigest()
    assert cirros["os_hash_algo"] == "sha512"
    assert cirros["os_hash_value"] == hashlib.sha512(data).hexdigest()
    assert cirros["direct_url"]
    response = session.request("GET", f"{session.image}/v2/images/{cirros['id']}/file")
    assert response.status_code == 200 and response.content == data
    assert response.headers["Content-MD5"] == cirros["checksum"]


def test_create_upload_download_delete(shared_cloud, login):
    session = login(shared_cloud)
    body = {"name": "mine", "disk_format": "raw", "container_format": "bare",
            "hw_architecture": "x86_64"}
    created = session.request("POST", f"{session.image}/v2/images", json=body)
    assert created.status_code == 201
    image = created.json()
    assert image["status"] == "queued" and image["visibility"] == "shared"
    assert image["owner"] == session.project_id and image["hw_architecture"] == "x86_64"
    url = f"{session.image}/v2/images/{image['id']}"
    assert session.request("GET", f"{url}/file").status_code == 204  # no data yet
    payload = b"\x00\x01" * 1000
    assert session.request("PUT", f"{url}/file", content=payload,
                           headers={"Content-Type": "application/octet-stream"}) \
        .status_code == 204
    active = session.request("GET", url).json()
    assert active["status"] == "active" and active["size"] == 2000
    again = session.request("PUT", f"{url}/file", content=payload,
                            headers={"Content-Type": "application/octet-stream"})
    assert again.status_code == 409
    assert session.request("GET", f"{url}/file").content == payload
    assert session.request("DELETE", url).status_code == 204
    assert session.request("GET", url).status_code == 404


def test_bad_image_requests(shared_cloud, login):
    session = login(shared_cloud)
    bad_format = session.request("POST", f"{session.image}/v2/images",
                                 json={"name": "x", "disk_format": "floppy"})
    assert bad_format.status_code == 400
    assert "disk_format" in bad_format.json()["error"]["message"]
    read_only = session.request("POST", f"{session.image}/v2/images",
                                json={"name": "x", "size": 3})
    assert read_only.status_code == 403
    public = session.request("POST", f"{session.image}/v2/images",
                             json={"name": "x", "visibility": "public"})
    assert public.status_code == 403  # publicizing is for admins
    image = session.request("POST", f"{session.image}/v2/images", json={"name": "y"}).json()
    wrong_type = session.request("PUT", f"{session.image}/v2/images/{image['id']}/file",
                                 content=b"x", headers={"Content-Type": "text/plain"})
    assert wrong_type.status_code == 415


def test_private_images_are_invisible_to_other_projects(shared_cloud, login):
    demo = login(shared_cloud, "demo")
    admin = login(shared_cloud, "admin")
    image = admin.request("POST", f"{admin.image}/v2/images",
                          json={"name": "admins-only", "visibility": "private"}).json()
    assert demo.request("GET", f"{demo.image}/v2/images/{image['id']}").status_code == 404
    names = [i["name"] for i in demo.request("GET", f"{demo.image}/v2/images").json()["images"]]
    assert "admins-only" not in names
    assert demo.request("DELETE", f"{demo.image}/v2/images/{image['id']}").status_code == 404


def test_an_upload_to_a_full_store_is_glances_413_and_recovers(shared_cloud, login,
                                                               monkeypatch):
    """Issue 21, finding 14: the store (rgw on OSDs) refuses bytes past its reserve;
    Glance answers "Image storage media is full" and the image waits in ``queued``."""
    import shutil

    from novalab.reference.common import diskspace
    from novalab.reference.common.diskspace import GiB

    session = login(shared_cloud)
    image = session.request("POST", f"{session.image}/v2/images", json={
        "name": "too-big", "disk_format": "raw", "container_format": "bare"}).json()
    url = f"{session.image}/v2/images/{image['id']}"
    octets = {"Content-Type": "application/octet-stream"}
    monkeypatch.setattr(diskspace, "disk_usage", lambda path: shutil._ntuple_diskusage(
        100 * GiB, 100 * GiB - 1024 ** 2, 1024 ** 2))
    refused = session.request("PUT", f"{url}/file", content=b"\x01" * 4096, headers=octets)
    assert refused.status_code == 413, refused.text
    assert refused.json()["error"]["message"].startswith("Image storage media is full: ")
    assert session.request("GET", url).json()["status"] == "queued"
    monkeypatch.undo()
    assert session.request("PUT", f"{url}/file", content=b"\x01" * 4096, headers=octets
                           ).status_code == 204
    assert session.request("GET", url).json()["status"] == "active"
