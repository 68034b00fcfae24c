"""The unmodified ``openstack`` CLI stops, starts, reboots, pauses, suspends, locks a server
and shows its console log on ``novalab serve``.

It reuses ``tests/labs/test_openstack_cli.py``'s cloud (``novalab serve`` on the
standard ports: run it in a network namespace of its own) as DevStack's ``demo``
user; each command runs as a user types it, and each check reads the state the
command left (status, power state, lock, the log's lines), not only its exit code.
"""

from __future__ import annotations

import pytest
from labs.test_openstack_cli import cloud_env, openstack, table  # noqa: F401

from novalab.reference.nova.compute.power_state import PAUSED, RUNNING, SHUTDOWN
from tests.reference.nova.test_shelve_cli import wait_server

pytestmark = pytest.mark.e2e  # `novalab serve` and the `openstack` CLI

NAME = "cli-power"


def test_power_lock_and_console_log_with_the_cli(cloud_env):  # noqa: F811
    env = cloud_env
    assert env["OS_USERNAME"] == "demo"  # a member, not an admin: the lock applies
    table(env, "server", "create", "--flavor", "m1.nano", "--image", "cirros",
          "--network", "private", "--wait", NAME)
    # `-f json` gives the power state as the number Nova stores (power_state.py).
    walk = [("stop", "SHUTOFF", SHUTDOWN), ("start", "ACTIVE", RUNNING),
            ("reboot", "ACTIVE", RUNNING), ("pause", "PAUSED", PAUSED),
            ("unpause", "ACTIVE", RUNNING), ("suspend", "SUSPENDED", SHUTDOWN),
            ("resume", "ACTIVE", RUNNING)]
    for command, status, power in walk:
        openstack(env, "server", command, NAME)
        shown = wait_server(env, NAME, status)
        assert shown["OS-EXT-STS:power_state"] == power, (command, shown)
    openstack(env, "server", "reboot", "--hard", NAME)
    wait_server(env, NAME, "ACTIVE")

    events = [e["Action"] for e in table(env, "server", "event", "list", NAME)]
    for command, _status, _power in walk:
        assert command in events, events
    assert events.count("reboot") == 2

    openstack(env, "server", "lock", NAME)
    locked = table(env, "--os-compute-api-version", "2.9", "server", "show", NAME)
    assert locked["locked"] is True
    refused = openstack(env, "server", "stop", NAME, expect_ok=False)
    assert refused.returncode != 0
    assert "is locked" in refused.stderr and "409" in refused.stderr
    assert wait_server(env, NAME, "ACTIVE")["OS-EXT-STS:power_state"] == RUNNING
    openstack(env, "server", "unlock", NAME)
    unlocked = table(env, "--os-compute-api-version", "2.9", "server", "show", NAME)
    assert unlocked["locked"] is False

    log = openstack(env, "console", "log", "show", NAME).stdout
    lines = log.rstrip("\n").split("\n")
    assert lines[0].startswith("Cloud-init v. ") and "running 'init'" in lines[0]
    assert any("finished at" in line for line in lines), log
    address = table(env, "server", "show", NAME)["addresses"]["private"][0]
    assert any(f"| {address} |" in line for line in lines), log
    # As upstream's _tail_log, the log's final newline ends an empty last "line":
    # --lines 3 shows the last two written.
    tail = openstack(env, "console", "log", "show", "--lines", "3", NAME).stdout
    assert tail.rstrip("\n").split("\n") == lines[-2:]

    openstack(env, "server", "delete", "--wait", NAME)
