"""Stop, start, reboot, pause, suspend, lock and console output on an embedded cloud.

Real HTTP against one cloud for the module. Each power action is walked through
its states as a client sees them (status, power_state, task_state back to None),
each is an instance action whose compute event succeeded; the API's 409s (wrong
state, locked) and 403s (policy) leave the server as it was; the console output
is what the guest stand-in wrote to the serial log libvirt keeps, cut to
``length`` lines.
"""

from __future__ import annotations

import time

import pytest

from novalab.reference.nova.compute import power_state
from novalab.tracing import attributes as attr
from tests.reference.nova.test_shelve import (
    act,
    boot,
    events,
    saved_states,
    show,
    trace_of,
    wait_server,
)

NOVA_2_9 = {"OpenStack-API-Version": "compute 2.9"}  # shows "locked"


@pytest.fixture(scope="module", params=["classic", "modern"])
def shared_cloud(request, tmp_path_factory):
    """Both topologies: in the modern one the instance lives in cell1's database."""
    from tests.conftest import make_cloud

    with make_cloud(tmp_path_factory.mktemp(request.param),
                    topology=request.param) as running:
        yield running
    running.telemetry.shutdown()


def power(server) -> int:
    return server["OS-EXT-STS:power_state"]


def accepted(session, server_id, body) -> None:
    response = act(session, server_id, body)
    assert response.status_code == 202, response.text
    assert response.text == ""


def test_each_power_action_walks_its_states(shared_cloud, login):
    demo = login(shared_cloud)
    server_id = boot(demo, shared_cloud, "walker")["id"]
    walk = [
        ({"os-stop": None}, "SHUTOFF", "stopped", power_state.SHUTDOWN),
        ({"os-start": None}, "ACTIVE", "active", power_state.RUNNING),
        ({"reboot": {"type": "SOFT"}}, "ACTIVE", "active", power_state.RUNNING),
        ({"reboot": {"type": "hard"}}, "ACTIVE", "active", power_state.RUNNING),
        ({"pause": None}, "PAUSED", "paused", power_state.PAUSED),
        ({"unpause": None}, "ACTIVE", "active", power_state.RUNNING),
        # libvirt's managed save leaves the domain SHUTOFF: power_state Shutdown.
        ({"suspend": None}, "SUSPENDED", "suspended", power_state.SHUTDOWN),
        ({"resume": None}, "ACTIVE", "active", power_state.RUNNING),
    ]
    for body, status, vm_state, expected_power in walk:
        accepted(demo, server_id, body)
        server = wait_server(demo, server_id, status)
        assert server["OS-EXT-STS:vm_state"] == vm_state, body
        assert power(server) == expected_power, body
    seen = events(login(shared_cloud, "admin"), server_id)  # events: admins at 2.1
    for action in ("stop", "start", "pause", "unpause", "suspend", "resume"):
        assert seen[action] == [(f"compute_{action}_instance", "Success")], seen
    # Two reboots: the listing keys by action name, so the last one is shown.
    assert seen["reboot"] == [("compute_reboot_instance", "Success")]
    actions = demo.request("GET", f"{demo.compute}/servers/{server_id}/os-instance-actions")
    names = [a["action"] for a in actions.json()["instanceActions"]]
    assert names.count("reboot") == 2
    # What libvirt itself says, not only what the database does.
    driver = shared_cloud.computes[0].driver
    assert driver.get_info({"uuid": server_id}).state == power_state.RUNNING
    accepted(demo, server_id, {"pause": None})
    wait_server(demo, server_id, "PAUSED")
    assert driver.get_info({"uuid": server_id}).state == power_state.PAUSED


def test_a_suspended_server_can_be_deleted(shared_cloud, login):
    """libvirt refuses to undefine a domain with a managed-save image: the delete
    removes the saved memory first."""
    demo = login(shared_cloud)
    server_id = boot(demo, shared_cloud, "sleeper")["id"]
    accepted(demo, server_id, {"suspend": None})
    wait_server(demo, server_id, "SUSPENDED")
    driver = shared_cloud.computes[0].driver
    assert driver.instance_exists({"uuid": server_id})
    assert demo.request("DELETE", f"{demo.compute}/servers/{server_id}").status_code == 204
    deadline = time.monotonic() + 60
    while show_status(demo, server_id) != 404:
        assert time.monotonic() < deadline, show(demo, server_id)
        time.sleep(0.1)
    assert not driver.instance_exists({"uuid": server_id})


def show_status(session, server_id) -> int:
    return session.request("GET", f"{session.compute}/servers/{server_id}").status_code


def test_one_request_one_trace_from_the_api_to_libvirt(shared_cloud, login):
    """A HARD reboot's trace: nova-api's check and cast, the host's method, the
    driver's libvirt calls, and the task states the host saved, in order."""
    demo = login(shared_cloud)
    server_id = boot(demo, shared_cloud, "traced")["id"]
    response = act(demo, server_id, {"reboot": {"type": "HARD"}})
    assert response.status_code == 202
    wait_server(demo, server_id, "ACTIVE")
    spans = trace_of(shared_cloud, response.headers["X-OpenStack-Request-ID"],
                     {"API.reboot", "API._hard_reboot", "ComputeManager.reboot_instance",
                      "LibvirtDriver.reboot", "LibvirtDriver._hard_reboot",
                      "libvirt.destroy", "libvirt.createWithFlags"})
    assert saved_states(spans) == [("active", "reboot_pending_hard"),
                                   ("active", "reboot_started_hard"), ("active", None)]
    (manager,) = [s for s in spans if s.name == "ComputeManager.reboot_instance"]
    assert manager.attributes[attr.NOVA_INSTANCE_ACTION_EVENT] == "compute_reboot_instance"


@pytest.fixture(scope="module")
def stopped_server(shared_cloud):
    from tests.conftest import Session

    session = Session(shared_cloud, "demo", "demo")
    try:
        server_id = boot(session, shared_cloud, "resting")["id"]
        accepted(session, server_id, {"os-stop": None})
        wait_server(session, server_id, "SHUTOFF")
        yield server_id
    finally:
        session.close()


@pytest.mark.parametrize("body, name", [
    ({"os-stop": None}, "stop"),
    ({"pause": None}, "pause"),
    ({"suspend": None}, "suspend"),
    ({"unpause": None}, "unpause"),
    ({"resume": None}, "resume"),
    ({"reboot": {"type": "SOFT"}}, "reboot"),
])
def test_a_stopped_server_refuses_with_409(shared_cloud, login, stopped_server, body, name):
    demo = login(shared_cloud)
    response = act(demo, stopped_server, body)
    assert response.status_code == 409, response.text
    assert response.json()["conflictingRequest"]["message"] == (
        f"Cannot '{name}' instance {stopped_server} while it is in vm_state stopped")
    assert show(demo, stopped_server)["status"] == "SHUTOFF"


def test_start_of_an_active_server_is_409(shared_cloud, login):
    demo = login(shared_cloud)
    server_id = boot(demo, shared_cloud, "awake")["id"]
    response = act(demo, server_id, {"os-start": None})
    assert response.status_code == 409
    assert "vm_state active" in response.json()["conflictingRequest"]["message"]
    # A HARD reboot starts a stopped server (upstream's ALLOW_HARD_REBOOT).
    accepted(demo, server_id, {"os-stop": None})
    wait_server(demo, server_id, "SHUTOFF")
    accepted(demo, server_id, {"reboot": {"type": "HARD"}})
    assert power(wait_server(demo, server_id, "ACTIVE")) == power_state.RUNNING


@pytest.mark.parametrize("persona, body, status", [
    ("reader", {"os-stop": None}, 403),
    ("reader", {"reboot": {"type": "SOFT"}}, 403),
    ("reader", {"pause": None}, 403),
    ("reader", {"suspend": None}, 403),
    ("reader", {"lock": None}, 403),
    ("reader", {"os-getConsoleOutput": {}}, 403),
    ("alt_demo", {"os-stop": None}, 404),
    ("alt_demo", {"lock": None}, 404),
    ("alt_demo", {"os-getConsoleOutput": {}}, 404),
])
def test_policy(shared_cloud, login, stopped_server, persona, body, status):
    session = login(shared_cloud, persona, "demo" if persona == "reader" else None)
    response = act(session, stopped_server, body)
    assert response.status_code == status, response.text
    (fault,) = response.json().values()
    assert fault["code"] == status
    server = show(login(shared_cloud), stopped_server)
    assert server["status"] == "SHUTOFF"
    assert server["OS-EXT-STS:task_state"] is None


def test_lock_refuses_non_admins_and_an_admins_lock_needs_an_admin(shared_cloud, login):
    demo, admin = login(shared_cloud), login(shared_cloud, "admin")
    server_id = boot(demo, shared_cloud, "locked")["id"]
    url = f"{demo.compute}/servers/{server_id}"
    accepted(demo, server_id, {"lock": None})
    assert demo.request("GET", url, headers=NOVA_2_9).json()["server"]["locked"] is True
    refused = act(demo, server_id, {"os-stop": None})
    assert refused.status_code == 409
    assert refused.json()["conflictingRequest"]["message"] == \
        f"Instance {server_id} is locked"
    assert show(demo, server_id)["OS-EXT-STS:task_state"] is None
    # Admins act on a locked server.
    accepted(admin, server_id, {"pause": None})
    wait_server(demo, server_id, "PAUSED")
    accepted(admin, server_id, {"unpause": None})
    wait_server(demo, server_id, "ACTIVE")
    # The owner lifts its own lock.
    accepted(demo, server_id, {"unlock": None})
    assert demo.request("GET", url, headers=NOVA_2_9).json()["server"]["locked"] is False
    # An admin's lock: the owner may not lift it (unlock_override), an admin may.
    accepted(admin, server_id, {"lock": None})
    assert act(demo, server_id, {"unlock": None}).status_code == 403
    assert act(demo, server_id, {"reboot": {"type": "HARD"}}).status_code == 409
    accepted(admin, server_id, {"unlock": None})
    accepted(demo, server_id, {"os-stop": None})
    wait_server(demo, server_id, "SHUTOFF")
    seen = events(admin, server_id)
    assert seen["lock"] == [("api_lock", "Success")]
    assert seen["unlock"] == [("api_unlock", "Success")]


def test_a_locked_server_refuses_every_guarded_action_to_non_admins(shared_cloud, login):
    """Upstream's ``@check_instance_lock`` guards delete, shelve, shelve_offload,
    unshelve and volume attach/detach as it guards the power actions."""
    from tests.reference.nova.api.test_volume_attachments import (
        attachments_url,
        create_volume,
        wait_volume,
    )

    demo, admin = login(shared_cloud), login(shared_cloud, "admin")
    server_id = boot(demo, shared_cloud, "guarded")["id"]
    attached, volume_id = create_volume(demo, "attached"), create_volume(demo, "guarded")
    response = demo.request("POST", attachments_url(demo, server_id),
                            json={"volumeAttachment": {"volumeId": attached}})
    assert response.status_code == 200, response.text
    wait_volume(demo, attached, "in-use")
    accepted(demo, server_id, {"lock": None})
    locked = f"Instance {server_id} is locked"
    attempts = [
        ("DELETE", f"{demo.compute}/servers/{server_id}", None),
        ("POST", f"{demo.compute}/servers/{server_id}/action", {"shelve": None}),
        ("POST", f"{demo.compute}/servers/{server_id}/action", {"unshelve": None}),
        ("POST", attachments_url(demo, server_id), {"volumeAttachment": {"volumeId": volume_id}}),
        ("DELETE", f"{attachments_url(demo, server_id)}/{attached}", None),
    ]
    for method, url, body in attempts:
        response = demo.request(method, url, json=body) if body is not None \
            else demo.request(method, url)
        assert response.status_code == 409, (method, url, response.text)
        assert response.json()["conflictingRequest"]["message"] == locked, (method, url)
    assert show(demo, server_id)["status"] == "ACTIVE"
    # An admin is not held back by the lock.
    response = admin.request("POST", f"{admin.compute}/servers/{server_id}/action",
                             json={"shelve": None})
    assert response.status_code == 202, response.text
    wait_server(demo, server_id, "SHELVED_OFFLOADED")
    response = admin.request("DELETE", f"{admin.compute}/servers/{server_id}")
    assert response.status_code == 204, response.text


def console(session, server_id, length="absent"):
    body = {} if length == "absent" else {"length": length}
    return act(session, server_id, {"os-getConsoleOutput": body})


def test_console_output_is_the_guests_serial_log(shared_cloud, login):
    demo = login(shared_cloud)
    server_id = boot(demo, shared_cloud, "talker")["id"]
    assert shared_cloud.guests.wait()
    response = console(demo, server_id)
    assert response.status_code == 200, response.text
    output = response.json()["output"]
    lines = output.split("\n")
    assert lines[0].startswith("Cloud-init v. ") and "running 'init'" in lines[0]
    port = demo.request("GET", demo.client.endpoint("network") +
                        f"/v2.0/ports?device_id={server_id}").json()["ports"][0]
    assert f"| {port['fixed_ips'][0]['ip_address']} | {port['mac_address']} |" in output
    assert "finished at" in lines[-2]  # the log ends with the last line's newline
    # No control characters reach the client (the \r of each serial line goes).
    assert "\r" not in output
    # The file the domain XML names, read back: the same lines.
    path = shared_cloud.computes[0].driver._get_instance_path({"uuid": server_id})
    with open(f"{path}/console.log", encoding="utf-8") as log:
        assert log.read().replace("\r", "") == output
    # Upstream's _tail_log splits on "\n": the log's final newline leaves an empty
    # last "line", so length 2 is the last line written and its newline.
    assert lines[-1] == ""
    assert console(demo, server_id, 1).json()["output"] == ""
    assert console(demo, server_id, 3).json()["output"] == "\n".join(lines[-3:])
    assert "finished at" in console(demo, server_id, 3).json()["output"]
    assert "running 'init'" not in console(demo, server_id, 3).json()["output"]
    assert console(demo, server_id, "2").json()["output"] == "\n".join(lines[-2:])
    assert console(demo, server_id, -1).json()["output"] == output
    assert console(demo, server_id, None).json()["output"] == output
    assert console(demo, server_id, 0).json()["output"] == ""
    for bad in (-2, "x", 1.5):
        assert console(demo, server_id, bad).status_code == 400, bad


@pytest.mark.parametrize("body", [
    {"resize": {"flavorRef": "1"}},
    {"rebuild": {"imageRef": "x"}},
])
def test_left_out_actions_are_honest_400s(shared_cloud, login, body):
    response = act(login(shared_cloud), "00000000-0000-0000-0000-000000000000", body)
    assert response.status_code == 400
    message = response.json()["badRequest"]["message"]
    assert f"There is no such action: {next(iter(body))}." in message
    assert "Left out, on purpose" in message
