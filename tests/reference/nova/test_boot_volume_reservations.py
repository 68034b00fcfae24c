"""A boot whose volumes cannot all be reserved leaves none of them reserved.

Nova reserves each existing volume of a boot (an attachment with no connector)
before it answers 202. When a later reservation of the same instance fails, the
earlier ones must be released, or their volumes stay ``reserved`` for a server
that never existed. The race that makes it fail: another server reserves the
second volume after the boot's validation saw it available (Cinder then refuses a
second attachment of a volume that is not multiattach), on both topologies.
"""

from __future__ import annotations

import pytest

from tests.reference.nova.api.test_volume_attachments import create_volume


@pytest.fixture(scope="module", params=["classic", "modern"])
def shared_cloud(request, tmp_path_factory):
    from tests.conftest import make_cloud

    with make_cloud(tmp_path_factory.mktemp(request.param),
                    topology=request.param) as running:
        yield running
    running.telemetry.shutdown()


def volume(session, volume_id) -> dict:
    url = f"{session.client.endpoint('volumev3')}/volumes/{volume_id}"
    return session.request("GET", url).json()["volume"]


def test_a_failed_second_reservation_releases_the_first(shared_cloud, login, monkeypatch):
    demo = login(shared_cloud)
    network = demo.request("GET", demo.client.endpoint("network") +
                           "/v2.0/networks?name=private").json()["networks"][0]["id"]
    first = create_volume(demo, "first")
    second = create_volume(demo, "second")
    volume_api = shared_cloud.compute_api.volume_api
    reserve = volume_api.attachment_create
    other = "00000000-0000-4000-8000-000000000001"

    def racing(context, volume_id, instance_id, *args, **kwargs):
        if volume_id == second and instance_id != other:
            reserve(context, second, other)   # another server's boot got there first
        return reserve(context, volume_id, instance_id, *args, **kwargs)

    monkeypatch.setattr(volume_api, "attachment_create", racing)
    mappings = [
        {"boot_index": 0, "uuid": shared_cloud.cirros["id"], "source_type": "image",
         "destination_type": "local"},
        {"uuid": first, "source_type": "volume", "destination_type": "volume"},
        {"uuid": second, "source_type": "volume", "destination_type": "volume"},
    ]
    response = demo.request("POST", f"{demo.compute}/servers", json={"server": {
        "name": "two-volumes", "flavorRef": "42", "imageRef": shared_cloud.cirros["id"],
        "networks": [{"uuid": network}], "block_device_mapping_v2": mappings}})
    assert response.status_code == 400, response.text
    shown = volume(demo, first)
    assert (shown["status"], shown["attachments"]) == ("available", [])
    attachments = demo.request("GET", f"{demo.client.endpoint('volumev3')}/attachments",
                               headers={"OpenStack-API-Version": "volume 3.27"}).json()
    assert [a["instance"] for a in attachments["attachments"]
            if a["volume_id"] in (first, second)] == [other]
    servers = demo.request("GET", f"{demo.compute}/servers?name=two-volumes").json()
    assert servers["servers"] == []
