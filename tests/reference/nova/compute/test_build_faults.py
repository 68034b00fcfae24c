"""A failing hop during a build: ERROR with a fault naming it, and nothing left behind.

Each test breaks one service the way it can really fail (an exception where that
service does its work) and checks the instance, its fault, and the leftovers:
no port in Neutron, no volume in Cinder.
"""

from __future__ import annotations

import time

import httpx

from novalab.reference.deploy.boot import BootRequest, boot


def leftovers(cloud, server_id, timeout=15.0):
    """Ports and volumes still there for ``server_id``, polled until there are none.

    Cinder deletes asynchronously (the API answers, cinder-volume works later), so
    a volume may still be ``deleting`` when the server shows ERROR: what counts is
    that it goes, within ``timeout``.
    """
    deadline = time.monotonic() + timeout
    while True:
        ports, volumes = _leftovers_now(cloud, server_id)
        if not (ports or volumes) or time.monotonic() > deadline:
            return ports, volumes
        time.sleep(0.1)


def _leftovers_now(cloud, server_id):
    admin_token = httpx.post(f"{cloud.identity_url}/auth/tokens", json={"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": "admin", "domain": {"id": "default"},
            "password": cloud.config.credentials.admin}}},
        "scope": {"project": {"name": "admin", "domain": {"id": "default"}}}}}) \
        .headers["X-Subject-Token"]
    headers = {"X-Auth-Token": admin_token}
    ports = httpx.get(f"{cloud.urls['neutron']}/v2.0/ports", params={"device_id": server_id},
                      headers=headers).json()["ports"]
    project = httpx.get(f"{cloud.identity_url}/auth/tokens", headers={
        **headers, "X-Subject-Token": admin_token}).json()["token"]["project"]["id"]
    volumes = httpx.get(f"{cloud.urls['cinder']}/v3/{project}/volumes/detail",
                        params={"all_tenants": 1}, headers=headers).json()["volumes"]
    return ports, [v for v in volumes if v["status"] not in ("deleted",)]


def test_volume_failure_is_named_and_cleaned_up(cloud, monkeypatch):
    def broken(volume):
        raise RuntimeError("injected: the RBD pool refused the image")

    monkeypatch.setattr(cloud.volume_manager.driver, "create_volume", broken)
    result = boot(cloud, BootRequest(name="no-volume-for-you"))
    server = result.server
    assert server["status"] == "ERROR"
    assert "Failure prepping block device" in server["fault"]["message"]
    ports, volumes = leftovers(cloud, server["id"])
    assert ports == []  # the port allocated before the volume failed was released
    assert volumes == []  # the volume in error, marked delete_on_termination, is gone


def test_port_failure_is_named_and_cleaned_up(cloud, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("injected: IPAM has no address left")

    monkeypatch.setattr(cloud.network, "_create_port_db", broken)
    result = boot(cloud, BootRequest(name="no-port-for-you"))
    server = result.server
    assert server["status"] == "ERROR"
    assert "Failed to allocate the network(s)" in server["fault"]["message"]
    ports, volumes = leftovers(cloud, server["id"])
    assert ports == []
    assert volumes == []  # the volume step never ran: nothing was created


def test_a_failure_recorded_through_a_database_restart_still_ends_error(cloud, monkeypatch):
    """The build fails, and so do the first writes of its fault (the database is
    restarting): the writes are retried, and the server ends ERROR, not BUILD."""
    from novalab.reference.common.exception import RemoteError

    def broken(volume):
        raise RuntimeError("injected: the RBD pool refused the image")

    monkeypatch.setattr(cloud.volume_manager.driver, "create_volume", broken)
    (compute,) = cloud.computes
    record = compute.conductor_api.instance_fault_create
    refused = []

    def restarting(*args, **kwargs):
        if len(refused) < 2:
            refused.append(1)
            raise RemoteError(exc_type="OperationalError",
                              value="server closed the connection unexpectedly")
        return record(*args, **kwargs)

    monkeypatch.setattr(compute.conductor_api, "instance_fault_create", restarting)
    server = boot(cloud, BootRequest(name="fails-while-db-restarts")).server
    assert server["status"] == "ERROR"
    assert "Failure prepping block device" in server["fault"]["message"]
    assert len(refused) == 2
