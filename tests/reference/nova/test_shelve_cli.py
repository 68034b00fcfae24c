"""The unmodified ``openstack`` CLI shelves, unshelves and snapshots a server on ``novalab serve``.

It reuses ``tests/labs/test_openstack_cli.py``'s cloud (``novalab serve`` on the
standard ports: run it in a network namespace of its own, see that module) and
its helpers; each command runs as a user types it.
"""

from __future__ import annotations

import time

import pytest
from labs.test_openstack_cli import cloud_env, novalab, openstack, table  # noqa: F401

pytestmark = pytest.mark.e2e  # `novalab serve` and the `openstack` CLI

TIMEOUT = 90  # seconds: bounds each wait, which fails saying what it saw


def wait_server(env, name: str, status: str) -> dict:
    """Poll ``server show`` until ``status`` with no task (or ERROR)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        shown = table(env, "server", "show", name)
        seen = (shown["status"], shown["OS-EXT-STS:task_state"])
        if seen == (status, None) or shown["status"] == "ERROR":
            assert shown["status"] == status, shown.get("fault")
            return shown
        assert time.monotonic() < deadline, f"{name} stayed {seen}, not {status}"
        time.sleep(0.3)


def test_shelve_unshelve_and_image_create_with_the_cli(cloud_env):  # noqa: F811
    env = cloud_env
    created = table(env, "server", "create", "--flavor", "m1.nano", "--image", "cirros",
                    "--network", "private", "--wait", "cli-shelf")
    address = created["addresses"]

    snapshot = table(env, "server", "image", "create", "--name", "cli-snap", "cli-shelf")
    assert snapshot["name"] == "cli-snap"
    wait_server(env, "cli-shelf", "ACTIVE")  # the snapshot's task is over
    image = table(env, "image", "show", "cli-snap")
    assert (image["status"], image["properties"]["image_type"]) == ("active", "snapshot")

    openstack(env, "server", "shelve", "cli-shelf")
    offloaded = wait_server(env, "cli-shelf", "SHELVED_OFFLOADED")
    assert offloaded["addresses"] == address  # the port stays, unbound
    assert "cli-shelf-shelved" in {i["Name"] for i in table(env, "image", "list")}

    openstack(env, "server", "unshelve", "cli-shelf")
    unshelved = wait_server(env, "cli-shelf", "ACTIVE")
    assert unshelved["addresses"] == address
    assert {i["Name"] for i in table(env, "image", "list")} == {"cirros", "cli-snap"}

    actions = {a["Action"]: a["Request ID"]
               for a in table(env, "server", "event", "list", "cli-shelf")}
    assert set(actions) == {"create", "createImage", "shelve", "unshelve"}
    # Each request is one trace, found by the request id the CLI got back.
    deadline = time.monotonic() + 30
    while "ComputeManager._shelve_offload_instance" not in (shown := novalab(
            env, "trace", "show", "--request-id", actions["shelve"]).stdout):
        assert time.monotonic() < deadline, shown[-2000:]
        time.sleep(0.5)
    openstack(env, "server", "delete", "--wait", "cli-shelf")
    openstack(env, "image", "delete", "cli-snap")
