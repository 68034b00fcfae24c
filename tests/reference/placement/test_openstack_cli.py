"""The unmodified ``openstack resource provider ...`` commands (osc-placement) against
placement-api: the plugin negotiates its microversion with ``GET /``, then lists,
creates, sets inventory and asks for allocation candidates as on DevStack."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e  # the `openstack` CLI

OPENSTACK = Path(sys.executable).with_name("openstack")


@pytest.fixture(scope="module")
def openstack(env):
    if not OPENSTACK.exists():
        pytest.skip("python-openstackclient is not installed")
    try:
        import osc_placement  # noqa: F401
    except ImportError:
        pytest.skip("osc-placement is not installed (it is a dependency: pip install -e .)")
    cli_env = dict(os.environ, OS_AUTH_URL=f"{env.w.urls['keystone']}/v3", OS_USERNAME="admin",
                   OS_PASSWORD=env.w.config.credentials.admin, OS_PROJECT_NAME="admin",
                   OS_USER_DOMAIN_ID="default", OS_PROJECT_DOMAIN_ID="default",
                   OS_REGION_NAME="RegionOne", OS_IDENTITY_API_VERSION="3")
    cli_env.pop("OS_PLACEMENT_API_VERSION", None)

    def run(*args):
        result = subprocess.run([str(OPENSTACK), *args, "-f", "json"], env=cli_env,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, f"openstack {' '.join(args)}:\n{result.stderr}"
        return json.loads(result.stdout)

    return run


def test_resource_provider_commands(openstack):
    created = openstack("resource", "provider", "create", "cli-node")
    assert created["name"] == "cli-node" and created["generation"] == 0
    # 1.14 fields shown: the plugin negotiated 1.29 with GET /.
    assert created["root_provider_uuid"] == created["uuid"]
    uuid = created["uuid"]
    listed = openstack("resource", "provider", "list")
    assert [p["name"] for p in listed if p["uuid"] == uuid] == ["cli-node"]
    assert openstack("resource", "provider", "show", uuid)["name"] == "cli-node"

    inventory = openstack("resource", "provider", "inventory", "set", uuid,
                          "--resource", "VCPU=4", "--resource", "VCPU:allocation_ratio=4.0",
                          "--resource", "MEMORY_MB=2048", "--resource", "DISK_GB=40")
    by_class = {row["resource_class"]: row for row in inventory}
    assert by_class["VCPU"]["total"] == 4 and by_class["VCPU"]["allocation_ratio"] == 4.0
    listed = {row["resource_class"]: row
              for row in openstack("resource", "provider", "inventory", "list", uuid)}
    assert set(listed) == {"VCPU", "MEMORY_MB", "DISK_GB"}
    assert listed["MEMORY_MB"]["total"] == 2048
    usage = {row["resource_class"]: row["usage"]
             for row in openstack("resource", "provider", "usage", "show", uuid)}
    assert usage == {"VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0}

    candidates = openstack("allocation", "candidate", "list", "--resource", "VCPU=1")
    (row,) = [c for c in candidates if c["resource provider"] == uuid]
    assert row["allocation"] == "VCPU=1"
    assert "VCPU=0/16" in row["inventory used/capacity"]
    assert row["traits"] == ""
    assert openstack("resource", "provider", "show", uuid)["generation"] == 1
