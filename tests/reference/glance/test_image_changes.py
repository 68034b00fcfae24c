"""``openstack image set`` (PATCH), tags, deactivate and reactivate, and the image schemas
glance serves: every image body novalab's glance returns validates against them."""

from __future__ import annotations

import json

import httpx
import jsonschema
import pytest

PATCH = "application/openstack-images-v2.1-json-patch"


def login(cloud, user: str, project: str) -> httpx.Client:
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": user, "domain": {"id": "default"},
        "password": cloud.config.credentials.password_for(user)}}},
        "scope": {"project": {"name": project, "domain": {"id": "default"}}}}}
    response = httpx.post(f"{cloud.identity_url}/auth/tokens", json=body)
    assert response.status_code == 201, response.text
    return httpx.Client(base_url=cloud.urls["glance"], timeout=30, headers={
        "X-Auth-Token": response.headers["X-Subject-Token"]})


@pytest.fixture(scope="module")
def clients(shared_cloud):
    users = {"demo": login(shared_cloud, "demo", "demo"),
             "admin": login(shared_cloud, "admin", "admin"),
             "alt": login(shared_cloud, "alt_demo", "alt_demo")}
    yield users
    for client in users.values():
        client.close()


@pytest.fixture(scope="module")
def bodies():
    """Every image body a test below got back, for the schema test at the end."""
    return []


def kept(bodies, response: httpx.Response) -> dict:
    body = response.json()
    bodies.append(body)
    return body


def new_image(client, bodies, **fields) -> dict:
    response = client.post("/v2/images", json={"name": "set-me", "disk_format": "raw",
                                               "container_format": "bare", **fields})
    assert response.status_code == 201, response.text
    return kept(bodies, response)


def patch(client, image_id: str, ops, media_type: str = PATCH) -> httpx.Response:
    return client.patch(f"/v2/images/{image_id}", content=json.dumps(ops),
                        headers={"Content-Type": media_type})


def test_image_set_changes_what_glance_lets_change(clients, bodies):
    demo = clients["demo"]
    image = new_image(demo, bodies, tags=["from-create"], os_hidden=False)
    assert image["tags"] == ["from-create"]
    response = patch(demo, image["id"], [
        {"op": "replace", "path": "/name", "value": "renamed"},
        {"op": "add", "path": "/hw_disk_bus", "value": "virtio"},
        # A property the image schema names is stored as any other (openstacksdk's
        # update_image(os_distro=...) sends this).
        {"op": "add", "path": "/os_distro", "value": "cirros"},
        {"op": "replace", "path": "/min_ram", "value": 64},
        {"op": "replace", "path": "/tags", "value": ["a", "b", "a"]}])
    assert response.status_code == 200, response.text
    changed = kept(bodies, response)
    assert (changed["name"], changed["hw_disk_bus"], changed["min_ram"], changed["tags"],
            changed["os_distro"]) == ("renamed", "virtio", 64, ["a", "b"], "cirros")
    again = kept(bodies, demo.get(f"/v2/images/{image['id']}"))
    assert again == changed
    # add on a property that is there replaces it (v2.1), remove drops it.
    assert patch(demo, image["id"], [{"op": "add", "path": "/hw_disk_bus",
                                      "value": "scsi"}]).json()["hw_disk_bus"] == "scsi"
    removed = kept(bodies, patch(demo, image["id"], [{"op": "remove",
                                                      "path": "/hw_disk_bus"}]))
    assert "hw_disk_bus" not in removed


@pytest.mark.parametrize(("ops", "status", "words"), [
    ([{"op": "replace", "path": "/status", "value": "active"}], 403, "read-only"),
    ([{"op": "replace", "path": "/size", "value": 1}], 403, "read-only"),
    ([{"op": "add", "path": "/deleted", "value": "x"}], 403, "reserved"),
    ([{"op": "add", "path": "/os_glance_import_task", "value": "x"}], 403, "reserved"),
    ([{"op": "remove", "path": "/name"}], 403, "may not be removed"),
    ([{"op": "remove", "path": "/nothing_here"}], 409, "does not exist"),
    ([{"op": "replace", "path": "/nothing_here", "value": "x"}], 409, "does not exist"),
    ([{"op": "replace", "path": "/min_ram", "value": "lots"}], 400, "schema"),
    ([{"op": "add", "path": "/custom", "value": 5}], 400, "schema"),
    ([{"op": "move", "path": "/name", "from": "/x"}], 400, ""),
    ([{"op": "replace", "path": "/a/b", "value": "x"}], 400, ""),
    ({"name": "not a list"}, 400, ""),
    ([{"op": "replace", "path": "/visibility", "value": "public"}], 403, "publicize_image"),
    ([{"op": "replace", "path": "/owner", "value": "someone-else"}], 403, "owner"),
])
def test_image_set_refuses_as_glance_does(clients, bodies, ops, status, words):
    demo = clients["demo"]
    image = new_image(demo, bodies)
    response = patch(demo, image["id"], ops)
    assert response.status_code == status, response.text
    assert words in response.json()["error"]["message"]
    assert demo.get(f"/v2/images/{image['id']}").json() == image  # nothing changed


def test_patch_needs_the_json_patch_media_type(clients, bodies):
    image = new_image(clients["demo"], bodies)
    response = patch(clients["demo"], image["id"],
                     [{"op": "replace", "path": "/name", "value": "x"}], "application/json")
    assert response.status_code == 415


def test_a_patch_nested_past_any_sense_is_a_400_not_a_500(clients, bodies):
    """Found by the body fuzzer: json.loads raised RecursionError, which the PATCH
    reader did not catch."""
    image = new_image(clients["demo"], bodies)
    for raw in ("[" * 5000 + "]" * 5000, '{"a":' * 5000 + "1" + "}" * 5000):
        response = clients["demo"].patch(f"/v2/images/{image['id']}", content=raw,
                                         headers={"Content-Type": PATCH})
        assert response.status_code == 400, response.text
        assert "Malformed request body" in response.text


def test_formats_change_only_while_queued(clients, bodies):
    demo = clients["demo"]
    image = new_image(demo, bodies)
    ops = [{"op": "replace", "path": "/disk_format", "value": "qcow2"}]
    assert patch(demo, image["id"], ops).json()["disk_format"] == "qcow2"
    assert demo.put(f"/v2/images/{image['id']}/file", content=b"q" * 64, headers={
        "Content-Type": "application/octet-stream"}).status_code == 204
    ops = [{"op": "replace", "path": "/disk_format", "value": "raw"}]
    response = patch(demo, image["id"], ops)
    assert response.status_code == 403 and "queued" in response.json()["error"]["message"]


def test_tags_and_the_tag_filter(clients, bodies):
    demo, alt = clients["demo"], clients["alt"]
    image = new_image(demo, bodies)
    url = f"/v2/images/{image['id']}/tags"
    assert demo.put(f"{url}/blue").status_code == 204
    assert demo.put(f"{url}/blue").status_code == 204  # idempotent
    assert demo.put(f"{url}/green").status_code == 204
    assert kept(bodies, demo.get(f"/v2/images/{image['id']}"))["tags"] == ["blue", "green"]
    tagged = demo.get("/v2/images", params={"tag": "green"}).json()["images"]
    assert [i["id"] for i in tagged] == [image["id"]]
    assert demo.delete(f"{url}/blue").status_code == 204
    assert demo.delete(f"{url}/blue").status_code == 404
    assert demo.get(f"/v2/images/{image['id']}").json()["tags"] == ["green"]
    assert demo.put(f"{url}/{'x' * 256}").status_code == 400
    assert alt.put(f"{url}/red").status_code == 404  # another project's image


def test_os_hidden_images_leave_the_default_list(clients, bodies):
    demo = clients["demo"]
    image = new_image(demo, bodies, name="hidden-one")
    kept(bodies, patch(demo, image["id"], [{"op": "replace", "path": "/os_hidden",
                                            "value": True}]))
    listed = {i["id"] for i in demo.get("/v2/images").json()["images"]}
    hidden = {i["id"] for i in demo.get("/v2/images?os_hidden=true").json()["images"]}
    assert image["id"] not in listed and image["id"] in hidden


def test_deactivate_and_reactivate_are_admin_actions_on_the_data(clients, bodies):
    demo, admin = clients["demo"], clients["admin"]
    image = new_image(demo, bodies)
    actions = f"/v2/images/{image['id']}/actions"
    # A queued image has no data to take out of use.
    assert admin.post(f"{actions}/deactivate").status_code == 403
    demo.put(f"/v2/images/{image['id']}/file", content=b"d" * 128,
             headers={"Content-Type": "application/octet-stream"})
    assert demo.post(f"{actions}/deactivate").status_code == 403  # admin only
    assert admin.post(f"{actions}/deactivate").status_code == 204
    assert admin.post(f"{actions}/deactivate").status_code == 204  # already: a no-op
    shown = kept(bodies, demo.get(f"/v2/images/{image['id']}"))
    assert shown["status"] == "deactivated"
    refused = demo.get(f"/v2/images/{image['id']}/file")
    assert refused.status_code == 403 and "deactivated" in refused.json()["error"]["message"]
    assert admin.get(f"/v2/images/{image['id']}/file").content == b"d" * 128
    assert demo.post(f"{actions}/reactivate").status_code == 403
    assert admin.post(f"{actions}/reactivate").status_code == 204
    assert demo.get(f"/v2/images/{image['id']}").json()["status"] == "active"
    assert demo.get(f"/v2/images/{image['id']}/file").content == b"d" * 128


def test_changes_are_traced_with_upstream_names(shared_cloud, clients, bodies):
    image = new_image(clients["demo"], bodies)
    patch(clients["demo"], image["id"], [{"op": "replace", "path": "/name", "value": "t"}])
    clients["demo"].put(f"/v2/images/{image['id']}/tags/traced")
    clients["demo"].put(f"/v2/images/{image['id']}/file", content=b"t" * 8,
                        headers={"Content-Type": "application/octet-stream"})
    assert clients["admin"].post(f"/v2/images/{image['id']}/actions/deactivate") \
        .status_code == 204
    shared_cloud.telemetry.force_flush()
    names = {s.name for s in shared_cloud.telemetry.finished_spans()}
    assert {"ImagesController.update", "Controller.update",
            "ImageActionsController.deactivate"} <= names


def test_every_image_body_matches_the_schemas_glance_serves(clients, bodies):
    """Last in the module: ``bodies`` holds what the tests above got back."""
    demo = clients["demo"]
    image_schema = demo.get("/v2/schemas/image").json()
    images_schema = demo.get("/v2/schemas/images").json()
    assert image_schema["name"] == "image" and images_schema["name"] == "images"
    assert image_schema["additionalProperties"] == {"type": "string"}
    assert images_schema["properties"]["images"]["items"] == image_schema
    jsonschema.Draft4Validator.check_schema(image_schema)
    listed = demo.get("/v2/images").json()
    everything = [*bodies, *listed["images"],
                  *clients["admin"].get("/v2/images").json()["images"]]
    assert len(bodies) > 10 and any(b["name"] == "cirros" for b in everything)
    for body in everything:
        jsonschema.validate(body, image_schema)
        assert set(body) >= {"id", "status", "visibility", "tags", "os_hidden", "self"}
    jsonschema.validate(listed, images_schema)
