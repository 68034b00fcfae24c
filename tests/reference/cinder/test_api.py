"""The Block Storage API as a client sees it: versions, microversions, auth, faults, isolation."""

from __future__ import annotations

import pytest


def test_version_discovery(env, demo):
    root = env.http.get(f"{env.cinder}/")
    assert root.status_code == 300
    (version,) = root.json()["versions"]
    assert (version["id"], version["min_version"], version["version"]) == ("v3.0", "3.0", "3.44")
    assert version["status"] == "CURRENT"
    assert env.http.get(f"{env.cinder}/v3/").status_code == 401      # behind auth, as upstream
    v3 = demo.request("GET", f"{env.cinder}/v3/")
    assert v3.status_code == 200 and v3.json()["versions"][0]["version"] == "3.44"


def test_microversions(demo):
    default = demo.request("GET", "/volumes")
    assert default.headers["OpenStack-API-Version"] == "volume 3.0"
    latest = demo.request("GET", "/volumes", version="latest")
    assert latest.headers["OpenStack-API-Version"] == "volume 3.44"
    too_new = demo.request("GET", "/volumes", version="3.45")
    assert too_new.status_code == 406
    assert "maximum is 3.44" in too_new.json()["computeFault"]["message"]
    malformed = demo.request("GET", "/volumes", version="3.x")
    assert malformed.status_code == 400 and "invalid format" in malformed.text
    # Methods newer than the request's version do not exist for it.
    assert demo.request("GET", "/attachments", version="3.26").status_code == 404
    assert demo.request("GET", "/attachments", version="3.27").status_code == 200
    assert demo.request("GET", "/messages", version="3.2").status_code == 404
    assert demo.request("GET", "/messages", version="3.3").status_code == 200


def test_tokens_are_required_and_checked(env, demo):
    missing = env.http.get(f"{demo.volume}/volumes")
    assert missing.status_code == 401
    assert missing.headers["WWW-Authenticate"].startswith("Keystone uri=")
    forged = env.http.get(f"{demo.volume}/volumes", headers={"X-Auth-Token": "forged"})
    assert forged.status_code == 401


def test_project_in_url_must_be_the_tokens(env, demo, admin):
    response = demo.request("GET", f"{env.cinder}/v3/{admin.project_id}/volumes")
    assert response.status_code == 400
    assert response.json() == {"badRequest": {"code": 400, "message": "Malformed request url"}}


@pytest.mark.parametrize("body, fragment", [
    ({}, "'volume' is a required property"),
    ({"volume": {"size": 0}}, "size"),
    ({"volume": {"size": "big"}}, "size"),
    ({"volume": {}}, "must be an integer and greater than 0"),
    ({"volume": {"size": 1, "multiattach": True}}, "multiattach parameter has been removed"),
    ({"volume": {"size": 1, "availability_zone": "elsewhere"}}, "Availability zone"),
    ({"volume": {"size": 1, "imageRef": "no-such-image"}}, "imageRef"),
    ({"volume": {"size": 1, "imageRef": "5b6f6c1a-1d1b-4d7e-9a51-2a3bbd6c4a12"}},
     "Invalid image identifier"),
    ({"volume": {"size": 2**31}}, "size"),
    ({"volume": {"size": 1, "name": "n" * 256}}, "name"),
    ({"volume": {"size": 1, "name": {"a": 1}}}, "name"),
    ({"volume": {"size": 1, "description": "d" * 256}}, "description"),
    ({"volume": {"size": 1, "metadata": {"k": 5}}}, "field/attribute k."),
    ({"volume": {"size": 1, "metadata": {"k" * 256: "v"}}}, "metadata"),
    ({"volume": {"size": 1, "volume_type": "t" * 256}}, "volume_type"),
    ({"volume": {"size": 1, "availability_zone": 5}}, "availability_zone"),
    ({"volume": []}, "volume"),
    ({"volume": {"size": 1, "name": "nul\u0000"}}, "name"),
    ({"volume": {"size": 1, "snapshot_id": "5b6f6c1a-1d1b-4d7e-9a51-2a3bbd6c4a11"}},
     "snapshot_id is not supported"),
    ({"volume": {"size": 1}, "extra": 1}, "Additional properties are not allowed"),
])
def test_bad_create_bodies_are_400(demo, body, fragment):
    response = demo.request("POST", "/volumes", json=body)
    assert response.status_code == 400, response.text
    assert fragment in response.json()["badRequest"]["message"]


def test_unknown_volume_type_is_404(demo):
    response = demo.request("POST", "/volumes", json={"volume": {"size": 1,
                                                                 "volume_type": "gold"}})
    assert response.status_code == 404
    assert response.json()["itemNotFound"]["message"] == \
        "Volume type with name gold could not be found."


def test_image_larger_than_its_min_disk_allows_is_400(env, demo):
    image = env.images.create(name="big-min-disk", disk_format="raw", container_format="bare",
                              status="queued", min_disk=5, owner=demo.project_id,
                              visibility="private")
    uploaded = env.http.put(f"{env.w.urls['glance']}/v2/images/{image['id']}/file",
                            content=b"\0" * 512,
                            headers={"X-Auth-Token": demo.token,
                                     "Content-Type": "application/octet-stream"})
    assert uploaded.status_code == 204
    response = demo.request("POST", "/volumes", json={"volume": {"size": 1,
                                                                 "imageRef": image["id"]}})
    assert response.status_code == 400
    assert "cannot be smaller than the image minDisk size 5GB" in response.text


def test_other_projects_volumes_are_invisible(env, demo, admin):
    theirs = admin.create_volume(name="admins")
    admin.wait_volume(theirs["id"])
    shown = demo.request("GET", f"/volumes/{theirs['id']}")
    assert shown.status_code == 404
    assert shown.json()["itemNotFound"]["message"] == \
        f"Volume {theirs['id']} could not be found."
    assert demo.request("DELETE", f"/volumes/{theirs['id']}").status_code == 404
    names = [v["name"] for v in demo.request("GET", "/volumes").json()["volumes"]]
    assert "admins" not in names
    mine = demo.create_volume(name="demos")
    everyone = admin.request("GET", "/volumes/detail?all_tenants=1").json()["volumes"]
    assert {theirs["id"], mine["id"]} <= {v["id"] for v in everyone}
    own = admin.request("GET", "/volumes/detail").json()["volumes"]
    assert mine["id"] not in {v["id"] for v in own}
    # demo asking for all projects still sees only its own.
    ids = {v["id"] for v in demo.request("GET", "/volumes?all_tenants=1").json()["volumes"]}
    assert theirs["id"] not in ids and mine["id"] in ids


def test_admin_sees_the_backend_host(env, demo, admin):
    volume = demo.create_volume()
    demo.wait_volume(volume["id"])
    as_admin = admin.request("GET", f"{env.cinder}/v3/{admin.project_id}/volumes/detail"
                                    "?all_tenants=1").json()["volumes"]
    (row,) = [v for v in as_admin if v["id"] == volume["id"]]
    assert row["os-vol-host-attr:host"] == "cinder-volume-1@ceph#ceph"
    assert "os-vol-host-attr:host" not in demo.request(
        "GET", f"/volumes/{volume['id']}").json()["volume"]


def test_list_filters_and_pagination(demo):
    ids = [demo.create_volume(name=f"page-{i}")["id"] for i in range(3)]
    for volume_id in ids:
        demo.wait_volume(volume_id)
    named = demo.request("GET", "/volumes?name=page-1").json()["volumes"]
    assert [v["id"] for v in named] == [ids[1]]
    first = demo.request("GET", "/volumes?limit=1").json()["volumes"]
    after = demo.request("GET", f"/volumes?limit=1&marker={first[0]['id']}").json()["volumes"]
    assert len(first) == len(after) == 1 and first[0]["id"] != after[0]["id"]
    bad = demo.request("GET", "/volumes?bootable=maybe", version="3.2")
    assert bad.status_code == 400 and "bootable=maybe" in bad.text
    assert demo.request("GET", "/volumes?bootable=maybe").status_code == 200   # before 3.2


def test_reader_cannot_create(env, demo):
    from novalab.reference.cinder import policy
    from novalab.reference.common.context import RequestContext

    reader = RequestContext(user_id="u", project_id=demo.project_id, roles=["reader"])
    assert policy.check(reader, "volume:get")
    assert not policy.check(reader, "volume:create")
    assert not policy.check(reader, "volume:attachment_create")
    other = RequestContext(user_id="u", project_id="elsewhere", roles=["member"])
    assert not policy.check(other, "volume:delete", {"project_id": demo.project_id})


@pytest.mark.parametrize("path, body", [
    ("/attachments", {"attachment": {"volume_uuid": "not-a-uuid"}}),
    ("/attachments", {"attachment": {"volume_uuid": "5b6f6c1a-1d1b-4d7e-9a51-2a3bbd6c4a11",
                                     "connector": "host"}}),
    ("/attachments", {"attachment": {"volume_uuid": "5b6f6c1a-1d1b-4d7e-9a51-2a3bbd6c4a11",
                                     "mode": "rw", "extra": 1}}),
    ("/attachments", []),
])
def test_bad_attachment_bodies_are_400(demo, path, body):
    response = demo.request("POST", path, json=body, version="3.44")
    assert response.status_code == 400, response.text
    assert response.json()["badRequest"]["code"] == 400


def test_every_body_route_has_a_schema(env):
    from novalab.reference.cinder.api.app import create_app
    from novalab.reference.common import validation

    class NoAuth:
        def install(self, app, public_paths=()):
            pass

    app = create_app(env.w.database("cinder-api"), env.volume_api, NoAuth(), env.tracer())
    routes = validation.routes_with_schemas(app)
    assert ("POST", "/v3/<project_id>/volumes") in {(m, r) for m, r, _ in routes}
    assert [r for r in routes if r[2] is None] == []
