"""Shelve, shelve-offload, unshelve and createImage on an embedded cloud, as a client sees them.

One cloud for the module (one compute host). The flows check what upstream
does at each step: the snapshot lands in Glance as ``<name>-shelved`` and is
deleted once the server runs again; an offloaded server keeps its port (unbound,
its address kept) and its volume (reserved, not connected), and gets both back
on the host the scheduler picks; every step is an event of the request's
instance action and a span of the request's one trace. The API tests check the
state machine (409s), the policies and the bodies.
"""

from __future__ import annotations

import os
import time

import pytest
from conftest import Session

from novalab.reference.nova.compute import shelve as compute_shelve
from novalab.reference.nova.compute.utils import compute_node_uuid
from novalab.reference.nova.db import api as db_api
from novalab.reference.nova.utils import (
    get_image_from_system_metadata,
    get_system_metadata_from_image,
)
from novalab.reference.nova.virt.libvirt import driver as libvirt_driver
from novalab.tracing import attributes as attr

TIMEOUT = 60  # seconds: a bound for a wait that fails with what it saw


@pytest.fixture(scope="module", params=["classic", "modern"])
def shared_cloud(request, tmp_path_factory):
    """One cloud per topology: shelve and unshelve must hold on both (the modern
    one also gives its placement claim back at the offload and claims again)."""
    from tests.conftest import make_cloud

    with make_cloud(tmp_path_factory.mktemp(request.param),
                    topology=request.param) as running:
        yield running
    running.telemetry.shutdown()


def claims(session, server_id) -> dict:
    """The server's allocations in placement ({} when it has none)."""
    url = session.client.endpoint("placement") + f"/allocations/{server_id}"
    return session.request("GET", url).json()["allocations"]


def _wait(what: str, check, timeout: float = TIMEOUT):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        done, last = check()
        if done:
            return last
        time.sleep(0.05)
    raise AssertionError(f"{what}: gave up after {timeout} s; last seen {last!r}")


def show(session, server_id) -> dict:
    return session.request("GET", f"{session.compute}/servers/{server_id}").json()["server"]


def wait_server(session, server_id, status, task_state=None) -> dict:
    def check():
        server = show(session, server_id)
        seen = (server["status"], server["OS-EXT-STS:task_state"])
        return seen == (status, task_state) or server["status"] == "ERROR", seen

    _wait(f"server {server_id} to be {status}/{task_state}", check)
    server = show(session, server_id)
    assert server["status"] == status, server.get("fault")
    return server


def act(session, server_id, body):
    return session.request("POST", f"{session.compute}/servers/{server_id}/action", json=body)


def boot(session, cloud, name, *, volume=False) -> dict:
    network = session.request("GET", session.client.endpoint("network") +
                              "/v2.0/networks?name=private").json()["networks"][0]["id"]
    server = {"name": name, "flavorRef": "42", "imageRef": cloud.cirros["id"],
              "networks": [{"uuid": network}]}
    if volume:
        server["block_device_mapping_v2"] = [
            {"boot_index": 0, "uuid": cloud.cirros["id"], "source_type": "image",
             "destination_type": "local"},
            {"source_type": "blank", "destination_type": "volume", "volume_size": 1,
             "delete_on_termination": True}]
    response = session.request("POST", f"{session.compute}/servers", json={"server": server})
    assert response.status_code == 202, response.text
    return wait_server(session, response.json()["server"]["id"], "ACTIVE")


def ports_of(session, server_id) -> list[dict]:
    url = session.client.endpoint("network") + f"/v2.0/ports?device_id={server_id}"
    return session.request("GET", url).json()["ports"]


def volume_status(session, volume_id) -> str:
    url = f"{session.client.endpoint('volumev3')}/volumes/{volume_id}"
    return session.request("GET", url).json()["volume"]["status"]


def image_status(session, image_id) -> int | str:
    response = session.request("GET", f"{session.image}/v2/images/{image_id}")
    return response.json()["status"] if response.status_code == 200 else response.status_code


def events(session, server_id) -> dict[str, list[tuple[str, str]]]:
    """Each action's events, as ``server event show`` lists them (from 2.51 a
    non-admin sees them too)."""
    url = f"{session.compute}/servers/{server_id}/os-instance-actions"
    found = {}
    for action in session.request("GET", url).json()["instanceActions"]:
        shown = session.request("GET", f"{url}/{action['request_id']}",
                                headers={"OpenStack-API-Version": "compute 2.51"}).json()
        found[action["action"]] = sorted((e["event"], e["result"])
                                         for e in shown["instanceAction"]["events"])
    return found


def trace_of(cloud, request_id: str, names: set[str]) -> list:
    """The spans of the trace of one request, once ``names`` have all ended in it."""
    def check():
        spans = cloud.telemetry.finished_spans()
        roots = [s for s in spans if s.attributes.get(attr.OPENSTACK_REQUEST_ID) == request_id]
        if not roots:
            return False, "no server span yet"
        mine = [s for s in spans if s.context.trace_id == roots[0].context.trace_id]
        missing = names - {s.name for s in mine}
        return not missing, mine if not missing else sorted(missing)

    return _wait(f"the trace of {request_id}", check, timeout=10)


def saved_states(spans) -> list[tuple[str, str | None]]:
    """(vm_state, task_state) of each save the compute host asked the conductor for."""
    saves = sorted((s for s in spans if s.name == "ConductorManager.instance_update"),
                   key=lambda s: s.start_time)
    return [(s.attributes[attr.NOVA_VM_STATE], s.attributes.get(attr.NOVA_TASK_STATE))
            for s in saves]


# -- the flows ------------------------------------------------------------------------------

def test_shelve_offload_and_unshelve_keep_the_port_and_the_volume(shared_cloud, login):
    """``shelve`` with shelved_offload_time 0: snapshot, power off, offload at once;
    ``unshelve``: scheduled again, spawned from the snapshot, which is then deleted."""
    cloud = shared_cloud
    demo, admin = login(cloud), login(cloud, "admin")
    server = boot(demo, cloud, "shelf", volume=True)
    server_id = server["id"]
    (port,) = ports_of(admin, server_id)
    (volume,) = server["os-extended-volumes:volumes_attached"]
    address = server["addresses"]["private"][0]["addr"]
    assert volume_status(demo, volume["id"]) == "in-use"

    shelved = act(demo, server_id, {"shelve": None})
    assert (shelved.status_code, shelved.text) == (202, "")
    offloaded = wait_server(demo, server_id, "SHELVED_OFFLOADED")
    # The server is nowhere, yet keeps its address and its volume.
    assert offloaded["addresses"]["private"][0]["addr"] == address
    assert offloaded["os-extended-volumes:volumes_attached"] == [volume]
    assert show(admin, server_id)["OS-EXT-SRV-ATTR:host"] is None
    assert not cloud.computes[0].driver.instance_exists(db_api.instance_get_by_uuid(
        cloud.compute_api.db, server_id))
    (unbound,) = ports_of(admin, server_id)
    assert unbound["id"] == port["id"]
    assert (unbound["binding:host_id"], unbound["status"]) == ("", "DOWN")
    assert volume_status(demo, volume["id"]) == "reserved"
    modern = cloud.config.topology == "modern"
    if modern:
        assert claims(admin, server_id) == {}
    system_metadata = db_api.instance_get_by_uuid(cloud.compute_api.db,
                                                  server_id)["system_metadata"]
    assert system_metadata["shelved_host"] == "compute-1"
    image_id = system_metadata["shelved_image_id"]
    image = demo.request("GET", f"{demo.image}/v2/images/{image_id}").json()
    assert (image["name"], image["status"], image["instance_uuid"], image["image_type"]) == \
        ("shelf-shelved", "active", server_id, "snapshot")
    assert image["size"] == cloud.cirros["size"]  # the disk's data, not its sparse tail
    assert image["os_distro"] == "cirros"  # inherited from the image the server booted

    shelve_spans = trace_of(cloud, shelved.headers["X-OpenStack-Request-ID"], {
        "ShelveController._shelve", "API.shelve", "create_image",
        "ComputeManager.shelve_instance", "LibvirtDriver.power_off", "LibvirtDriver.snapshot",
        "GlanceImageServiceV2._upload_data", "ComputeManager._shelve_offload_instance",
        "API.unbind_ports", "ComputeManager._terminate_volume_connections"})
    assert {s.resource.attributes["service.name"] for s in shelve_spans} >= {
        "nova-api", "nova-compute", "nova-conductor", "glance-api", "neutron-server",
        "cinder-api"}
    assert saved_states(shelve_spans) == [
        ("active", "shelving_image_pending_upload"), ("active", "shelving_image_uploading"),
        ("shelved", "shelving_offloading"), ("shelved_offloaded", None),
        ("shelved_offloaded", None)]

    assert act(demo, server_id, {"shelve": None}).status_code == 409
    assert act(demo, server_id, {"createImage": {"name": "x"}}).status_code == 409
    unshelved = act(demo, server_id, {"unshelve": None})
    assert unshelved.status_code == 202
    active = wait_server(demo, server_id, "ACTIVE")
    assert active["addresses"]["private"][0]["addr"] == address
    (rebound,) = ports_of(admin, server_id)
    assert (rebound["id"], rebound["binding:host_id"], rebound["status"]) == \
        (port["id"], "compute-1", "ACTIVE")
    assert volume_status(demo, volume["id"]) == "in-use"
    if modern:  # claimed again by the scheduler, on the host it came back to
        assert list(claims(admin, server_id)) == [compute_node_uuid("compute-1")]
    assert image_status(demo, image_id) == 404
    instance = db_api.instance_get_by_uuid(cloud.compute_api.db, server_id)
    assert instance["image_ref"] == cloud.cirros["id"]
    assert not {"shelved_at", "shelved_image_id", "shelved_host"} & \
        set(instance["system_metadata"])

    unshelve_spans = trace_of(cloud, unshelved.headers["X-OpenStack-Request-ID"], {
        "ShelveController._unshelve", "ComputeTaskManager.unshelve_instance",
        "SchedulerManager.select_destinations", "FilterScheduler.select_destinations",
        "ComputeManager._unshelve_instance", "API.setup_instance_network_on_host",
        "ComputeManager._prep_block_device", "fetch", "LibvirtDriver.spawn",
        "ComputeManager._delete_snapshot_of_shelved_instance"})
    # select_destinations is a call (the conductor waits for the scheduler's answer);
    # the compute host is cast to. The modern topology's super conductor does it.
    conductor = "nova-super-conductor" if modern else "nova-conductor"
    sent = {s.attributes[attr.RPC_METHOD]: s.attributes[attr.NOVALAB_RPC_STYLE]
            for s in unshelve_spans if s.kind.name == "PRODUCER" and
            s.resource.attributes["service.name"] == conductor}
    assert (sent["select_destinations"], sent["unshelve_instance"]) == ("call", "cast")
    assert saved_states(unshelve_spans)[0] == ("shelved_offloaded", "spawning")
    assert saved_states(unshelve_spans)[-1] == ("active", None)

    assert events(demo, server_id) == {
        "create": [("compute__do_build_and_run_instance", "Success")],
        "shelve": [("compute_shelve_instance", "Success")],
        "unshelve": [("compute_unshelve_instance", "Success"), ("get_image_info", "Success"),
                     ("schedule_instances", "Success")]}
    assert demo.request("DELETE", f"{demo.compute}/servers/{server_id}").status_code == 204


def test_shelved_without_offload_starts_again_and_offloads_on_request(shared_cloud, login):
    """shelved_offload_time -1: SHELVED stays on its host; unshelve powers it on there.
    ``shelveOffload`` (admins) then removes it; deleting it frees its port and image."""
    cloud = shared_cloud
    demo, admin = login(cloud), login(cloud, "admin")
    compute = cloud.computes[0]
    compute.shelved_offload_time = -1
    try:
        server_id = boot(demo, cloud, "kept")["id"]
        assert act(demo, server_id, {"shelve": None}).status_code == 202
        shelved = wait_server(admin, server_id, "SHELVED")
        assert shelved["OS-EXT-SRV-ATTR:host"] == "compute-1"
        assert shelved["OS-EXT-STS:power_state"] == 4  # SHUTDOWN
        image_id = db_api.instance_get_by_uuid(cloud.compute_api.db,
                                               server_id)["system_metadata"]["shelved_image_id"]
        assert act(demo, server_id, {"unshelve": None}).status_code == 202
        assert wait_server(demo, server_id, "ACTIVE")["OS-EXT-STS:power_state"] == 1
        assert image_status(demo, image_id) == 404
        assert events(demo, server_id)["unshelve"] == [("compute_start_instance", "Success")]

        assert act(demo, server_id, {"shelve": None}).status_code == 202
        wait_server(demo, server_id, "SHELVED")
        image_id = db_api.instance_get_by_uuid(cloud.compute_api.db,
                                               server_id)["system_metadata"]["shelved_image_id"]
        assert act(demo, server_id, {"shelveOffload": None}).status_code == 403
        assert act(admin, server_id, {"shelveOffload": None}).status_code == 202
        wait_server(demo, server_id, "SHELVED_OFFLOADED")
        assert events(demo, server_id)["shelveOffload"] == \
            [("compute_shelve_offload_instance", "Success")]
    finally:
        compute.shelved_offload_time = 0
    assert demo.request("DELETE", f"{demo.compute}/servers/{server_id}").status_code == 204
    assert demo.request("GET", f"{demo.compute}/servers/{server_id}").status_code == 404
    assert ports_of(admin, server_id) == []
    assert image_status(demo, image_id) == 404


def test_unshelve_after_its_flavor_was_deleted(shared_cloud, login):
    """The server is scheduled again with the flavor it embedded at boot (upstream's
    saved RequestSpec): deleting the flavor meanwhile strands nothing."""
    cloud = shared_cloud
    demo, admin = login(cloud), login(cloud, "admin")
    flavor = {"flavor": {"name": "shelve.gone", "id": "shelve-gone", "ram": 64, "vcpus": 1,
                         "disk": 1}}
    assert admin.request("POST", f"{admin.compute}/flavors", json=flavor).status_code == 200
    network = demo.request("GET", demo.client.endpoint("network") +
                           "/v2.0/networks?name=private").json()["networks"][0]["id"]
    response = demo.request("POST", f"{demo.compute}/servers", json={"server": {
        "name": "flavorless", "flavorRef": "shelve-gone", "imageRef": cloud.cirros["id"],
        "networks": [{"uuid": network}]}})
    assert response.status_code == 202, response.text
    server_id = response.json()["server"]["id"]
    try:
        wait_server(demo, server_id, "ACTIVE")
        assert act(demo, server_id, {"shelve": None}).status_code == 202
        wait_server(demo, server_id, "SHELVED_OFFLOADED")
        assert admin.request("DELETE", f"{admin.compute}/flavors/shelve-gone").status_code == 202
        assert act(demo, server_id, {"unshelve": None}).status_code == 202
        server = wait_server(demo, server_id, "ACTIVE")
        assert server["flavor"]["id"] == "shelve-gone"
    finally:
        demo.request("DELETE", f"{demo.compute}/servers/{server_id}")
        admin.request("DELETE", f"{admin.compute}/flavors/shelve-gone")


def test_create_image_snapshots_a_running_server(shared_cloud, login):
    cloud = shared_cloud
    demo = login(cloud)
    server_id = boot(demo, cloud, "snapped")["id"]
    response = act(demo, server_id, {"createImage": {"name": "snap", "metadata": {"k": "v"}}})
    assert (response.status_code, response.text) == (202, "")
    location = response.headers["Location"]
    assert location.startswith(cloud.urls["glance"] + "/images/")
    image_id = location.rsplit("/", 1)[1]
    wait_server(demo, server_id, "ACTIVE", None)
    image = demo.request("GET", f"{demo.image}/v2/images/{image_id}").json()
    assert (image["name"], image["status"], image["visibility"]) == ("snap", "active", "private")
    assert (image["k"], image["instance_uuid"], image["image_type"]) == \
        ("v", server_id, "snapshot")
    spans = trace_of(cloud, response.headers["X-OpenStack-Request-ID"],
                     {"ServersController._create_image", "API.snapshot",
                      "ComputeManager._snapshot_instance", "Flat.snapshot_extract"})
    assert [task for _vm, task in saved_states(spans)] == [
        "image_snapshot", "image_snapshot", "image_pending_upload", "image_uploading", None]
    assert events(demo, server_id)["createImage"] == [("compute_snapshot_instance", "Success")]
    assert demo.request("DELETE", f"{demo.image}/v2/images/{image_id}").status_code == 204
    assert demo.request("DELETE", f"{demo.compute}/servers/{server_id}").status_code == 204


# -- the API: states, policy, bodies ---------------------------------------------------------

@pytest.fixture(scope="module")
def active_server(shared_cloud):
    """One ACTIVE server of project demo that the tests below never change."""

    session = Session(shared_cloud, "demo", "demo")
    try:
        yield boot(session, shared_cloud, "steady")["id"]
    finally:
        session.close()


@pytest.mark.parametrize("persona, body, status", [
    ("demo", {"unshelve": None}, 409),
    ("admin", {"shelveOffload": None}, 409),
    ("reader", {"shelve": None}, 403),
    ("reader", {"unshelve": None}, 403),
    ("reader", {"createImage": {"name": "x"}}, 403),
    ("alt_demo", {"shelve": None}, 404),
    ("alt_demo", {"createImage": {"name": "x"}}, 404),
])
def test_state_and_policy(shared_cloud, login, active_server, persona, body, status):
    session = login(shared_cloud, persona, "demo" if persona == "reader" else None)
    response = act(session, active_server, body)
    assert response.status_code == status, response.text
    (fault,) = response.json().values()
    assert fault["code"] == status
    if status == 409:
        name = next(iter(body))
        assert fault["message"] == (f"Cannot '{name}' instance {active_server} while it is "
                                    f"in vm_state active")
    assert show(login(shared_cloud), active_server)["status"] == "ACTIVE"


@pytest.mark.parametrize("body, fragment", [
    ({}, "Malformed request body"),
    ({"shelve": None, "unshelve": None}, "Malformed request body"),
    ({"resize": {"flavorRef": "1"}}, "There is no such action: resize. novalab does not "
                                     "implement it"),
    ({"createImage": {}}, "'name' is a required property"),
    ({"createImage": {"name": " padded "}}, "Invalid input for field/attribute name"),
    ({"createImage": {"name": "x", "bogus": 1}}, "Additional properties are not allowed"),
    ({"createImage": {"name": "x", "metadata": {"k": 1}}}, "Invalid input"),
    ({"createImage": "x"}, "Invalid input for field/attribute createImage"),
])
def test_bad_bodies_are_400_before_the_server_is_looked_up(shared_cloud, login, body,
                                                           fragment):
    demo = login(shared_cloud)
    response = act(demo, "00000000-0000-0000-0000-000000000000", body)
    assert response.status_code == 400, response.text
    assert fragment in response.json()["badRequest"]["message"]


def test_a_valid_action_on_no_server_is_404(shared_cloud, login):
    response = act(login(shared_cloud), "00000000-0000-0000-0000-000000000000",
                   {"shelve": None})
    assert response.status_code == 404
    assert "itemNotFound" in response.json()


# -- pieces --------------------------------------------------------------------------------

def test_snapshot_extract_copies_data_not_the_sparse_tail(tmp_path):
    disk = tmp_path / "disk"
    disk.write_bytes(b"x" * 8192)
    with open(disk, "ab") as handle:
        handle.truncate(1 << 30)
    length = libvirt_driver._allocated_length(str(disk))
    assert 8192 <= length < 1 << 20 or length == os.path.getsize(disk)  # no SEEK_HOLE: all


def test_system_metadata_keeps_the_image_and_gives_it_back():
    image = {"id": "i", "min_ram": 0, "min_disk": 0, "disk_format": "raw",
             "container_format": "bare", "properties": {"os_distro": "cirros",
                                                        "img_signature": "x" * 300}}
    system_metadata = get_system_metadata_from_image(image, {"root_gb": 1})
    assert system_metadata == {"image_os_distro": "cirros", "image_min_ram": 0,
                               "image_min_disk": 1, "image_disk_format": "raw",
                               "image_container_format": "bare"}
    back = get_image_from_system_metadata(dict(system_metadata, shelved_host="h"))
    assert back == {"min_ram": 0, "min_disk": 1, "disk_format": "raw",
                    "container_format": "bare",
                    "properties": {"os_distro": "cirros", "shelved_host": "h"}}


def test_shelved_offload_time_comes_from_nova_conf(tmp_path):
    conf = tmp_path / "nova.conf"
    assert compute_shelve.shelved_offload_time(conf) == 0  # no file: upstream's default
    conf.write_text("[DEFAULT]\nshelved_offload_time = -1\n")
    assert compute_shelve.shelved_offload_time(conf) == -1
    conf.write_text("[DEFAULT]\nshelved_offload_time = soon\n")
    assert compute_shelve.shelved_offload_time(conf) == 0
