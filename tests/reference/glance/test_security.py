"""Glance as an unfriendly user tries it: chosen ids, ownerless images, bad bodies, quotas."""

from __future__ import annotations

import uuid

import httpx
import pytest

from novalab.reference.common.credentials import PERSONA_PASSWORD
from novalab.reference.deploy.seed import cirros_bytes

OCTET = {"Content-Type": "application/octet-stream"}


def _unscoped_token(cloud) -> str:
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": "demo", "domain": {"id": "default"}, "password": PERSONA_PASSWORD}}}}}
    response = httpx.post(f"{cloud.identity_url}/auth/tokens", json=body)
    assert response.status_code == 201, response.text
    return response.headers["X-Subject-Token"]


def _victim(admin) -> tuple[str, bytes]:
    """A private image of the admin project, with data."""
    image = admin.request("POST", f"{admin.image}/v2/images",
                          json={"name": "victim", "visibility": "private",
                                "disk_format": "raw", "container_format": "bare"}).json()
    data = b"the admin's own bytes" * 10
    url = f"{admin.image}/v2/images/{image['id']}"
    assert admin.request("PUT", f"{url}/file", content=data, headers=OCTET).status_code == 204
    return image["id"], data


@pytest.mark.parametrize("suffix, quoted", [("#x", "%23x"), ("?x", "%3Fx")])
def test_a_chosen_id_cannot_reach_another_images_data(shared_cloud, login, suffix, quoted):
    """The issue's critical finding: ``<victim-id>#x`` and ``?x`` ids wrote or deleted the
    victim's object in the store."""
    admin, demo = login(shared_cloud, "admin"), login(shared_cloud, "demo")
    cirros = shared_cloud.cirros["id"]
    for victim_id, victim_data, reader in [(*_victim(admin), admin), (cirros, cirros_bytes(),
                                                                      demo)]:
        created = demo.request("POST", f"{demo.image}/v2/images",
                               json={"name": "c", "id": f"{victim_id}{suffix}"})
        demo.request("PUT", f"{demo.image}/v2/images/{victim_id}{quoted}/file",
                     content=b"attacker", headers=OCTET)
        demo.request("DELETE", f"{demo.image}/v2/images/{victim_id}{quoted}")
        got = reader.request("GET", f"{reader.image}/v2/images/{victim_id}/file")
        assert got.status_code == 200 and got.content == victim_data
        assert created.status_code == 400, created.text
        assert "id" in created.json()["error"]["message"]


def test_a_chosen_uuid_is_kept_and_a_duplicate_is_409(shared_cloud, login):
    demo = login(shared_cloud, "demo")
    chosen = str(uuid.uuid4())
    created = demo.request("POST", f"{demo.image}/v2/images", json={"name": "c", "id": chosen})
    assert created.status_code == 201 and created.json()["id"] == chosen
    again = demo.request("POST", f"{demo.image}/v2/images", json={"name": "d", "id": chosen})
    assert again.status_code == 409, again.text
    assert again.json()["error"]["code"] == 409
    cirros = demo.request("POST", f"{demo.image}/v2/images",
                          json={"name": "d", "id": shared_cloud.cirros["id"]})
    assert cirros.status_code == 409


def test_store_names_come_from_the_parsed_uuid(tmp_path):
    from novalab.reference.glance.store import FileStore, object_name

    assert object_name("0B0E3F5C-1D2A-4B4C-8D9E-0F1A2B3C4D5E") == \
        "0b0e3f5c-1d2a-4b4c-8d9e-0f1a2b3c4d5e"
    for bad in ("../etc/passwd", "0b0e3f5c-1d2a-4b4c-8d9e-0f1a2b3c4d5e#x", "a/b", ""):
        with pytest.raises(ValueError):
            object_name(bad)
    store = FileStore(tmp_path / "images")
    with pytest.raises(ValueError):
        store.add("../escape", [b"x"])
    assert not (tmp_path / "escape").exists()


def test_seeded_images_belong_to_the_admin_project(shared_cloud, login):
    admin = login(shared_cloud, "admin")
    cirros = admin.request("GET", f"{admin.image}/v2/images/{shared_cloud.cirros['id']}").json()
    assert cirros["owner"] == admin.project_id and cirros["visibility"] == "public"


def test_an_unscoped_token_reads_and_changes_nothing(shared_cloud, login):
    """No project, no roles: glance's reads need the reader role (public images included),
    writes a member's; a private image it cannot see is a 404, not a 403."""
    demo = login(shared_cloud, "demo")
    private = demo.request("POST", f"{demo.image}/v2/images",
                           json={"name": "demo-private", "visibility": "private"}).json()
    token = {"X-Auth-Token": _unscoped_token(shared_cloud)}
    images = f"{demo.image}/v2/images"
    cirros = shared_cloud.cirros["id"]
    assert httpx.get(images, headers=token).status_code == 403
    assert httpx.get(f"{images}/{private['id']}", headers=token).status_code == 404
    deleted = httpx.delete(f"{images}/{cirros}", headers=token)
    assert deleted.status_code == 403, deleted.text
    assert httpx.post(images, json={"name": "x"}, headers=token).status_code == 403
    assert httpx.get(f"{images}/{cirros}", headers=token).status_code == 403
    # A reader of a project does see the public image.
    reader = login(shared_cloud, "reader", "demo")
    assert reader.request("GET", f"{images}/{cirros}").status_code == 200


def test_other_projects_cannot_change_a_public_image(shared_cloud, login):
    demo = login(shared_cloud, "demo")
    url = f"{demo.image}/v2/images/{shared_cloud.cirros['id']}"
    assert demo.request("DELETE", url).status_code == 403
    assert demo.request("PUT", f"{url}/file", content=b"x", headers=OCTET).status_code == 403
    assert demo.request("GET", f"{url}/file").content == cirros_bytes()


@pytest.mark.parametrize("body, status", [
    ({"name": {"a": 1}}, 400),
    ({"name": "x" * 256}, 400),
    ({"name": "p", "protected": "yes"}, 400),
    ({"name": "p", "min_disk": -1}, 400),
    ({"name": "p", "min_ram": "1"}, 400),
    ({"name": "p", "visibility": "everyone"}, 400),
    ({"name": "p", "container_format": "crate"}, 400),
    ({"name": "p", "tags": ["t" * 256]}, 400),
    ({"name": "p", "tags": [f"t{i}" for i in range(129)]}, 400),
    ({"name": "p", "id": "not-a-uuid"}, 400),
    ({"name": "p", "hw_architecture": 5}, 400),
    ({"name": "p", "hw_architecture": "x" * 256}, 400),
    ({"name": "p", "k" * 256: "v"}, 400),
    ({"name": "nul\u0000"}, 400),
    ({"name": "p", "os_distro": "nul\u0000"}, 400),
    ({"name": "p", "status": "active"}, 403),
])
def test_bad_create_bodies_are_4xx_with_a_fault(shared_cloud, login, body, status):
    demo = login(shared_cloud, "demo")
    response = demo.request("POST", f"{demo.image}/v2/images", json=body)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == status


def test_image_count_quota_is_413_before_the_record(shared_cloud, login):
    demo = login(shared_cloud, "demo")
    repo = shared_cloud.images
    owned = len([i for i in demo.request("GET", f"{demo.image}/v2/images").json()["images"]
                 if i["owner"] == demo.project_id])
    saved = dict(repo.quota.defaults)
    repo.quota.defaults["image_count_total"] = owned
    try:
        response = demo.request("POST", f"{demo.image}/v2/images", json={"name": "one-too-many"})
        assert response.status_code == 413, response.text
        assert "image_count_total" in response.json()["error"]["message"]
    finally:
        repo.quota.defaults.update(saved)
    names = [i["name"] for i in demo.request("GET", f"{demo.image}/v2/images").json()["images"]]
    assert "one-too-many" not in names


def test_upload_is_bounded_by_the_size_quota_and_the_cap(shared_cloud, login):
    demo = login(shared_cloud, "demo")
    repo = shared_cloud.images
    image = demo.request("POST", f"{demo.image}/v2/images", json={"name": "big"}).json()
    url = f"{demo.image}/v2/images/{image['id']}/file"
    saved_cap, saved = repo.image_size_cap, dict(repo.quota.defaults)
    try:
        repo.image_size_cap = 1000
        too_big = demo.request("PUT", url, content=b"x" * 1001, headers=OCTET)
        assert too_big.status_code == 413, too_big.text
        # A chunked body (no Content-Length) is cut off as it streams.
        chunked = demo.request("PUT", url, content=iter([b"x" * 600, b"x" * 600]),
                               headers=OCTET)
        assert chunked.status_code == 413, chunked.text
        repo.image_size_cap = 10 * 1024 ** 3
        used = repo.quota.usages(demo.project_id)["image_size_total"]
        repo.quota.defaults["image_size_total"] = used   # MiB: no room for one more byte
        over = demo.request("PUT", url, content=b"x" * 2048, headers=OCTET)
        assert over.status_code == 413 and "image_size_total" in over.text
    finally:
        repo.image_size_cap = saved_cap
        repo.quota.defaults.update(saved)
    assert demo.request("GET", f"{demo.image}/v2/images/{image['id']}").json()["status"] == \
        "queued"
    assert demo.request("PUT", url, content=b"y" * 2048, headers=OCTET).status_code == 204


def test_every_body_route_has_a_schema(shared_cloud):
    from novalab.reference.common import validation
    from novalab.reference.glance import api

    app = api.create_app(shared_cloud.images, auth=_NoAuth())
    routes = validation.routes_with_schemas(app)
    assert ("POST", "/v2/images", api.schemas.IMAGE_CREATE) in routes
    assert [r for r in routes if r[2] is None] == []


class _NoAuth:
    def install(self, app, public_paths=()):
        pass


def test_a_community_image_squats_no_name(shared_cloud, login):
    """Issue 21, finding 12: ``alt_demo``'s community image named ``cirros`` appeared in
    every project's default list, so ``openstack server create --image cirros`` (the SDK
    lists ``?name=cirros`` and refuses two matches) failed for everyone else. As Glance
    since images v2.5: community images are listed only when asked for
    (``visibility=community``) or by their owner; they stay readable by id."""
    demo, alt, admin = (login(shared_cloud, user) for user in ("demo", "alt_demo", "admin"))
    squat = alt.request("POST", f"{alt.image}/v2/images",
                        json={"name": "cirros", "visibility": "community"}).json()
    try:
        def listed(session, query=""):
            response = session.request("GET", f"{session.image}/v2/images{query}")
            assert response.status_code == 200, response.text
            return [image["id"] for image in response.json()["images"]]

        seeded = shared_cloud.cirros["id"]
        for other in (demo, admin):
            assert listed(other, "?name=cirros") == [seeded]
            assert squat["id"] not in listed(other)
            assert squat["id"] in listed(other, "?visibility=community")
            assert squat["id"] in listed(other, "?visibility=all")
            assert other.request("GET", f"{other.image}/v2/images/{squat['id']}") \
                .status_code == 200
        assert squat["id"] in listed(alt, "?name=cirros")    # its owner still sees it
        assert listed(demo, "?visibility=public&name=cirros") == [seeded]
        assert listed(alt, "?visibility=community&name=cirros") == [squat["id"]]
        bad = demo.request("GET", f"{demo.image}/v2/images?visibility=everyone")
        assert bad.status_code == 400 and "visibility" in bad.json()["error"]["message"]
    finally:
        alt.request("DELETE", f"{alt.image}/v2/images/{squat['id']}")
