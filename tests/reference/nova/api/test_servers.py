"""The compute API as a client sees it: versions, flavors, servers, faults, isolation."""

from __future__ import annotations

import time

import pytest

from novalab.reference.common import exception


def wait_status(session, server_id, statuses=("ACTIVE", "ERROR"), timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        response = session.request("GET", f"{session.compute}/servers/{server_id}")
        server = response.json()["server"]
        if server["status"] in statuses:
            return server
        time.sleep(0.05)
    raise AssertionError(f"{server_id} did not reach {statuses}")


def wait_gone(session, server_id, timeout=30):
    """Poll until 404; on the way the server may briefly show status DELETED."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        response = session.request("GET", f"{session.compute}/servers/{server_id}")
        if response.status_code == 404:
            return
        assert response.json()["server"]["status"] in ("ACTIVE", "DELETED")
        time.sleep(0.05)
    raise AssertionError(f"{server_id} was not deleted")


def create(session, cloud, **server):
    body = {"server": {"name": "t", "flavorRef": "42", "imageRef": cloud.cirros["id"], **server}}
    return session.request("POST", f"{session.compute}/servers", json=body)


def test_version_documents(shared_cloud, login):
    session = login(shared_cloud)
    root = session.http.get(shared_cloud.urls["nova"] + "/").json()
    # As Nova's /: the legacy v2.0 and v2.1, whose range is what novalab implements.
    assert [(v["id"], v["status"]) for v in root["versions"]] == [
        ("v2.0", "DEPRECATED"), ("v2.1", "CURRENT")]
    assert (root["versions"][1]["min_version"], root["versions"][1]["version"]) == \
        ("2.1", "2.61")
    version = session.http.get(session.compute).json()["version"]
    assert version["min_version"] == "2.1" and version["status"] == "CURRENT"
    assert version["version"] == "2.61"
    # v2.0's document is there, its resources are not: a fault that says so.
    legacy = session.request("GET", shared_cloud.urls["nova"] + "/v2/servers")
    assert legacy.status_code == 404
    assert "/v2.1 only" in legacy.json()["itemNotFound"]["message"]


def test_microversion_above_maximum_is_406(shared_cloud, login):
    session = login(shared_cloud)
    response = session.request("GET", f"{session.compute}/flavors",
                               headers={"OpenStack-API-Version": "compute 2.99"})
    assert response.status_code == 406
    assert "maximum is 2.61" in response.json()["computeFault"]["message"]
    ok = session.request("GET", f"{session.compute}/flavors",
                         headers={"OpenStack-API-Version": "compute latest"})
    assert ok.headers["OpenStack-API-Version"] == "compute 2.61"


def test_flavors(shared_cloud, login):
    session = login(shared_cloud)
    names = [f["name"] for f in session.request("GET", f"{session.compute}/flavors")
             .json()["flavors"]]
    assert names == ["m1.tiny", "m1.small", "m1.nano"]  # by flavor id: "1", "2", "42"
    tiny = session.request("GET", f"{session.compute}/flavors/1").json()["flavor"]
    assert (tiny["ram"], tiny["vcpus"], tiny["disk"]) == (512, 1, 1)
    missing = session.request("GET", f"{session.compute}/flavors/m1.huge")
    assert missing.status_code == 404
    assert missing.json()["itemNotFound"]["code"] == 404


def test_no_token_is_401(shared_cloud):
    import httpx

    response = httpx.get(f"{shared_cloud.urls['nova']}/v2.1/servers")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == 401
    assert response.headers["WWW-Authenticate"].startswith("Keystone uri=")
    bad = httpx.get(f"{shared_cloud.urls['nova']}/v2.1/servers",
                    headers={"X-Auth-Token": "not-a-token"})
    assert bad.status_code == 401


@pytest.mark.parametrize("body, fragment", [
    ({}, "'server' is a required property"),
    ({"server": {"flavorRef": "42"}}, "'name' is a required property"),
    ({"server": {"name": "x"}}, "'flavorRef' is a required property"),
    ({"server": {"name": "", "flavorRef": "42"}}, "Invalid input for field/attribute name"),
    ({"server": {"name": " padded ", "flavorRef": "42"}}, "field/attribute name"),
    ({"server": {"name": "x", "flavorRef": "42", "imageRef": "nope"}}, "imageRef"),
    ({"server": {"name": "x", "flavorRef": "42", "bogus": 1}}, "Additional properties"),
    ({"server": {"name": "x", "flavorRef": "42", "min_count": 0}}, "min_count"),
    ({"server": {"name": "x", "flavorRef": "42", "metadata": {"k": 1}}}, "attribute k."),
    ({"server": {"name": "x", "flavorRef": "42", "networks": "everything"}}, "networks"),
])
def test_bad_bodies_are_400_with_fault(shared_cloud, login, body, fragment):
    session = login(shared_cloud)
    response = session.request("POST", f"{session.compute}/servers", json=body)
    assert response.status_code == 400, response.text
    fault = response.json()["badRequest"]
    assert fault["code"] == 400
    assert fragment in fault["message"]


def test_malformed_json_is_400(shared_cloud, login):
    session = login(shared_cloud)
    response = session.request("POST", f"{session.compute}/servers", content=b"{not json",
                               headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert "Malformed request body" in response.json()["badRequest"]["message"]


def test_unknown_flavor_and_image_are_400(shared_cloud, login):
    session = login(shared_cloud)
    response = create(session, shared_cloud, flavorRef="999")
    assert response.status_code == 400
    assert "Flavor 999 could not be found" in response.json()["badRequest"]["message"]
    response = create(session, shared_cloud, imageRef="6b3f3c8e-3a4b-4f29-9d8e-1c2b3a4d5e6f")
    assert response.status_code == 400
    assert "could not be found" in response.json()["badRequest"]["message"]


def test_create_show_list_delete(cloud, login):
    session = login(cloud)
    response = create(session, cloud, name="life", metadata={"purpose": "test"})
    assert response.status_code == 202
    created = response.json()["server"]
    assert response.headers["Location"].endswith(f"/servers/{created['id']}")
    # Nothing claimed that nothing backs: no guest password. The groups: as asked.
    assert "adminPass" not in created
    assert created["security_groups"] == [{"name": "default"}]
    server = wait_status(session, created["id"])
    assert server["status"] == "ACTIVE"
    assert server["metadata"] == {"purpose": "test"}
    assert server["hostId"] and "OS-EXT-SRV-ATTR:host" not in server  # not admin
    assert server["security_groups"] == [{"name": "default"}]  # its port's, in Neutron
    listed = session.request("GET", f"{session.compute}/servers").json()["servers"]
    assert [s["id"] for s in listed] == [created["id"]]
    detail = session.request("GET", f"{session.compute}/servers/detail").json()["servers"]
    assert detail[0]["status"] == "ACTIVE"

    assert session.request("DELETE", f"{session.compute}/servers/{created['id']}") \
        .status_code == 204
    wait_gone(session, created["id"])
    cloud.wait_idle()
    with pytest.raises(exception.InstanceNotFound):  # the guest is gone from libvirt
        cloud.computes[0].driver.get_info({"uuid": created["id"]})
    assert session.request("GET", f"{session.compute}/servers").json()["servers"] == []


def test_other_projects_server_is_404(cloud, login):
    demo = login(cloud, "demo")
    admin = login(cloud, "admin")
    server_id = create(admin, cloud, name="admins").json()["server"]["id"]
    wait_status(admin, server_id)
    response = demo.request("GET", f"{demo.compute}/servers/{server_id}")
    assert response.status_code == 404
    assert response.json()["itemNotFound"]["message"] == \
        f"Instance {server_id} could not be found."
    assert demo.request("DELETE", f"{demo.compute}/servers/{server_id}").status_code == 404
    assert demo.request("GET", f"{demo.compute}/servers").json()["servers"] == []
    forbidden = demo.request("GET", f"{demo.compute}/servers?all_tenants=1")
    assert forbidden.status_code == 403
    everyone = admin.request("GET", f"{admin.compute}/servers/detail?all_tenants=1").json()
    assert [s["id"] for s in everyone["servers"]] == [server_id]
    assert everyone["servers"][0]["OS-EXT-SRV-ATTR:host"] == "compute-1"


def test_no_valid_host_ends_in_error_with_fault(cloud, login):
    """An image for an architecture no host offers: ERROR + NoValidHost, never BUILD."""
    repo = cloud.images
    arm = repo.create(name="arm-only", status="active", disk_format="qcow2",
                      container_format="bare", properties={"hw_architecture": "aarch64"})
    session = login(cloud)
    server_id = create(session, cloud, imageRef=arm["id"]).json()["server"]["id"]
    server = wait_status(session, server_id)
    assert server["status"] == "ERROR"
    assert server["OS-EXT-STS:task_state"] is None
    assert server["fault"]["code"] == 500
    assert server["fault"]["message"].startswith("No valid host was found.")
    assert "details" not in server["fault"]  # code 500 details are for admins only


def test_too_big_for_any_host_is_no_valid_host(cloud, login):
    session = login(cloud)
    # The test hypervisor has 3 GiB; with the 1.5 RAM ratio, three m1.small cannot fit.
    ids = [create(session, cloud, name=f"big{i}", flavorRef="2").json()["server"]["id"]
           for i in range(3)]
    statuses = sorted(wait_status(session, i)["status"] for i in ids)
    assert statuses == ["ACTIVE", "ACTIVE", "ERROR"]


def test_spawn_failure_ends_in_error_and_cleans_up(cloud, login, monkeypatch):
    import libvirt

    host = cloud.computes[0].driver._host

    def broken_define(xml):
        raise libvirt.libvirtError("injected: defineXML refused")

    monkeypatch.setattr(host, "write_instance_config", broken_define)
    session = login(cloud)
    server_id = create(session, cloud, name="doomed").json()["server"]["id"]
    server = wait_status(session, server_id)
    assert server["status"] == "ERROR"
    assert "Build of instance" in server["fault"]["message"]
    assert "defineXML refused" in server["fault"]["message"]
    instance_dir = cloud.computes[0].driver._get_instance_path({"uuid": server_id})
    import os

    assert not os.path.exists(instance_dir)


def test_image_boot_mapping_as_the_openstack_client_sends_it(cloud, login):
    session = login(cloud)
    image = cloud.cirros["id"]
    body = {"server": {"name": "osc", "flavorRef": "42", "imageRef": image, "networks": [],
                       "min_count": 1, "max_count": 1,
                       "block_device_mapping_v2": [{
                           "uuid": image, "boot_index": 0, "source_type": "image",
                           "destination_type": "local", "delete_on_termination": True}]}}
    response = session.request("POST", f"{session.compute}/servers", json=body)
    assert response.status_code == 202, response.text
    assert wait_status(session, response.json()["server"]["id"])["status"] == "ACTIVE"


def test_unknown_volume_is_400(shared_cloud, login):
    session = login(shared_cloud)
    body = {"server": {"name": "bfv", "flavorRef": "42", "block_device_mapping_v2": [{
        "uuid": "6b3f3c8e-3a4b-4f29-9d8e-1c2b3a4d5e6f", "boot_index": 0,
        "source_type": "volume", "destination_type": "volume"}]}}
    response = session.request("POST", f"{session.compute}/servers", json=body)
    assert response.status_code == 400
    assert "could not be found" in response.json()["badRequest"]["message"]


def test_bad_mappings_are_400(shared_cloud, login):
    session = login(shared_cloud)
    for mapping, fragment in (
            ({"source_type": "volume", "destination_type": "local", "uuid": "x"},
             "destination_type volume"),
            ({"source_type": "blank", "destination_type": "volume"}, "volume_size"),
            ({"source_type": "snapshot", "destination_type": "volume", "uuid": "x"},
             "snapshots are not supported")):
        body = {"server": {"name": "m", "flavorRef": "42", "imageRef": shared_cloud.cirros["id"],
                           "block_device_mapping_v2": [mapping]}}
        response = session.request("POST", f"{session.compute}/servers", json=body)
        assert response.status_code == 400, mapping
        assert fragment in response.json()["badRequest"]["message"]


def test_boot_from_volume_and_delete_leaves_nothing(cloud, login):
    """image -> new root volume (Nova creates it through Cinder), deleted with the server."""
    session = login(cloud)
    volumes_url = cloud.urls["cinder"] + f"/v3/{session.project_id}/volumes"
    body = {"server": {"name": "bfv", "flavorRef": "42", "block_device_mapping_v2": [{
        "uuid": cloud.cirros["id"], "boot_index": 0, "source_type": "image",
        "destination_type": "volume", "volume_size": 1, "delete_on_termination": True}]}}
    response = session.request("POST", f"{session.compute}/servers", json=body)
    assert response.status_code == 202, response.text
    server = wait_status(session, response.json()["server"]["id"])
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["image"] == ""  # booted from a volume
    (attached,) = server["os-extended-volumes:volumes_attached"]
    volume = session.request("GET", f"{volumes_url}/{attached['id']}").json()["volume"]
    assert volume["status"] == "in-use" and volume["bootable"] == "true"
    assert server["addresses"]["private"][0]["addr"].startswith("10.0.0.")
    assert session.request("DELETE", f"{session.compute}/servers/{server['id']}") \
        .status_code == 204
    wait_gone(session, server["id"])
    deadline = time.monotonic() + 30
    while session.request("GET", f"{volumes_url}/{attached['id']}").status_code != 404:
        assert time.monotonic() < deadline, "the root volume was not deleted"
        time.sleep(0.1)
    ports = session.request("GET", cloud.urls["neutron"] + "/v2.0/ports",
                            params={"device_id": server["id"]}).json()["ports"]
    assert ports == []


@pytest.mark.parametrize("field", [{"adminPass": "s3cret"}])
def test_options_nothing_backs_are_refused_not_ignored(shared_cloud, login, field):
    session = login(shared_cloud)
    response = create(session, shared_cloud, **field)
    assert response.status_code == 400
    assert next(iter(field)) in response.json()["badRequest"]["message"]
