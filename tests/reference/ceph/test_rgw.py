"""The Swift API of ceph-rgw with Keystone tokens, and where it puts the bytes."""

from __future__ import annotations

import hashlib
import os
import uuid

import pytest

from novalab.reference.ceph import rgw

MiB = 1 << 20


@pytest.fixture(scope="module")
def swift(ceph):
    """(base URL, demo's token headers)."""
    return f"{ceph.w.urls['ceph-rgw']}/swift/v1", {"X-Auth-Token": ceph.token("demo")}


def container_name():
    return f"c-{uuid.uuid4().hex[:8]}"


def test_public_documents_need_no_token(ceph):
    base = ceph.w.urls["ceph-rgw"]
    info = ceph.http.get(f"{base}/info")
    assert info.status_code == 200
    assert info.json()["swift"]["max_file_size"] == rgw.MAX_FILE_SIZE
    assert ceph.http.get(f"{base}/swift/info").json() == info.json()
    root = ceph.http.get(f"{base}/")
    assert root.status_code == 200 and b"ListAllMyBucketsResult" in root.content


def test_tokens_are_required_and_checked(ceph, swift):
    base, _ = swift
    assert ceph.http.get(f"{base}/any/thing").status_code == 401
    bad = ceph.http.get(f"{base}/any/thing", headers={"X-Auth-Token": "not-a-token"})
    assert bad.status_code == 401
    assert "WWW-Authenticate" in bad.headers


def test_put_get_head_delete_an_object(ceph, swift):
    base, auth = swift
    container = container_name()
    assert ceph.http.put(f"{base}/{container}", headers=auth).status_code == 201
    assert ceph.http.put(f"{base}/{container}", headers=auth).status_code == 202
    body = os.urandom(1000)
    put = ceph.http.put(f"{base}/{container}/dir/img.qcow2", content=body,
                        headers={**auth, "Content-Type": "application/x-qcow2",
                                 "X-Object-Meta-Distro": "cirros"})
    assert put.status_code == 201
    assert put.headers["ETag"] == hashlib.md5(body).hexdigest()

    got = ceph.http.get(f"{base}/{container}/dir/img.qcow2", headers=auth)
    assert got.status_code == 200 and got.content == body
    assert got.headers["Content-Type"] == "application/x-qcow2"
    assert got.headers["ETag"] == put.headers["ETag"]
    assert got.headers["X-Object-Meta-Distro"] == "cirros"
    assert got.headers["X-Trans-Id"].startswith("tx")

    head = ceph.http.head(f"{base}/{container}/dir/img.qcow2", headers=auth)
    assert head.status_code == 200 and head.headers["Content-Length"] == "1000"
    assert head.content == b""

    # The object is one RADOS object in rgw's data pool, its bytes untouched.
    data = ceph.rados.open_ioctx(rgw.DATA_POOL)
    assert data.read(f"{container}/dir/img.qcow2") == body

    assert ceph.http.delete(f"{base}/{container}/dir/img.qcow2", headers=auth).status_code == 204
    for method in ("GET", "HEAD", "DELETE"):
        missing = ceph.http.request(method, f"{base}/{container}/dir/img.qcow2", headers=auth)
        assert missing.status_code == 404
    assert ceph.http.delete(f"{base}/{container}", headers=auth).status_code == 204


def test_missing_container_is_404(ceph, swift):
    base, auth = swift
    for method, url in (("GET", f"{base}/nope-{uuid.uuid4().hex}"),
                        ("PUT", f"{base}/nope-{uuid.uuid4().hex}/obj"),
                        ("GET", f"{base}/nope-{uuid.uuid4().hex}/obj")):
        response = ceph.http.request(method, url, headers=auth, content=b"x")
        assert response.status_code == 404, (method, url)
        assert b"Not Found" in response.content


def test_listings(ceph, swift):
    base, auth = swift
    container = container_name()
    ceph.http.put(f"{base}/{container}", headers=auth)
    assert ceph.http.get(f"{base}/{container}", headers=auth).status_code == 204
    for obj in ("b", "a", "dir/c"):
        ceph.http.put(f"{base}/{container}/{obj}", content=obj.encode() * 3, headers=auth)
    plain = ceph.http.get(f"{base}/{container}", headers=auth)
    assert plain.text == "a\nb\ndir/c\n"
    assert plain.headers["X-Container-Object-Count"] == "3"
    assert plain.headers["X-Container-Bytes-Used"] == str(3 + 3 + 15)
    listing = ceph.http.get(f"{base}/{container}", headers=auth,
                            params={"format": "json", "marker": "a", "limit": 1}).json()
    assert [(o["name"], o["bytes"], o["hash"]) for o in listing] == \
        [("b", 3, hashlib.md5(b"bbb").hexdigest())]
    assert ceph.http.get(f"{base}/{container}", headers=auth,
                         params={"prefix": "dir/"}).text == "dir/c\n"
    account = ceph.http.get(base, headers=auth, params={"format": "json"}).json()
    assert {"name": container, "count": 3, "bytes": 21} in account
    # A container with objects cannot be deleted.
    assert ceph.http.delete(f"{base}/{container}", headers=auth).status_code == 409


def test_large_objects_are_chunked_and_overwrites_clean_up(ceph, swift):
    base, auth = swift
    container = container_name()
    ceph.http.put(f"{base}/{container}", headers=auth)
    body = os.urandom(9 * MiB + 123)
    put = ceph.http.put(f"{base}/{container}/big", content=body, headers=auth)
    assert put.status_code == 201 and put.headers["ETag"] == hashlib.md5(body).hexdigest()

    data = ceph.rados.open_ioctx(rgw.DATA_POOL)
    tails = sorted(o for o in data.list_objects() if o.startswith(f"{container}__shadow_"))
    assert len(tails) == 2                             # 4 MiB head + 4 MiB + the rest
    assert data.stat(f"{container}/big") == 4 * MiB
    assert ceph.http.get(f"{base}/{container}/big", headers=auth).content == body

    put = ceph.http.put(f"{base}/{container}/big", content=b"small now", headers=auth)
    assert put.status_code == 201
    assert ceph.http.get(f"{base}/{container}/big", headers=auth).content == b"small now"
    assert not [o for o in data.list_objects() if o.startswith(f"{container}__shadow_")]


def test_a_wrong_etag_stores_nothing(ceph, swift):
    base, auth = swift
    container = container_name()
    ceph.http.put(f"{base}/{container}", headers=auth)
    ceph.http.put(f"{base}/{container}/obj", content=b"v1", headers=auth)
    body = os.urandom(5 * MiB)
    bad = ceph.http.put(f"{base}/{container}/obj", content=body,
                        headers={**auth, "ETag": hashlib.md5(b"other").hexdigest()})
    assert bad.status_code == 422
    assert ceph.http.get(f"{base}/{container}/obj", headers=auth).content == b"v1"
    data = ceph.rados.open_ioctx(rgw.DATA_POOL)
    assert not [o for o in data.list_objects() if o.startswith(f"{container}__shadow_")]


def test_containers_belong_to_the_project(ceph, swift):
    base, auth = swift
    container = container_name()
    ceph.http.put(f"{base}/{container}", headers=auth)
    ceph.http.put(f"{base}/{container}/secret", content=b"s", headers=auth)
    # glance's service user is in another project: no access to demo's container.
    glance = {"X-Auth-Token": ceph.token("glance", "service")}
    assert ceph.http.get(f"{base}/{container}/secret", headers=glance).status_code == 403
    assert ceph.http.put(f"{base}/{container}", headers=glance).status_code == 409
    # admin (rgw_keystone_accepted_admin_roles) reaches every container.
    admin = {"X-Auth-Token": ceph.token("admin")}
    assert ceph.http.get(f"{base}/{container}/secret", headers=admin).content == b"s"
    assert container not in ceph.http.get(base, headers=glance).text


def test_bad_names(ceph, swift):
    base, auth = swift
    assert ceph.http.put(f"{base}/{'c' * 300}", headers=auth).status_code == 400
    container = container_name()
    ceph.http.put(f"{base}/{container}", headers=auth)
    assert ceph.http.put(f"{base}/{container}/{'o' * 1100}", content=b"x",
                         headers=auth).status_code == 400
    longest = "o" * rgw.MAX_OBJECT_NAME
    assert ceph.http.put(f"{base}/{container}/{longest}", content=b"x",
                         headers=auth).status_code == 201
    assert ceph.http.get(f"{base}/{container}/{longest}", headers=auth).content == b"x"


def test_a_put_on_a_full_cluster_is_swifts_507_and_leaves_no_object(ceph, swift, monkeypatch):
    """Issue 21, finding 14: the OSDs refuse writes past their reserve (ENOSPC); the
    gateway answers Swift's 507 Insufficient Storage, not a 500, and keeps nothing."""
    import shutil

    from novalab.reference.common import diskspace
    from novalab.reference.common.diskspace import GiB

    base, auth = swift
    container = container_name()
    assert ceph.http.put(f"{base}/{container}", headers=auth).status_code == 201
    monkeypatch.setattr(diskspace, "disk_usage", lambda path: shutil._ntuple_diskusage(
        100 * GiB, 100 * GiB - MiB, MiB))
    refused = ceph.http.put(f"{base}/{container}/big", content=os.urandom(3 * MiB),
                            headers=auth)
    assert refused.status_code == 507, refused.text
    assert "Insufficient Storage" in refused.text
    monkeypatch.undo()
    assert ceph.http.get(f"{base}/{container}/big", headers=auth).status_code == 404
    assert ceph.http.put(f"{base}/{container}/big", content=b"fits", headers=auth
                         ).status_code == 201
