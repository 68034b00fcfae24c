"""The unmodified ``openstack`` CLI and openstacksdk against ``novalab serve``.

One cloud per module, started as users start it; every command runs as a user
types it, in a subprocess, with the ``OS_*`` variables ``serve`` printed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import private_services
import pytest

pytestmark = pytest.mark.e2e  # `novalab serve` and the `openstack` CLI

OPENSTACK = str(Path(sys.executable).with_name("openstack"))


@pytest.fixture(scope="module")
def cloud_env(tmp_path_factory):
    if not Path(OPENSTACK).exists() and not shutil.which("openstack"):
        pytest.skip("python-openstackclient is not installed (it is a test dependency)")
    with private_services.own_standard_ports("novalab serve"):
        state = tmp_path_factory.mktemp("serve")
        proc = subprocess.Popen([sys.executable, "-m", "novalab.labs.cli", "serve",
                                 "--state-dir", str(state)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env=dict(os.environ, PYTHONUNBUFFERED="1"))
        env = dict(os.environ, NOVALAB_STATE_DIR=str(state))  # as `novalab lab env` sets it
        deadline = time.monotonic() + 90
        while "OS_REGION_NAME" not in env or env.get("OS_AUTH_URL") is None:
            line = proc.stdout.readline()
            if not line and proc.poll() is not None:
                pytest.fail(f"novalab serve exited: {proc.stderr.read()}")
            if line.startswith("export "):
                key, _, value = line[len("export "):].strip().partition("=")
                env[key] = value
            assert time.monotonic() < deadline, "novalab serve did not print its variables"
        yield env
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)


def password_of(env: dict, user: str) -> str:
    """``user``'s password on the cloud of ``env``: the personas' documented one, the
    admin's and services' the deployment's own, read from its state dir as its owner
    would (`novalab credentials show USER`)."""
    from novalab.reference.common.credentials import Credentials

    return Credentials.of(env["NOVALAB_STATE_DIR"]).password_for(user)


def as_admin(env: dict) -> dict:
    """The admin's variables for the same cloud."""
    return dict(env, OS_USERNAME="admin", OS_PROJECT_NAME="admin",
                OS_PASSWORD=password_of(env, "admin"))


def openstack(env, *args, expect_ok=True):
    result = subprocess.run([OPENSTACK, *args], env=env, capture_output=True, text=True,
                            timeout=180)
    if expect_ok:
        assert result.returncode == 0, f"openstack {' '.join(args)}:\n{result.stderr}"
    return result


def table(env, *args):
    return json.loads(openstack(env, *args, "-f", "json").stdout)


def test_flavor_and_image_list(cloud_env):
    flavors = {f["Name"]: f for f in table(cloud_env, "flavor", "list")}
    assert set(flavors) == {"m1.nano", "m1.tiny", "m1.small"}
    assert flavors["m1.nano"]["RAM"] == 64
    images = table(cloud_env, "image", "list")
    assert [i["Name"] for i in images] == ["cirros"]


def test_network_list(cloud_env):
    networks = table(cloud_env, "network", "list")
    assert [n["Name"] for n in networks] == ["private"]


def test_server_lifecycle(cloud_env):
    created = table(cloud_env, "server", "create", "--flavor", "m1.nano", "--image", "cirros",
                    "--network", "private", "--wait", "cli-vm")
    assert created["status"] == "ACTIVE"
    assert "10.0.0." in str(created["addresses"])
    listed = {s["Name"]: s for s in table(cloud_env, "server", "list")}
    assert listed["cli-vm"]["Status"] == "ACTIVE"
    shown = table(cloud_env, "server", "show", "cli-vm")
    assert shown["OS-EXT-STS:vm_state"] == "active"
    openstack(cloud_env, "server", "delete", "--wait", "cli-vm")
    assert "cli-vm" not in {s["Name"] for s in table(cloud_env, "server", "list")}


def test_server_event_list_and_show(cloud_env):
    """The boot's story by its request id: nova-api's create action, the host's build."""
    created = table(cloud_env, "server", "create", "--flavor", "m1.nano", "--image", "cirros",
                    "--network", "private", "--wait", "event-vm")
    assert created["status"] == "ACTIVE"
    (action,) = table(cloud_env, "server", "event", "list", "event-vm")
    assert (action["Action"], action["Server ID"]) == ("create", created["id"])
    request_id = action["Request ID"]
    assert re.fullmatch(r"req-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", request_id)
    shown = table(cloud_env, "server", "event", "show", "event-vm", request_id)
    assert (shown["action"], shown["request_id"], shown["message"]) == \
        ("create", request_id, None)
    # Finished before the server was saved ACTIVE, so --wait has seen it done.
    assert [(e["event"], e["result"]) for e in shown["events"]] == \
        [("compute__do_build_and_run_instance", "Success")]
    assert shown["events"][0]["finish_time"] >= shown["events"][0]["start_time"]
    missing = openstack(cloud_env, "server", "event", "show", "event-vm",
                        "req-00000000-0000-0000-0000-000000000000", expect_ok=False)
    assert missing.returncode != 0
    assert "Action req-00000000-0000-0000-0000-000000000000 not found" in missing.stderr
    openstack(cloud_env, "server", "delete", "--wait", "event-vm")


NOVALAB = [sys.executable, "-m", "novalab.labs.cli"]


def novalab(env, *args):
    """A novalab command as the user types it: no file, no --state-dir (the store of
    the running `serve` is found by itself)."""
    result = subprocess.run([*NOVALAB, *args], env=env, capture_output=True, text=True,
                            timeout=180)
    assert result.returncode == 0, f"novalab {' '.join(args)}:\n{result.stdout[-3000:]}\n" \
                                   f"{result.stderr}"
    return result


def test_the_trace_of_each_cli_boot_is_found_checked_and_drawn(cloud_env, tmp_path):
    """Two boots with the CLI, one with a volume: each is found by the server's name and by
    its create's request id, checks clean on every step it implies, and draws."""
    plain = table(cloud_env, "server", "create", "--flavor", "m1.nano", "--image", "cirros",
                  "--network", "private", "--wait", "mine-1")
    volume = table(cloud_env, "server", "create", "--flavor", "m1.nano", "--image", "cirros",
                   "--network", "private", "--block-device",
                   "source_type=blank,destination_type=volume,volume_size=1,"
                   "delete_on_termination=true", "--wait", "mine-2")
    for server in (plain, volume):
        assert server["status"] == "ACTIVE"
        (row,) = json.loads(novalab(cloud_env, "trace", "list", "--server", server["name"],
                                    "--json").stdout)
        assert row["kind"] == "boot" and row["stitched"] and row["status"] == "ACTIVE"
        assert row["servers"] == [{"id": server["id"], "name": server["name"]}]
        matched, expected = map(int, row["steps"].split("/"))
        assert matched == expected >= 43
        check = novalab(cloud_env, "flow", "check", "--server", server["name"])
        assert "MISSING" not in check.stdout and ", 0 out of order" in check.stdout
        drawn = tmp_path / f"{server['name']}.svg"
        novalab(cloud_env, "diagram", "--server", server["name"], "-o", str(drawn))
        assert drawn.read_text().lstrip().startswith("<svg")
        # The operator's view names the same boot: the create action's request id.
        (action,) = table(cloud_env, "server", "event", "list", server["name"])
        assert action["Action"] == "create" and action["Request ID"] in row["request_ids"]
        assert row["create_request_id"] == action["Request ID"]
        (by_request,) = json.loads(novalab(cloud_env, "trace", "list", "--request-id",
                                           action["Request ID"], "--json",
                                           "--no-steps").stdout)
        assert by_request["trace_id"] == row["trace_id"]
        shown = novalab(cloud_env, "trace", "show", "--request-id", action["Request ID"])
        assert shown.stdout.startswith(f"trace {row['trace_id']}:")
    # The volume was implied, and Cinder's steps found, only for the boot that asked.
    reports = {name: json.loads(novalab(cloud_env, "flow", "check", "--server", name,
                                        "--format", "json").stdout)
               for name in ("mine-1", "mine-2")}
    assert reports["mine-1"]["steps"][38]["status"] == "not_expected"
    assert reports["mine-2"]["steps"][38]["status"] == "matched"
    both = tmp_path / "both.jaeger.json"
    novalab(cloud_env, "export", "jaeger", "--server", "mine-1", "-o", str(both))
    assert len(json.loads(both.read_text())["data"]) == 1
    for name in ("mine-1", "mine-2"):
        openstack(cloud_env, "server", "delete", "--wait", name)


def test_unknown_names_give_clear_errors(cloud_env):
    result = openstack(cloud_env, "server", "show", "no-such-server", expect_ok=False)
    assert result.returncode != 0
    assert "No Server found for no-such-server" in result.stderr
    result = openstack(cloud_env, "server", "create", "--flavor", "m1.huge", "--image",
                       "cirros", "x", expect_ok=False)
    assert result.returncode != 0 and "m1.huge" in result.stderr


def _ports_of(env, server_id):
    return [p for p in table(env, "port", "list", "--long")
            if p.get("Device ID", p.get("device_id")) == server_id]


def test_volumes_and_boot_from_volume(cloud_env):
    volume = table(cloud_env, "volume", "create", "--size", "1", "--image", "cirros", "boot-vol")
    assert volume["size"] == 1
    deadline = time.monotonic() + 60
    while table(cloud_env, "volume", "show", "boot-vol")["status"] != "available":
        assert time.monotonic() < deadline, "the volume did not become available"
        time.sleep(0.2)
    by_volume = table(cloud_env, "server", "create", "--flavor", "m1.nano", "--volume",
                      "boot-vol", "--network", "private", "--wait", "vol-vm")
    assert by_volume["status"] == "ACTIVE"
    assert table(cloud_env, "volume", "show", "boot-vol")["status"] == "in-use"
    from_image = table(cloud_env, "server", "create", "--flavor", "m1.nano", "--image",
                       "cirros", "--boot-from-volume", "1", "--network", "private", "--wait",
                       "bfv-vm")
    assert from_image["status"] == "ACTIVE"
    # Nova names no volume it makes from an image (as upstream): find it on the server.
    attached = table(cloud_env, "server", "show", "bfv-vm")["volumes_attached"]
    (bfv_volume,) = re.findall(r"[0-9a-f]{8}-[0-9a-f-]{27}", str(attached))
    assert table(cloud_env, "volume", "show", bfv_volume)["status"] == "in-use"

    for name in ("vol-vm", "bfv-vm"):
        server_id = table(cloud_env, "server", "show", name)["id"]
        openstack(cloud_env, "server", "delete", "--wait", name)
        assert _ports_of(cloud_env, server_id) == []  # no leaked port
    # Volumes the user made, or asked to keep, outlive the server, detached.
    assert table(cloud_env, "volume", "show", "boot-vol")["status"] == "available"
    assert table(cloud_env, "volume", "show", bfv_volume)["status"] == "available"
    openstack(cloud_env, "volume", "delete", "boot-vol", bfv_volume)


def test_openstacksdk_create_wait_delete(cloud_env):
    script = """
import openstack
conn = openstack.connect()
server = conn.create_server("sdk-vm", image="cirros", flavor="m1.nano", network="private",
                            wait=True, timeout=120)
print(server.status, server.private_v4)
assert conn.delete_server("sdk-vm", wait=True, timeout=120)
print("deleted", conn.get_server("sdk-vm") is None)
"""
    result = subprocess.run([sys.executable, "-c", script], env=cloud_env, capture_output=True,
                            text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    status, address, *rest = result.stdout.split()
    assert status == "ACTIVE" and address.startswith("10.0.0.")
    assert rest == ["deleted", "True"]


def test_an_admin_runs_a_class_with_the_cli(cloud_env):
    """Projects, users and grants as an admin types them; a disabled learner is locked out."""
    admin = as_admin(cloud_env)
    openstack(admin, "project", "create", "--description", "class B", "class-b")
    openstack(admin, "user", "create", "--project", "class-b", "--password", "pw1",
              "--email", "b1@example.org", "learner-b1")
    openstack(admin, "role", "add", "--project", "class-b", "--user", "learner-b1", "member")
    assert {p["Name"] for p in table(admin, "project", "list")} >= {"admin", "demo",
                                                                   "alt_demo", "class-b"}
    assert table(admin, "user", "show", "learner-b1")["email"] == "b1@example.org"
    roles = table(admin, "role", "assignment", "list", "--project", "class-b", "--names")
    assert [r["Role"] for r in roles] == ["member"]

    learner = dict(cloud_env, OS_USERNAME="learner-b1", OS_PROJECT_NAME="class-b",
                   OS_PASSWORD="pw1")
    assert table(learner, "server", "list") == []
    openstack(admin, "user", "set", "--disable", "learner-b1")
    refused = openstack(learner, "server", "list", expect_ok=False)
    assert refused.returncode != 0 and "401" in refused.stderr
    # Members may not manage identity: the CLI reports keystone's 403.
    denied = openstack(cloud_env, "project", "create", "sneaky", expect_ok=False)
    assert denied.returncode != 0 and "403" in denied.stderr
    openstack(admin, "user", "delete", "learner-b1")
    openstack(admin, "project", "delete", "class-b")
