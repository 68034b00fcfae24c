"""``os-volume_attachments`` over HTTP on an embedded cloud: attach and detach a volume on a
running server, as ``openstack server add volume`` / ``server remove volume`` do.

What is checked is what really happens: the volume's status in Cinder at each
end (reserved -> in-use -> detaching -> available), the rbd disk in the domain's
saved definition after the attach and gone after the detach, the instance
actions and their events, and the refusals (409 for a server in the wrong
state, 400 for a volume Cinder will not hand over or the root volume, 404 for a
volume the server does not have, 403 for a reader).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from tempest.lib.api_schema.response.compute.v2_1 import servers as tempest_servers
from tempest.lib.common.jsonschema_validator import FORMAT_CHECKER, JSONSCHEMA_VALIDATOR

from tests.reference.nova.test_shelve import (
    _wait,
    act,
    boot,
    events,
    show,
    trace_of,
    volume_status,
    wait_server,
)


@pytest.fixture(scope="module", params=["classic", "modern"])
def shared_cloud(request, tmp_path_factory):
    from tests.conftest import make_cloud

    with make_cloud(tmp_path_factory.mktemp(request.param),
                    topology=request.param) as running:
        yield running
    running.telemetry.shutdown()


def attachments_url(session, server_id: str) -> str:
    return f"{session.compute}/servers/{server_id}/os-volume_attachments"


def create_volume(session, name: str) -> str:
    url = f"{session.client.endpoint('volumev3')}/volumes"
    response = session.request("POST", url, json={"volume": {"size": 1, "name": name}})
    assert response.status_code == 202, response.text
    volume_id = response.json()["volume"]["id"]
    _wait(f"volume {name}", lambda: ((s := volume_status(session, volume_id)) == "available", s))
    return volume_id


def wait_volume(session, volume_id: str, status: str) -> None:
    def check():
        seen = volume_status(session, volume_id)
        return seen == status or seen.startswith("error"), seen

    assert _wait(f"volume {volume_id} to be {status}", check) == status


def matches(response, schema) -> dict:
    """The body, checked against Tempest's response schema (status code and body)."""
    assert response.status_code in schema["status_code"], response.text
    body = response.json()
    JSONSCHEMA_VALIDATOR(schema["response_body"], format_checker=FORMAT_CHECKER).validate(body)
    return body


def rbd_targets(cloud, server_id: str) -> dict[str, str]:
    """target dev -> rbd image of the domain's saved definition (what the next start runs)."""
    guest = cloud.computes[0].driver._host.get_guest({"uuid": server_id})
    root = ET.fromstring(guest.get_persistent_xml())
    return {d.find("target").get("dev"): d.find("source").get("name")
            for d in root.iterfind("./devices/disk[@type='network']")}


def test_attach_and_detach_a_volume_on_a_running_server(shared_cloud, login):
    cloud = shared_cloud
    demo = login(cloud)
    server_id = boot(demo, cloud, "attach-me")["id"]
    volume_id = create_volume(demo, "data")
    url = attachments_url(demo, server_id)
    assert demo.request("GET", url).json() == {"volumeAttachments": []}

    response = demo.request("POST", url, json={"volumeAttachment": {"volumeId": volume_id}})
    assert matches(response, tempest_servers.attach_volume) == {"volumeAttachment": {
        "id": volume_id, "serverId": server_id, "volumeId": volume_id, "device": "/dev/vdb"}}
    attach_request = response.headers["x-openstack-request-id"]
    wait_volume(demo, volume_id, "in-use")
    assert rbd_targets(cloud, server_id) == {"vdb": f"volumes/volume-{volume_id}"}
    shown = matches(demo.request("GET", f"{url}/{volume_id}"),
                    tempest_servers.show_volume_attachment)["volumeAttachment"]
    assert shown == {"id": volume_id, "serverId": server_id, "volumeId": volume_id,
                     "device": "/dev/vdb"}
    listed = matches(demo.request("GET", url), tempest_servers.list_volume_attachments)
    assert [a["volumeId"] for a in listed["volumeAttachments"]] == [volume_id]
    volume = demo.request("GET", f"{demo.client.endpoint('volumev3')}/volumes/{volume_id}")
    (cinder_attachment,) = volume.json()["volume"]["attachments"]
    assert (cinder_attachment["server_id"], cinder_attachment["device"]) == \
        (server_id, "/dev/vdb")
    spans = trace_of(cloud, attach_request, {"ComputeManager.attach_volume",
                                             "Guest.attach_device"})
    names = {s.name for s in spans}
    assert {"API.attachment_update", "LibvirtDriver.attach_volume",
            "API.attachment_complete"} <= names

    # Attached already: Nova's 400, and nothing changes.
    again = demo.request("POST", url, json={"volumeAttachment": {"volumeId": volume_id}})
    assert again.status_code == 400, again.text
    assert "already attached" in again.json()["badRequest"]["message"]

    response = demo.request("DELETE", f"{url}/{volume_id}")
    assert response.status_code == 202, response.text
    assert volume_status(demo, volume_id) in ("detaching", "available")
    wait_volume(demo, volume_id, "available")
    assert rbd_targets(cloud, server_id) == {}
    assert demo.request("GET", url).json() == {"volumeAttachments": []}
    assert demo.request("GET", f"{url}/{volume_id}").status_code == 404

    admin = login(cloud, "admin")  # at 2.1 the events are for admins (their policy)

    def both_recorded():
        found = events(admin, server_id)
        done = all(found.get(a) for a in ("attach_volume", "detach_volume"))
        return done, found

    found = _wait("the attach and detach actions", both_recorded)
    assert found["attach_volume"] == [("compute_attach_volume", "Success")]
    assert found["detach_volume"] == [("compute_detach_volume", "Success")]
    assert show(demo, server_id)["status"] == "ACTIVE"


def test_refusals(shared_cloud, login):
    cloud = shared_cloud
    demo = login(cloud)
    server_id = boot(demo, cloud, "refusals")["id"]
    url = attachments_url(demo, server_id)
    volume_id = create_volume(demo, "spare")
    missing = "00000000-0000-0000-0000-000000000000"

    # Bodies are checked first: 400s.
    for body in ({}, {"volumeAttachment": {}}, {"volumeAttachment": {"volumeId": "nope"}},
                 {"volumeAttachment": {"volumeId": volume_id, "tag": "x"}}):
        response = demo.request("POST", url, json=body)
        assert response.status_code == 400, (body, response.text)
    # 2.49 takes a tag, which novalab refuses as a feature it lacks.
    tagged = demo.request("POST", url, json={"volumeAttachment": {"volumeId": volume_id,
                                                                  "tag": "x"}},
                          headers={"OpenStack-API-Version": "compute 2.49"})
    assert tagged.status_code == 400
    assert "novalab does not implement" in tagged.json()["badRequest"]["message"]
    # No such volume, no such attachment: 404.
    nothing = demo.request("POST", url, json={"volumeAttachment": {"volumeId": missing}})
    assert nothing.status_code == 404, nothing.text
    assert demo.request("DELETE", f"{url}/{volume_id}").status_code == 404
    assert demo.request("GET", f"{url}/{volume_id}").status_code == 404
    swap = demo.request("PUT", f"{url}/{volume_id}",
                        json={"volumeAttachment": {"volumeId": volume_id}})
    assert swap.status_code == 501
    assert "novalab does not implement" in swap.json()["notImplemented"]["message"]
    # A reader may look but not attach; another project sees no server.
    reader = login(cloud, "reader", "demo")
    assert reader.request("GET", url).status_code == 200
    forbidden = reader.request("POST", url, json={"volumeAttachment": {"volumeId": volume_id}})
    assert forbidden.status_code == 403, forbidden.text
    alt = login(cloud, "alt_demo")
    assert alt.request("GET", url).status_code == 404
    # A shelved server takes no attach here: 409 in Nova's words.
    assert act(demo, server_id, {"shelve": None}).status_code == 202
    wait_server(demo, server_id, "SHELVED_OFFLOADED")
    response = demo.request("POST", url, json={"volumeAttachment": {"volumeId": volume_id}})
    assert response.status_code == 409, response.text
    assert response.json()["conflictingRequest"]["message"] == (
        f"Cannot 'attach_volume' instance {server_id} while it is in vm_state "
        "shelved_offloaded")
    assert volume_status(demo, volume_id) == "available"


def test_the_root_volume_is_not_detached(shared_cloud, login):
    cloud = shared_cloud
    demo = login(cloud)
    volume_id = create_volume(demo, "root")
    network = demo.request("GET", demo.client.endpoint("network") +
                           "/v2.0/networks?name=private").json()["networks"][0]["id"]
    response = demo.request("POST", f"{demo.compute}/servers", json={"server": {
        "name": "bfv", "flavorRef": "42", "networks": [{"uuid": network}],
        "block_device_mapping_v2": [{"boot_index": 0, "uuid": volume_id,
                                     "source_type": "volume",
                                     "destination_type": "volume"}]}})
    assert response.status_code == 202, response.text
    server_id = wait_server(demo, response.json()["server"]["id"], "ACTIVE")["id"]
    response = demo.request("DELETE", f"{attachments_url(demo, server_id)}/{volume_id}")
    assert response.status_code == 400, response.text
    assert response.json()["badRequest"]["message"] == "Cannot detach a root device volume"
    assert volume_status(demo, volume_id) == "in-use"
