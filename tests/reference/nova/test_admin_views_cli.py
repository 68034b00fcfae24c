"""The admin views with the unmodified ``openstack`` CLI and openstacksdk on ``novalab
serve`` (issue 12): ``hypervisor list/show/stats show``, ``compute service list/set``,
``availability zone list``, ``usage list/show``, checked by their values.

It reuses ``tests/labs/test_openstack_cli.py``'s cloud (``novalab serve`` on the
standard ports: run it in a network namespace of its own, e.g.
``unshare -rn bash -c 'ip link set lo up; .venv/bin/python -m pytest THIS_FILE'``)
and its helpers; the admin's commands run with ``openrc admin admin``, as on DevStack.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from labs.test_openstack_cli import as_admin, cloud_env, openstack, table  # noqa: F401

pytestmark = pytest.mark.e2e  # `novalab serve` and the `openstack` CLI



def test_hosts_services_zones_and_usage(cloud_env):  # noqa: F811
    demo, admin = cloud_env, as_admin(cloud_env)

    # -- the hosts and services, before any server -------------------------------------------
    (hypervisor,) = table(admin, "hypervisor", "list")
    host = hypervisor["Hypervisor Hostname"]
    assert (host, hypervisor["State"]) == ("compute-1", "up")
    shown = table(admin, "hypervisor", "show", host)
    assert (shown["state"], shown["status"], shown["service_host"]) == ("up", "enabled", host)
    assert shown["vcpus"] > 0 and shown["running_vms"] == 0
    stats = table(admin, "hypervisor", "stats", "show")
    assert (stats["count"], stats["vcpus"], stats["running_vms"]) == (1, shown["vcpus"], 0)
    services = {s["Binary"]: s for s in table(admin, "compute", "service", "list")}
    assert set(services) == {"nova-compute", "nova-conductor", "nova-scheduler"}
    assert (services["nova-compute"]["Host"], services["nova-compute"]["Zone"]) == \
        (host, "nova")
    assert services["nova-scheduler"]["Zone"] == "internal"
    assert {s["State"] for s in services.values()} == {"up"}
    zones = table(demo, "availability", "zone", "list", "--compute")
    assert [(z["Zone Name"], z["Zone Status"]) for z in zones] == [("nova", "available")]
    long = table(admin, "availability", "zone", "list", "--compute", "--long")
    assert {(z["Zone Name"], z["Host Name"], z["Service Name"]) for z in long} >= \
        {("nova", host, "nova-compute"), ("internal", services["nova-scheduler"]["Host"],
                                          "nova-scheduler")}
    refused = openstack(demo, "hypervisor", "list", expect_ok=False)
    assert refused.returncode != 0 and "os-hypervisors:list" in refused.stderr

    # -- a server shows on its host and in the project's usage -------------------------------
    created = table(demo, "server", "create", "--flavor", "m1.nano", "--image", "cirros",
                    "--network", "private", "--wait", "admin-views-vm")
    try:
        assert created["OS-EXT-AZ:availability_zone"] == "nova"
        shown = table(admin, "hypervisor", "show", host)
        assert (shown["running_vms"], shown["vcpus_used"]) == (1, 1)
        assert table(admin, "hypervisor", "stats", "show")["running_vms"] == 1
        usages = {u["Project"]: u for u in table(admin, "usage", "list")}
        projects = {p["Name"]: p["ID"] for p in table(admin, "project", "list")}
        mine = usages.get("demo") or usages[projects["demo"]]
        # The SDK asks for detailed=True; Nova lists the servers for detailed=1 only, so
        # the list has no per-server usages to count (as on DevStack): only the sums.
        assert float(mine["CPU Hours"]) > 0 and float(mine["RAM MB-Hours"]) > 0
        own = table(demo, "usage", "show")
        assert created["id"] in {u["instance_id"] for u in own["Servers"]}
        assert float(own["RAM MB-Hours"]) > 0 and float(own["CPU Hours"]) > 0

        # -- a disabled host gets no server --------------------------------------------------
        openstack(admin, "compute", "service", "set", "--disable", "--disable-reason",
                  "maintenance", host, "nova-compute")
        (disabled,) = table(admin, "compute", "service", "list", "--long", "--service",
                            "nova-compute")
        assert (disabled["Status"], disabled["Disabled Reason"]) == ("disabled",
                                                                     "maintenance")
        assert table(admin, "hypervisor", "show", host)["status"] == "disabled"
        refused = openstack(demo, "server", "create", "--flavor", "m1.nano", "--image",
                            "cirros", "--network", "private", "--wait", "no-host",
                            expect_ok=False)
        assert refused.returncode != 0
        fault = table(demo, "server", "show", "no-host")["fault"]
        assert "No valid host was found" in str(fault)
        openstack(demo, "server", "delete", "--wait", "no-host")
    finally:
        openstack(admin, "compute", "service", "set", "--enable", host, "nova-compute")
        openstack(demo, "server", "delete", "--wait", "admin-views-vm")
    assert table(admin, "hypervisor", "show", host)["running_vms"] == 0


def test_openstacksdk_admin_views(cloud_env):  # noqa: F811
    """After the test above: demo's servers ran in the last day."""
    script = """
import datetime, json
import openstack
conn = openstack.connect()
hypervisors = [h.name for h in conn.compute.hypervisors(details=True)]
services = sorted(s.binary for s in conn.compute.services())
zones = [z.name for z in conn.compute.availability_zones()]
start = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) \\
    - datetime.timedelta(days=1)
demo = conn.identity.find_project("demo").id
usage = conn.compute.get_usage(demo, start=start)
listed = {u.project_id for u in conn.compute.usages(start=start)}
print(json.dumps({"hypervisors": hypervisors, "services": services, "zones": zones,
                  "usage": [usage.project_id == demo, usage.total_hours > 0,
                            len(usage.server_usages) > 0, demo in listed]}))
"""
    env = as_admin(cloud_env)
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                            text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["hypervisors"] == ["compute-1"]
    assert found["services"] == ["nova-compute", "nova-conductor", "nova-scheduler"]
    assert found["zones"] == ["nova"]
    # The first test's servers ran in the last day, deleted or not.
    assert found["usage"] == [True, True, True, True]
