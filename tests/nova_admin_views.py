"""What the admin-view tests (tests/reference/nova/api/test_hypervisors.py, test_services.py,
test_availability_zone.py, test_simple_tenant_usage.py) share: a cloud of two compute
hosts (no Neutron), its users, and booting a server on it."""

from __future__ import annotations

import time

import pytest
from conftest import Session, make_cloud


def at(version: str) -> dict:
    return {"OpenStack-API-Version": f"compute {version}"}


def two_host_cloud(tmp_path_factory):
    """A started cloud with compute-1 and compute-2; stop it with ``.stop()``."""
    cloud = make_cloud(tmp_path_factory.mktemp("admin-views"), computes=2, network=False)
    return cloud.start()


def sessions(cloud) -> dict[str, Session]:
    return {"admin": Session(cloud, "admin", "admin"), "demo": Session(cloud, "demo", "demo")}


@pytest.fixture(scope="module")
def cloud(tmp_path_factory):
    """Each test module's own two-host cloud (import this fixture into the module)."""
    running = two_host_cloud(tmp_path_factory)
    yield running
    running.stop()
    running.telemetry.shutdown()


@pytest.fixture(scope="module")
def users(cloud):
    """``{"admin": Session, "demo": Session}`` on the module's cloud."""
    found = sessions(cloud)
    yield found
    for session in found.values():
        session.close()


def boot(session, cloud, name="vm", **server) -> dict:
    """Boot a server and wait for ACTIVE or ERROR; the server as shown to ``session``."""
    body = {"server": {"name": name, "flavorRef": "42", "imageRef": cloud.cirros["id"],
                       **server}}
    response = session.request("POST", f"{session.compute}/servers", json=body)
    assert response.status_code == 202, response.text
    return wait_status(session, response.json()["server"]["id"])


def wait_status(session, server_id, statuses=("ACTIVE", "ERROR"), timeout=60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        server = session.request("GET", f"{session.compute}/servers/{server_id}",
                                 headers=at("2.61")).json()["server"]
        if server["status"] in statuses:
            return server
        time.sleep(0.05)
    raise AssertionError(f"{server_id} did not reach {statuses}")


def delete(session, server_id, timeout=60) -> None:
    assert session.request("DELETE", f"{session.compute}/servers/{server_id}").status_code \
        == 204
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if session.request("GET", f"{session.compute}/servers/{server_id}").status_code == 404:
            return
        time.sleep(0.05)
    raise AssertionError(f"{server_id} was not deleted")
