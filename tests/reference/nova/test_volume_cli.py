"""The unmodified ``openstack`` CLI attaches, detaches and snapshots a volume on ``novalab serve``.

``server add volume`` / ``server remove volume`` on a running server and
``volume snapshot create/list/show/delete``, as a user types them, checked
through what the CLI then shows. It reuses ``tests/labs/test_openstack_cli.py``'s
cloud (``novalab serve`` on the standard ports: run it in a network namespace of
its own, ``unshare -rn bash -c 'ip link set lo up; ...'``).
"""

from __future__ import annotations

import time

import pytest
from labs.test_openstack_cli import cloud_env, openstack, table  # noqa: F401

from tests.reference.nova.test_shelve_cli import wait_server

pytestmark = pytest.mark.e2e  # `novalab serve` and the `openstack` CLI

TIMEOUT = 90  # seconds: bounds each wait, which fails saying what it saw


def wait_volume(env, name: str, status: str) -> dict:
    deadline = time.monotonic() + TIMEOUT
    while True:
        shown = table(env, "volume", "show", name)
        if shown["status"] == status or shown["status"].startswith("error"):
            assert shown["status"] == status, shown
            return shown
        assert time.monotonic() < deadline, f"volume {name} stayed {shown['status']}"
        time.sleep(0.3)


def wait_snapshot(env, name: str, status: str) -> dict:
    deadline = time.monotonic() + TIMEOUT
    while True:
        shown = table(env, "volume", "snapshot", "show", name)
        if shown["status"] in (status, "error"):
            assert shown["status"] == status, shown
            return shown
        assert time.monotonic() < deadline, f"snapshot {name} stayed {shown['status']}"
        time.sleep(0.3)


def test_volume_attach_detach_and_snapshots_with_the_cli(cloud_env):  # noqa: F811
    env = cloud_env
    table(env, "server", "create", "--flavor", "m1.nano", "--image", "cirros",
          "--network", "private", "--wait", "cli-vol-server")
    table(env, "volume", "create", "--size", "1", "cli-data")
    wait_volume(env, "cli-data", "available")

    openstack(env, "server", "add", "volume", "cli-vol-server", "cli-data")
    volume = wait_volume(env, "cli-data", "in-use")
    server_id = table(env, "server", "show", "cli-vol-server")["id"]
    (attachment,) = volume["attachments"]
    assert (attachment["server_id"], attachment["device"]) == (server_id, "/dev/vdb")
    # The server's side, as `server volume list` (2.1's os-volume_attachments) shows it.
    listed = table(env, "server", "volume", "list", "cli-vol-server")
    assert [(v["Device"], v["Volume ID"]) for v in listed] == [("/dev/vdb", volume["id"])]

    table(env, "volume", "snapshot", "create", "--volume", "cli-data", "--force", "cli-snap")
    snapshot = wait_snapshot(env, "cli-snap", "available")
    assert (snapshot["volume_id"], snapshot["size"]) == (volume["id"], 1)
    assert [s["Name"] for s in table(env, "volume", "snapshot", "list")] == ["cli-snap"]

    openstack(env, "server", "remove", "volume", "cli-vol-server", "cli-data")
    assert wait_volume(env, "cli-data", "available")["attachments"] == []
    assert table(env, "server", "volume", "list", "cli-vol-server") == []
    refused = openstack(env, "volume", "delete", "cli-data", expect_ok=False)
    assert refused.returncode != 0 and "snapshots" in refused.stderr

    actions = {a["Action"] for a in table(env, "server", "event", "list", "cli-vol-server")}
    assert {"attach_volume", "detach_volume"} <= actions
    wait_server(env, "cli-vol-server", "ACTIVE")

    openstack(env, "volume", "snapshot", "delete", "cli-snap")
    deadline = time.monotonic() + TIMEOUT
    while table(env, "volume", "snapshot", "list"):
        assert time.monotonic() < deadline, "the snapshot was not deleted"
        time.sleep(0.3)
    openstack(env, "volume", "delete", "cli-data")
    openstack(env, "server", "delete", "--wait", "cli-vol-server")
