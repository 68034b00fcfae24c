"""Quotas and limits with the unmodified ``openstack`` CLI and openstacksdk on
``novalab serve``: shown, set by the admin, refused to a member, reported by
``limits show`` from real usage, and enforced when a server or a volume is created
(issue 12).

It reuses ``tests/labs/test_openstack_cli.py``'s cloud (``novalab serve`` on the
standard ports: run it in a network namespace of its own, e.g.
``unshare -rn bash -c 'ip link set lo up; .venv/bin/python -m pytest THIS_FILE'``).
The cloud is shared by this module's tests only; each test gives demo its default
quotas back before it ends.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from labs.test_openstack_cli import as_admin, cloud_env, openstack, password_of, table  # noqa: F401,E501

pytestmark = pytest.mark.e2e  # `novalab serve` and the `openstack` CLI

DEFAULTS = {"instances": 10, "cores": 20, "ram": 51200, "volumes": 10, "gigabytes": 1000,
            "snapshots": 10, "key-pairs": 100, "server-groups": 10}



def quotas(env, *args) -> dict:
    """``quota show``'s rows as {resource: limit}."""
    return {row["Resource"]: row["Limit"] for row in table(env, "quota", "show", *args)}


def limits(env) -> dict:
    return {row["Name"]: row["Value"] for row in table(env, "limits", "show", "--absolute")}


def restore(admin) -> None:
    openstack(admin, "quota", "set", "--instances", "10", "--cores", "20", "--volumes", "10",
              "demo")


def test_quota_show_set_limits_and_enforcement_with_the_cli(cloud_env):  # noqa: F811
    demo, admin = cloud_env, as_admin(cloud_env)
    demo_id = table(admin, "project", "show", "demo")["id"]
    try:
        _quota_show_set_limits_and_enforcement(demo, admin, demo_id)
    finally:
        openstack(demo, "server", "delete", "--wait", "quota-vm", expect_ok=False)
        openstack(demo, "volume", "delete", "quota-vol", expect_ok=False)
        # cinder-volume deletes by a cast: the next test counts demo's volumes.
        deadline = time.monotonic() + 60
        while table(demo, "volume", "list"):
            assert time.monotonic() < deadline, "the volume was not deleted"
            time.sleep(0.5)
        restore(admin)
    assert {k: quotas(admin, "demo")[k] for k in DEFAULTS} == DEFAULTS


def _quota_show_set_limits_and_enforcement(demo, admin, demo_id):
    # -- quota show: the project's own, another's as admin, the defaults --------------------
    own = quotas(demo)
    assert {k: own[k] for k in DEFAULTS} == DEFAULTS
    assert own["ports"] == 500 and own["subnets"] == 100  # neutron's, in the same table
    assert {k: quotas(admin, "demo")[k] for k in DEFAULTS} == DEFAULTS
    assert {k: quotas(admin, "--default")[k] for k in DEFAULTS} == DEFAULTS

    # -- quota set: the admin's; a member is refused by nova's policy ------------------------
    openstack(admin, "quota", "set", "--instances", "2", "--cores", "4", "--volumes", "1",
              "demo")
    shown = quotas(admin, "demo")
    assert (shown["instances"], shown["cores"], shown["volumes"], shown["ram"]) == \
        (2, 4, 1, 51200)
    assert quotas(admin)["instances"] == 10  # the admin's own project is untouched
    # By ID: a member may read its own project in keystone, so the refusal is nova's.
    refused = openstack(demo, "quota", "set", "--instances", "50", demo_id, expect_ok=False)
    assert refused.returncode != 0
    assert "403" in refused.stderr and "os_compute_api:os-quota-sets:update" in refused.stderr
    refused = openstack(demo, "quota", "set", "--volumes", "50", demo_id, expect_ok=False)
    assert refused.returncode != 0 and "403" in refused.stderr
    assert (quotas(demo)["instances"], quotas(demo)["volumes"]) == (2, 1)

    # -- limits show: compute's and cinder's absolute limits with real usage -----------------
    before = limits(demo)
    assert (before["max_total_instances"], before["max_total_cores"],
            before["max_total_ram_size"], before["total_instances_used"],
            before["total_cores_used"], before["total_ram_used"]) == (2, 4, 51200, 0, 0, 0)
    assert (before["max_total_volumes"], before["max_total_volume_gigabytes"],
            before["total_volumes_used"], before["total_gigabytes_used"]) == (1, 1000, 0, 0)
    server = table(demo, "server", "create", "--flavor", "m1.nano", "--image", "cirros",
                   "--network", "private", "--wait", "quota-vm")
    assert server["status"] == "ACTIVE"
    flavor = table(demo, "flavor", "show", "m1.nano")
    after = limits(demo)
    assert (after["total_instances_used"], after["total_cores_used"],
            after["total_ram_used"]) == (1, flavor["vcpus"], flavor["ram"])
    assert after["max_total_instances"] == 2

    # -- enforcement at create: nova's 403 when instances are all used -----------------------
    openstack(admin, "quota", "set", "--instances", "1", "demo")
    servers_before = {s["ID"] for s in table(demo, "server", "list")}
    ports_before = {p["ID"] for p in table(demo, "port", "list")}
    volumes_before = {v["ID"] for v in table(demo, "volume", "list")}
    # Booting from a new volume: the refusal comes before any port or volume is made.
    over = openstack(demo, "server", "create", "--flavor", "m1.nano", "--image", "cirros",
                     "--network", "private", "--boot-from-volume", "1", "--wait", "over-vm",
                     expect_ok=False)
    assert over.returncode != 0
    assert "403" in over.stderr
    assert "Quota exceeded for instances: Requested 1, but already used 1 of 1 " \
        "instances" in over.stderr
    # Nothing is left behind: no server, no port, no volume.
    assert {s["ID"] for s in table(demo, "server", "list")} == servers_before
    assert {p["ID"] for p in table(demo, "port", "list")} == ports_before
    assert {v["ID"] for v in table(demo, "volume", "list")} == volumes_before
    assert limits(demo)["total_instances_used"] == 1
    # Cores are checked too (nova's message names every resource over its limit).
    openstack(admin, "quota", "set", "--instances", "10", "--cores", "1", "demo")
    over = openstack(demo, "server", "create", "--flavor", "m1.nano", "--image", "cirros",
                     "--network", "private", "over-vm", expect_ok=False)
    assert over.returncode != 0 and "403" in over.stderr
    assert "Quota exceeded for cores: Requested 1, but already used 1 of 1 cores" in over.stderr

    # -- enforcement at create: cinder's 413 VolumeLimitExceeded ----------------------------
    volume = table(demo, "volume", "create", "--size", "1", "quota-vol")
    assert volume["size"] == 1
    over = openstack(demo, "--debug", "volume", "create", "--size", "1", "over-vol",
                     expect_ok=False)
    assert over.returncode != 0 and "413" in over.stderr
    assert "Maximum number of volumes allowed (1) exceeded for quota 'volumes'." in over.stderr
    assert '"overLimit"' in over.stderr  # cinder's fault name for a 413
    assert [v["Name"] for v in table(demo, "volume", "list")] == ["quota-vol"]
    used = limits(demo)
    assert (used["total_volumes_used"], used["total_gigabytes_used"]) == (1, 1)


SDK_SCRIPT = """
import json, os, openstack
admin = openstack.connect(username="admin", project_name="admin",
                          password=os.environ["ADMIN_PASSWORD"])
demo = openstack.connect()
project = admin.identity.find_project("demo").id
out = {}
q = admin.compute.get_quota_set(project)
out["compute"] = {"instances": q.instances, "cores": q.cores, "ram": q.ram}
out["defaults"] = admin.compute.get_quota_set_defaults(project).instances
admin.compute.update_quota_set(project, instances=3, cores=6)
q = admin.compute.get_quota_set(project, usage=True)
out["updated"] = {"instances": q.instances, "cores": q.cores}
out["usage"] = q.usage
lim = demo.compute.get_limits()
out["limits"] = {"maxTotalInstances": lim.absolute.instances,
                 "maxTotalCores": lim.absolute.total_cores,
                 "totalInstancesUsed": lim.absolute.instances_used}
try:
    demo.compute.update_quota_set(project, instances=99)
    out["member_update"] = "allowed"
except openstack.exceptions.ForbiddenException as exc:
    out["member_update"] = exc.status_code
v = admin.block_storage.get_quota_set(project)
out["volume"] = {"volumes": v.volumes, "gigabytes": v.gigabytes, "snapshots": v.snapshots}
admin.block_storage.update_quota_set(project, volumes=4)
out["volume_updated"] = admin.block_storage.get_quota_set(project).volumes
out["volume_usage"] = admin.block_storage.get_quota_set(project, usage=True).usage
admin.compute.update_quota_set(project, instances=10, cores=20)
admin.block_storage.update_quota_set(project, volumes=10)
q = admin.compute.get_quota_set(project)
out["restored"] = [q.instances, q.cores, admin.block_storage.get_quota_set(project).volumes]
print(json.dumps(out))
"""


def test_quotas_and_limits_with_openstacksdk(cloud_env):  # noqa: F811
    env = dict(cloud_env, ADMIN_PASSWORD=password_of(cloud_env, "admin"))
    result = subprocess.run([sys.executable, "-c", SDK_SCRIPT], env=env,
                            capture_output=True, text=True, timeout=180)
    if result.returncode != 0:
        restore(as_admin(cloud_env))
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["compute"] == {"instances": 10, "cores": 20, "ram": 51200}
    assert out["defaults"] == 10
    assert out["updated"] == {"instances": 3, "cores": 6}
    assert out["usage"]["instances"] == 0 and out["usage"]["cores"] == 0
    assert out["limits"] == {"maxTotalInstances": 3, "maxTotalCores": 6,
                             "totalInstancesUsed": 0}
    assert out["member_update"] == 403
    assert out["volume"] == {"volumes": 10, "gigabytes": 1000, "snapshots": 10}
    assert out["volume_updated"] == 4
    assert out["volume_usage"]["volumes"] == 0
    assert out["restored"] == [10, 20, 10]
