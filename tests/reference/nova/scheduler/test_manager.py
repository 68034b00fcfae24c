"""The scheduler service: a host's last slot goes to one request, however they race."""

from __future__ import annotations

import threading
import time


def boot(session, cloud, name: str, flavor: str) -> str:
    body = {"server": {"name": name, "flavorRef": flavor, "imageRef": cloud.cirros["id"]}}
    response = session.request("POST", f"{session.compute}/servers", json=body)
    assert response.status_code == 202, response.text
    return response.json()["server"]["id"]


def final(session, server_id: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        server = session.request("GET", f"{session.compute}/servers/{server_id}").json()["server"]
        if server["status"] in ("ACTIVE", "ERROR"):
            return server
        time.sleep(0.05)
    raise AssertionError(f"{server_id} is still building")


def test_racing_requests_cannot_both_take_the_last_slot(cloud, login, monkeypatch):
    """Three m1.small where two fit: the selections overlap, the claims must not.

    Each selection is held open for a while after it read the hosts' usage, so
    without a claim all three requests would see room for themselves.
    """
    driver = cloud.scheduler.driver
    select = driver.select_destinations
    selecting = []

    def slow_select(context, spec):
        selecting.append(threading.current_thread().name)
        destinations = select(context, spec)
        time.sleep(0.3)  # the usage just read goes stale while the others select
        return destinations

    monkeypatch.setattr(driver, "select_destinations", slow_select)
    session = login(cloud)
    # The test hypervisor has 3 GiB; with the 1.5 RAM ratio only two m1.small fit.
    ids = [boot(session, cloud, f"race{i}", "2") for i in range(3)]
    servers = [final(session, server_id) for server_id in ids]
    assert len(selecting) == 3
    assert sorted(s["status"] for s in servers) == ["ACTIVE", "ACTIVE", "ERROR"]
    (loser,) = [s for s in servers if s["status"] == "ERROR"]
    assert "No valid host" in loser["fault"]["message"]


def test_a_server_deleted_while_it_is_scheduled_is_simply_not_built(cloud, login, monkeypatch):
    """Not yet on a host, a delete removes the row at once (``_local_delete``); the
    scheduler that chose a host for it meanwhile finds it gone and builds nothing."""
    from opentelemetry.trace import StatusCode

    driver = cloud.scheduler.driver
    select = driver.select_destinations
    selected = threading.Event()
    deleted = threading.Event()

    def select_then_wait(context, spec):
        destinations = select(context, spec)
        selected.set()
        deleted.wait(10)  # the user deletes the server now
        return destinations

    monkeypatch.setattr(driver, "select_destinations", select_then_wait)
    session = login(cloud)
    server_id = boot(session, cloud, "gone-before-its-host", "42")
    assert selected.wait(10)
    assert session.request("DELETE", f"{session.compute}/servers/{server_id}") \
        .status_code == 204
    deleted.set()
    scheduled = []
    for _ in range(200):  # until the scheduler's run_instance has returned
        cloud.telemetry.force_flush()
        scheduled = [s for s in cloud.telemetry.finished_spans()
                     if s.name == "process scheduler"]
        if scheduled:
            break
        time.sleep(0.05)
    assert scheduled, "the scheduler never finished run_instance"
    assert [s.status.description for s in scheduled
            if s.status.status_code == StatusCode.ERROR] == []
    assert session.request("GET", f"{session.compute}/servers/{server_id}") \
        .status_code == 404
