"""Deleting a server while it builds: the build stops, the server goes, nothing stays.

The build that waits longest is one whose ``network-vif-plugged`` never comes:
upstream waits ``vif_plugging_timeout`` (300 s) for it. A delete that arrives
during that wait must not wait it out while the server sits in ``deleting``
holding its port and volume.
"""

from __future__ import annotations

import time

from novalab.reference.common.faults import Faults
from novalab.reference.deploy.boot import BootRequest, server_extra

from .test_build_faults import leftovers

# Long enough that the test cannot pass by waiting the vif timeout out.
VIF_TIMEOUT = 300.0
GONE_WITHIN = 60.0


def _create(session, cloud, name: str) -> str:
    flavor = session.client.find_flavor("m1.nano")
    image = session.client.find_image("cirros")
    server = session.client.create_server(name, flavor["id"], image["id"],
                                          **server_extra(BootRequest(), image["id"]))
    return server["id"]


def _wait_for(session, server_id: str, predicate, what: str, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    server: dict = {}
    while time.monotonic() < deadline:
        response = session.request("GET", f"{session.compute}/servers/{server_id}")
        server = response.json().get("server", {}) if response.status_code == 200 else {}
        if predicate(response, server):
            return server
        time.sleep(0.05)
    raise AssertionError(f"server {server_id} never {what} within {timeout:.0f} s; last seen "
                         f"{server.get('status')}/{server.get('OS-EXT-STS:task_state')}")


def test_a_delete_stops_a_build_waiting_for_vif_plugged(cloud_factory, login):
    cloud = cloud_factory(vif_plugging_timeout=VIF_TIMEOUT)
    Faults(cloud.config.state_dir).inject("vif-plugged-timeout")
    session = login(cloud)
    server_id = _create(session, cloud, "deleted-while-waiting")
    _wait_for(session, server_id,
              lambda r, s: s.get("OS-EXT-STS:task_state") == "spawning", "reached spawning",
              30.0)
    time.sleep(0.5)  # well into the wait for network-vif-plugged
    assert session.request("DELETE", f"{session.compute}/servers/{server_id}") \
        .status_code == 204
    _wait_for(session, server_id, lambda r, s: r.status_code == 404,
              f"was gone (the vif timeout is {VIF_TIMEOUT:.0f} s)", GONE_WITHIN)
    ports, volumes = leftovers(cloud, server_id)
    assert ports == []
    assert volumes == []


def test_a_delete_during_block_device_mapping_frees_port_and_volume(cloud_factory, login,
                                                                    monkeypatch):
    """A delete that lands while Cinder creates the volume: the build stops at its next save."""
    cloud = cloud_factory(vif_plugging_timeout=VIF_TIMEOUT)
    session = login(cloud)
    driver = cloud.volume_manager.driver
    real_create = driver.create_volume
    creating = []

    def slow_create(volume):
        creating.append(volume)
        time.sleep(1.0)  # the user's delete arrives now
        return real_create(volume)

    monkeypatch.setattr(driver, "create_volume", slow_create)
    server_id = _create(session, cloud, "deleted-while-mapping")
    _wait_for(session, server_id, lambda r, s: bool(creating), "started its volume", 30.0)
    assert session.request("DELETE", f"{session.compute}/servers/{server_id}") \
        .status_code == 204
    _wait_for(session, server_id, lambda r, s: r.status_code == 404, "was gone", GONE_WITHIN)
    ports, volumes = leftovers(cloud, server_id)
    assert ports == []
    assert volumes == []
