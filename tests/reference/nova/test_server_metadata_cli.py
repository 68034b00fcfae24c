"""Server metadata with the unmodified ``openstack`` CLI on ``novalab serve`` (issue 12):
``server create --property``, ``server set --property k=v``, ``server unset --property
k`` and the ``properties`` that ``server show`` prints.

It reuses ``tests/labs/test_openstack_cli.py``'s cloud (``novalab serve`` on the
standard ports: run it in a network namespace of its own, e.g.
``unshare -rn bash -c 'ip link set lo up; .venv/bin/python -m pytest THIS_FILE'``)
and its helpers.
"""

from __future__ import annotations

import pytest
from labs.test_openstack_cli import cloud_env, openstack, table  # noqa: F401

pytestmark = pytest.mark.e2e  # `novalab serve` and the `openstack` CLI


def properties(env, server) -> dict:
    return table(env, "server", "show", server)["properties"]


def test_server_properties_with_the_cli(cloud_env):  # noqa: F811
    env = cloud_env
    created = table(env, "server", "create", "--flavor", "m1.nano", "--image", "cirros",
                    "--network", "private", "--property", "role=web", "--wait", "meta-vm1")
    assert created["status"] == "ACTIVE"
    try:
        assert properties(env, "meta-vm1") == {"role": "web"}
        openstack(env, "server", "set", "--property", "tier=front", "--property", "role=db",
                  "meta-vm1")
        assert properties(env, "meta-vm1") == {"role": "db", "tier": "front"}
        listed = {s["Name"]: s for s in table(env, "server", "list", "--long")}
        assert listed["meta-vm1"]["Properties"] == {"role": "db", "tier": "front"}
        openstack(env, "server", "unset", "--property", "tier", "meta-vm1")
        assert properties(env, "meta-vm1") == {"role": "db"}
        # Unsetting a key the server lacks is the API's 404 "Metadata item was not found".
        missing = openstack(env, "server", "unset", "--property", "nope", "meta-vm1",
                            expect_ok=False)
        assert missing.returncode != 0 and "Metadata item was not found" in missing.stderr
        # The metadata_items quota (128): one more item than it allows is a 403.
        many = [arg for i in range(128) for arg in ("--property", f"k{i}=v")]
        over = openstack(env, "server", "set", *many, "meta-vm1", expect_ok=False)
        assert over.returncode != 0
        assert "Maximum number of metadata items exceeds 128" in over.stderr
        assert properties(env, "meta-vm1") == {"role": "db"}
        # A locked server refuses its member (409).
        openstack(env, "server", "lock", "meta-vm1")
        locked = openstack(env, "server", "set", "--property", "x=1", "meta-vm1",
                           expect_ok=False)
        assert locked.returncode != 0 and "is locked" in locked.stderr
        openstack(env, "server", "unlock", "meta-vm1")
    finally:
        openstack(env, "server", "delete", "--wait", "meta-vm1", expect_ok=False)
