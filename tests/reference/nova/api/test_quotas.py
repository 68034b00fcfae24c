"""Nova's quotas and bounds: no request makes more instances than a project may have,
and none can make the API write rows until it is killed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import func, select

from novalab.reference.common.credentials import PERSONA_PASSWORD
from novalab.reference.nova.db.models import Instance

pytestmark = pytest.mark.e2e  # the `openstack` CLI


def create(session, cloud, timeout=30.0, **server):
    body = {"server": {"name": "q", "flavorRef": "42", "imageRef": cloud.cirros["id"],
                       **server}}
    return session.request("POST", f"{session.compute}/servers", json=body, timeout=timeout)


def instance_rows(cloud) -> int:
    """Live instance rows (a destroyed one stays, soft-deleted)."""
    with cloud.wiring.database("test").session() as session:
        return session.scalar(select(func.count(Instance.id)).where(Instance.deleted == 0))


@pytest.mark.parametrize("counts", [
    {"min_count": 10**30, "max_count": 10**30},
    {"min_count": "1000000000000000000000000000000"},
    {"min_count": "0"},
    {"min_count": 0},
    {"max_count": -1},
    {"min_count": 3, "max_count": 2},
])
def test_counts_out_of_bounds_are_400_before_any_row(shared_cloud, login, counts):
    """The attack: min_count = max_count = 10**30 never answered and wrote instance rows
    until the process was killed; min_count "0" was a 500."""
    demo = login(shared_cloud, "demo")
    before = instance_rows(shared_cloud)
    response = create(demo, shared_cloud, timeout=10.0, **counts)
    assert response.status_code == 400, response.text
    assert "badRequest" in response.json()
    assert instance_rows(shared_cloud) == before


def test_a_nonexistent_availability_zone_is_400(shared_cloud, login):
    demo = login(shared_cloud, "demo")
    response = create(demo, shared_cloud, availability_zone="atlantis")
    assert response.status_code == 400
    assert "availability zone is not available" in response.json()["badRequest"]["message"]


def test_max_count_is_cut_to_the_quota_and_min_count_over_it_is_403(cloud, login):
    admin, other = login(cloud, "admin"), login(cloud, "alt_demo")
    quota_url = f"{admin.compute}/os-quota-sets/{other.project_id}"
    assert admin.request("PUT", quota_url, json={"quota_set": {"instances": 2}}).json()[
        "quota_set"]["instances"] == 2
    made = create(other, cloud, min_count=1, max_count=5)
    assert made.status_code == 202
    servers = other.request("GET", f"{other.compute}/servers").json()["servers"]
    assert len(servers) == 2
    refused = create(other, cloud, name="more")
    assert refused.status_code == 403
    assert refused.json()["forbidden"]["message"] == (
        "Quota exceeded for instances: Requested 1, but already used 2 of 2 instances")
    detail = other.request("GET", f"{quota_url}/detail").json()["quota_set"]
    assert detail["instances"] == {"limit": 2, "in_use": 2, "reserved": 0}
    assert detail["cores"]["in_use"] == 2 and detail["ram"]["in_use"] == 128
    limits = other.request("GET", f"{other.compute}/limits").json()["limits"]["absolute"]
    assert limits["maxTotalInstances"] == 2 and limits["totalInstancesUsed"] == 2
    # Back to the defaults: the project may boot again.
    assert admin.request("DELETE", quota_url).status_code == 202
    assert other.request("GET", quota_url).json()["quota_set"]["instances"] == 10


def test_only_admins_set_quotas_and_readers_see_their_own(shared_cloud, login):
    demo, reader = login(shared_cloud, "demo"), login(shared_cloud, "reader", "demo")
    other = login(shared_cloud, "alt_demo")
    mine = f"{demo.compute}/os-quota-sets/{demo.project_id}"
    assert demo.request("PUT", mine, json={"quota_set": {"instances": 99}}).status_code == 403
    assert reader.request("GET", mine).json()["quota_set"]["instances"] == 10
    theirs = f"{demo.compute}/os-quota-sets/{other.project_id}"
    assert demo.request("GET", theirs).status_code == 403
    bad = demo.request("PUT", mine, json={"quota_set": {"instances": "lots"}})
    assert bad.status_code == 400


def test_the_openstack_sdk_reads_the_quota_and_limits(shared_cloud, login):
    openstack = pytest.importorskip("openstack")
    conn = openstack.connect(auth_url=shared_cloud.identity_url, username="demo",
                             password=PERSONA_PASSWORD, project_name="demo",
                             user_domain_id="default", project_domain_id="default",
                             region_name="RegionOne")
    project = conn.current_project_id
    assert conn.compute.get_quota_set(project).instances == 10
    assert conn.compute.get_limits().absolute.instances == 10


def test_a_count_within_the_schema_but_over_the_quota_writes_nothing(shared_cloud, login):
    """2**31 - 1 instances is a valid count: the quota refuses it before any row."""
    demo = login(shared_cloud, "demo")
    before = instance_rows(shared_cloud)
    response = create(demo, shared_cloud, timeout=10.0, min_count=2**31 - 1,
                      max_count=2**31 - 1)
    assert response.status_code == 403, response.text
    assert "Quota exceeded for instances, cores, ram" in response.json()["forbidden"]["message"]
    assert instance_rows(shared_cloud) == before


@pytest.mark.parametrize("server, status", [
    ({"name": "n" * 256}, 400),
    ({"name": "n" * 1_000_000}, 413),
    ({"config_drive": "abc"}, 400),
    ({"return_reservation_id": "maybe"}, 400),
    ({"metadata": {"k": "v\u0000"}}, 400),
    ({"block_device_mapping_v2": [{"boot_index": 0, "uuid": "x",
                                   "delete_on_termination": "perhaps"}]}, 400),
])
def test_bad_values_and_sizes_are_refused_before_any_row(shared_cloud, login, server, status):
    demo = login(shared_cloud, "demo")
    before = instance_rows(shared_cloud)
    response = create(demo, shared_cloud, timeout=10.0, **server)
    assert response.status_code == status, response.text[:300]
    assert instance_rows(shared_cloud) == before


def test_a_limit_below_what_is_used_needs_force(cloud, login):
    """``_validate_quota_limit``: 400 unless ``force``, which leaves the project over."""
    admin, demo = login(cloud, "admin"), login(cloud, "demo")
    assert create(demo, cloud, min_count=2, max_count=2).status_code == 202
    url = f"{admin.compute}/os-quota-sets/{demo.project_id}"
    refused = admin.request("PUT", url, json={"quota_set": {"instances": 1}})
    assert refused.status_code == 400
    assert "must be greater than or equal to already used and reserved 2" in \
        refused.json()["badRequest"]["message"]
    forced = admin.request("PUT", url, json={"quota_set": {"instances": 1, "force": True}})
    assert forced.json()["quota_set"]["instances"] == 1
    assert create(demo, cloud, name="more").status_code == 403
    odd = admin.request("PUT", f"{admin.compute}/os-quota-sets/{'p' * 300}",
                        json={"quota_set": {"instances": 5}})
    assert odd.status_code == 400


def test_the_unmodified_openstack_cli_sets_and_shows_compute_quotas(cloud, login):
    """``openstack quota set/show --compute`` as admin, ``limits show --absolute`` as the
    project's member: the 2.1 shapes the client reads."""
    cli = Path(sys.executable).with_name("openstack")
    if not cli.exists():
        pytest.skip("python-openstackclient is not installed")
    demo_project = login(cloud, "demo").project_id

    def openstack(user, *args):
        env = dict(os.environ, OS_AUTH_URL=cloud.identity_url, OS_USERNAME=user,
                   OS_PASSWORD=cloud.config.credentials.password_for(user), OS_PROJECT_NAME=user,
                   OS_USER_DOMAIN_ID="default", OS_PROJECT_DOMAIN_ID="default",
                   OS_REGION_NAME="RegionOne", OS_IDENTITY_API_VERSION="3")
        result = subprocess.run([str(cli), *args], env=env, capture_output=True, text=True,
                                timeout=120)
        assert result.returncode == 0, result.stderr
        return result.stdout

    openstack("admin", "quota", "set", "--instances", "7", "--cores", "9", demo_project)
    rows = json.loads(openstack("admin", "quota", "show", "--compute", "-f", "json",
                                demo_project))
    # Newer clients print rows of Resource/Limit, older ones one object.
    shown = {r["Resource"]: r["Limit"] for r in rows} if isinstance(rows, list) else rows
    assert shown["instances"] == 7 and shown["cores"] == 9 and shown["ram"] == 51200
    absolute = {row["Name"]: row["Value"] for row in json.loads(
        openstack("demo", "limits", "show", "--absolute", "-f", "json"))}
    # The SDK-based client names Nova's maxTotalInstances max_total_instances.
    assert absolute["max_total_instances"] == 7 and absolute["max_total_cores"] == 9
    assert absolute["total_instances_used"] == 0


def test_a_create_that_fails_halfway_leaves_no_row_behind(cloud, login, monkeypatch):
    """``_provision_instances`` destroys what it wrote when a later write fails: an
    instance row no cast will ever move would stay BUILD and count against the quota."""
    from novalab.reference.nova.compute import api as compute_api

    def broken(db, values):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(compute_api.db_api, "block_device_mapping_create", broken)
    demo = login(cloud, "demo")
    before = instance_rows(cloud)
    response = create(demo, cloud, min_count=3, max_count=3)
    assert response.status_code == 500
    assert instance_rows(cloud) == before
