"""The modern boot on an embedded cloud: build requests, cells, placement claims.

One modern cloud for the module (one compute host, no Neutron: ports are the
classic flow's business and are tested there). Each test boots as a user
would and then looks where upstream says things are: the instance in cell1 or
cell0, its mapping, its build request gone, its claim in placement (the server
id is the consumer) or no claim at all.
"""

from __future__ import annotations

import time

import pytest
from sqlalchemy import func, select

from novalab.reference.common.db import Database
from novalab.reference.nova.cells import CELL1_UUID, cell0_url
from novalab.reference.nova.compute.utils import compute_node_uuid
from novalab.reference.nova.conductor.manager import ComputeTaskManager
from novalab.reference.nova.db import api as db_api
from novalab.reference.nova.db import api_database as api_db
from novalab.reference.nova.db.api_database import CELL0_UUID
from novalab.reference.nova.db.api_models import BuildRequest
from tests.conftest import make_cloud

TIMEOUT = 60
HUGE = {"flavorid": "900", "name": "huge", "memory_mb": 40000, "vcpus": 1, "root_gb": 1}
# More than half of the host's placement inventory of memory: two do not fit.
HALF = {"flavorid": "901", "name": "half", "memory_mb": 0, "vcpus": 1, "root_gb": 1}


@pytest.fixture(scope="module")
def modern(tmp_path_factory):
    with make_cloud(tmp_path_factory.mktemp("modern"), topology="modern",
                    network=False) as running:
        db = Database(running.config.db_url)
        db_api.flavor_create(db, HUGE)
        node = db_api.compute_node_get_all(db)[0]
        capacity = int((node["memory_mb"] - 512) * node["ram_allocation_ratio"])  # reserved
        db_api.flavor_create(db, dict(HALF, memory_mb=capacity // 2 + 64))
        running.api_db = db
        running.cell0_db = Database(cell0_url(running.config.db_url))
        yield running
        running.cell0_db.dispose()
        db.dispose()
    running.telemetry.shutdown()


def _wait(what, check, timeout=TIMEOUT):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        done, last = check()
        if done:
            return last
        time.sleep(0.05)
    raise AssertionError(f"{what}: gave up after {timeout} s; last seen {last!r}")


def create(session, name, flavor="42", **extra):
    body = {"server": {"name": name, "flavorRef": flavor, "imageRef": session.cirros,
                       **extra}}
    response = session.request("POST", f"{session.compute}/servers", json=body)
    assert response.status_code == 202, response.text
    return response.json()["server"]["id"]


def show(session, server_id):
    return session.request("GET", f"{session.compute}/servers/{server_id}")


def wait_status(session, server_id, *statuses):
    def check():
        server = show(session, server_id).json()["server"]
        return server["status"] in statuses, server["status"]

    _wait(f"{server_id} to reach {statuses}", check)
    return show(session, server_id).json()["server"]


def allocations(session, consumer):
    url = session.client.endpoint("placement") + f"/allocations/{consumer}"
    return session.request("GET", url).json()["allocations"]


def build_request_count(db) -> int:
    with db.session() as s:
        return s.scalar(select(func.count()).select_from(BuildRequest))


@pytest.fixture
def demo(modern, login):
    session = login(modern)
    session.cirros = modern.cirros["id"]
    return session


def test_a_boot_lands_in_cell1_with_its_claim(modern, demo, login):
    server_id = create(demo, "modern-ok")
    server = wait_status(demo, server_id, "ACTIVE", "ERROR")
    assert server["status"] == "ACTIVE", server.get("fault")
    mapping = api_db.instance_mapping_get_by_instance_uuid(modern.api_db, server_id)
    assert mapping["cell_mapping"]["uuid"] == CELL1_UUID
    with pytest.raises(api_db.BuildRequestNotFound):
        api_db.build_request_get_by_instance_uuid(modern.api_db, server_id)
    assert db_api.instance_get_by_uuid(modern.api_db, server_id)["host"] == "compute-1"
    with pytest.raises(Exception, match="could not be found"):
        db_api.instance_get_by_uuid(modern.cell0_db, server_id)
    admin = login(modern, "admin")
    claim = allocations(admin, server_id)
    assert claim == {compute_node_uuid("compute-1"): {
        "resources": {"VCPU": 1, "MEMORY_MB": 64, "DISK_GB": 1}, "generation": claim[
            compute_node_uuid("compute-1")]["generation"]}}

    assert demo.request("DELETE", f"{demo.compute}/servers/{server_id}").status_code == 204
    _wait("the server to go", lambda: (show(demo, server_id).status_code == 404, None))
    _wait("its claim to go", lambda: (allocations(admin, server_id) == {}, None))


def test_no_valid_host_buries_the_instance_in_cell0(modern, demo, login):
    server_id = create(demo, "modern-huge", flavor=HUGE["flavorid"])
    server = wait_status(demo, server_id, "ERROR", "ACTIVE")
    assert server["status"] == "ERROR"
    assert server["fault"]["message"].startswith("No valid host was found.")
    buried = db_api.instance_get_by_uuid(modern.cell0_db, server_id)
    assert (buried["vm_state"], buried["task_state"]) == ("error", None)
    mapping = api_db.instance_mapping_get_by_instance_uuid(modern.api_db, server_id)
    assert mapping["cell_mapping"]["uuid"] == CELL0_UUID
    with pytest.raises(Exception, match="could not be found"):
        db_api.instance_get_by_uuid(modern.api_db, server_id)
    (action,) = db_api.actions_get(modern.cell0_db, server_id)
    (event,) = db_api.action_events_get(modern.cell0_db, action["id"])
    assert (action["action"], event["event"], event["result"]) == \
        ("create", "conductor_schedule_and_build_instances", "Error")
    admin = login(modern, "admin")
    assert allocations(admin, server_id) == {}
    listed = demo.request("GET", f"{demo.compute}/servers").json()["servers"]
    assert server_id in {s["id"] for s in listed}

    assert demo.request("DELETE", f"{demo.compute}/servers/{server_id}").status_code == 204
    assert show(demo, server_id).status_code == 404
    with pytest.raises(Exception, match="could not be found"):
        db_api.instance_get_by_uuid(modern.cell0_db, server_id)


def test_a_request_that_half_fits_gives_back_what_it_claimed(modern, demo, login):
    """Two instances, room for one: the scheduler claims the first, finds no host
    for the second, gives the first claim back; both end in cell0."""
    response = demo.request("POST", f"{demo.compute}/servers", json={"server": {
        "name": "pair", "flavorRef": HALF["flavorid"], "imageRef": demo.cirros,
        "min_count": 2, "max_count": 2}})
    assert response.status_code == 202, response.text
    admin = login(modern, "admin")

    def both_error():
        servers = [s for s in demo.request("GET", f"{demo.compute}/servers/detail").json()[
            "servers"] if s["name"].startswith("pair-")]
        return (len(servers) == 2 and all(s["status"] == "ERROR" for s in servers),
                [(s["name"], s["status"]) for s in servers])

    servers = _wait("both to be ERROR", both_error)
    assert len(servers) == 2
    for server in demo.request("GET", f"{demo.compute}/servers").json()["servers"]:
        if server["name"].startswith("pair-"):
            assert allocations(admin, server["id"]) == {}
            assert api_db.instance_mapping_get_by_instance_uuid(
                modern.api_db, server["id"])["cell_mapping"]["uuid"] == CELL0_UUID
            demo.request("DELETE", f"{demo.compute}/servers/{server['id']}")


def test_a_server_waiting_for_a_cell_is_shown_listed_and_deleted_from_its_build_request(
        modern, demo, login, monkeypatch):
    """The cast is held back: the server exists only as a build request. It shows
    as BUILD/scheduling, is listed, and a delete removes it for good; when the
    cast finally arrives the conductor finds nothing to build and claims nothing."""
    held = []
    monkeypatch.setattr(modern.compute_api.compute_task_api, "schedule_and_build_instances",
                        lambda context, **kwargs: held.append((context, kwargs)))
    before = build_request_count(modern.api_db)
    server_id = create(demo, "waiting")
    server = show(demo, server_id).json()["server"]
    assert (server["status"], server["OS-EXT-STS:task_state"]) == ("BUILD", "scheduling")
    listed = demo.request("GET", f"{demo.compute}/servers").json()["servers"]
    assert server_id in {s["id"] for s in listed}
    assert build_request_count(modern.api_db) == before + 1

    assert demo.request("DELETE", f"{demo.compute}/servers/{server_id}").status_code == 204
    assert show(demo, server_id).status_code == 404
    assert build_request_count(modern.api_db) == before
    with pytest.raises(api_db.InstanceMappingNotFound):
        api_db.instance_mapping_get_by_instance_uuid(modern.api_db, server_id)

    monkeypatch.undo()
    (context, kwargs), = held
    modern.compute_api.compute_task_api.schedule_and_build_instances(context, **kwargs)
    time.sleep(1)  # the cast is processed on the conductor's thread: let it
    admin = login(modern, "admin")
    assert allocations(admin, server_id) == {}
    with pytest.raises(Exception, match="could not be found"):
        db_api.instance_get_by_uuid(modern.api_db, server_id)


def test_a_delete_between_scheduling_and_the_cell_leaves_no_instance_and_no_claim(
        modern, demo, login, monkeypatch):
    """The user deletes the build request while the scheduler is choosing: the
    conductor, about to create the instance, finds the build request gone and
    gives the claim back (upstream's BuildRequestNotFound branch)."""
    real = ComputeTaskManager._schedule_instances

    def schedule_then_delete(self, context, request_spec, filter_properties):
        hosts = real(self, context, request_spec, filter_properties)
        for uuid in request_spec["instance_uuids"]:
            response = demo.request("DELETE", f"{demo.compute}/servers/{uuid}")
            assert response.status_code == 204, response.text
        return hosts

    monkeypatch.setattr(ComputeTaskManager, "_schedule_instances", schedule_then_delete)
    server_id = create(demo, "deleted-while-scheduled")
    admin = login(modern, "admin")
    _wait("the server to be gone", lambda: (show(demo, server_id).status_code == 404, None))
    time.sleep(1)  # let the conductor finish its turn
    assert allocations(admin, server_id) == {}
    with pytest.raises(Exception, match="could not be found"):
        db_api.instance_get_by_uuid(modern.api_db, server_id)
