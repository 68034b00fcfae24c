"""``os-simple-tenant-usage``: hours, vCPU-, memory- and disk-hours from the servers'
``launched_at`` and ``terminated_at``; deleted servers count for the time they ran; a
project's readers see their own usage, admins everyone's; pages from 2.40."""

from __future__ import annotations

from datetime import datetime, timedelta

import nova_admin_views
import pytest
from nova_admin_views import at, boot, delete

from novalab.reference.common.db import utcnow

_FMT = "%Y-%m-%dT%H:%M:%S.%f"


# The module's own two-host cloud and its admin and demo sessions.
cloud, users = nova_admin_views.cloud, nova_admin_views.users


@pytest.fixture(scope="module")
def servers(cloud, users):
    """Two of demo's servers: one running, one deleted after it ran."""
    start = utcnow() - timedelta(seconds=1)
    running = boot(users["demo"], cloud, "running")
    gone = boot(users["demo"], cloud, "gone")
    delete(users["demo"], gone["id"])
    yield {"start": start, "running": running, "gone": gone}
    delete(users["demo"], running["id"])


def usage(session, path="", version="2.1", **query):
    return session.request("GET", f"{session.compute}/os-simple-tenant-usage{path}",
                           params=query, headers=at(version))


def test_a_member_sees_its_projects_usage(users, servers):
    demo = users["demo"]
    start = servers["start"].strftime(_FMT)
    response = usage(demo, f"/{demo.project_id}", start=start)
    assert response.status_code == 200, response.text
    tenant = response.json()["tenant_usage"]
    assert tenant["tenant_id"] == demo.project_id
    by_id = {s["instance_id"]: s for s in tenant["server_usages"]}
    running, gone = by_id[servers["running"]["id"]], by_id[servers["gone"]["id"]]
    assert (running["state"], running["ended_at"]) == ("active", None)
    assert gone["state"] == "terminated" and gone["ended_at"] is not None
    for server in (running, gone):
        assert server["hours"] > 0
        assert (server["flavor"], server["vcpus"], server["memory_mb"], server["local_gb"]) \
            == ("m1.nano", 1, 64, 1)
        assert datetime.strptime(server["started_at"], _FMT) >= servers["start"]
    assert tenant["total_hours"] == pytest.approx(running["hours"] + gone["hours"])
    assert tenant["total_vcpus_usage"] == pytest.approx(tenant["total_hours"])
    assert tenant["total_memory_mb_usage"] == pytest.approx(64 * tenant["total_hours"])
    # The deleted server ran until it was terminated, not until the period's end.
    assert datetime.strptime(gone["ended_at"], _FMT) < datetime.strptime(tenant["stop"], _FMT)


def test_other_projects_and_the_list_are_for_admins(users, servers):
    demo, admin = users["demo"], users["admin"]
    assert usage(demo, f"/{admin.project_id}").status_code == 403
    assert usage(demo).status_code == 403
    listed = usage(admin, detailed="1", start=servers["start"].strftime(_FMT)).json()
    (tenant,) = [t for t in listed["tenant_usages"] if t["tenant_id"] == demo.project_id]
    assert {s["instance_id"] for s in tenant["server_usages"]} >= \
        {servers["running"]["id"], servers["gone"]["id"]}
    summary = usage(admin).json()["tenant_usages"]
    assert all("server_usages" not in t for t in summary)
    # A period before anything ran has nothing in it.
    empty = usage(admin, start="2001-01-01T00:00:00", end="2001-01-02T00:00:00")
    assert empty.json() == {"tenant_usages": []}
    assert usage(admin, f"/{admin.project_id}", start="2001-01-01T00:00:00",
                 end="2001-01-02T00:00:00").json() == {"tenant_usage": {}}


def test_bad_periods_are_400(users, servers):
    admin = users["admin"]
    assert usage(admin, start="2030-01-01T00:00:00", end="2020-01-01T00:00:00") \
        .status_code == 400
    assert usage(admin, start="yesterday").status_code == 400


def test_pages_from_2_40(users, servers):
    demo = users["demo"]
    start = servers["start"].strftime(_FMT)
    first = usage(demo, f"/{demo.project_id}", "2.40", start=start, limit="1").json()
    (server,) = first["tenant_usage"]["server_usages"]
    (link,) = first["tenant_usage_links"]
    assert link["rel"] == "next" and f"marker={server['instance_id']}" in link["href"]
    second = usage(demo, f"/{demo.project_id}", "2.40", start=start, limit="1",
                   marker=server["instance_id"]).json()
    assert second["tenant_usage"]["server_usages"][0]["instance_id"] != server["instance_id"]
    assert usage(demo, f"/{demo.project_id}", "2.40", marker="nope").status_code == 400
    assert "tenant_usage_links" not in usage(demo, f"/{demo.project_id}", start=start,
                                             limit="1").json()  # 2.1 does not page
