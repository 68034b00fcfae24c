"""Lists are bounded: at most ``max_limit`` (1000) servers a page, query parameters
checked, and a name filter that cannot keep the API busy forever."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import insert

from novalab.reference.nova.db.models import Instance

BULK = "bulk-project"


def add_instances(cloud, project_id: str, names: list[str]) -> None:
    """Rows only (no build): what a list reads, without booting a thousand servers."""
    rows = [{"uuid": str(uuid.uuid4()), "display_name": name, "project_id": project_id,
             "user_id": "u", "image_ref": "", "flavor_id": "42", "flavor_name": "m1.nano",
             "memory_mb": 64, "vcpus": 1, "root_gb": 1, "ephemeral_gb": 0,
             "vm_state": "building", "task_state": None, "power_state": 0,
             "metadata_items": {}} for name in names]
    with cloud.wiring.database("test").session() as session:
        session.execute(insert(Instance), rows)


@pytest.fixture(scope="module")
def crowded(shared_cloud):
    add_instances(shared_cloud, BULK, [f"bulk-{n}" for n in range(1005)])
    return shared_cloud


def test_a_list_answers_at_most_1000_and_links_the_next_page(crowded, login):
    admin = login(crowded, "admin")
    url = f"{admin.compute}/servers?all_tenants=1"
    for query in ("", "&limit=5000"):
        body = admin.request("GET", url + query, timeout=30).json()
        assert len(body["servers"]) == 1000
        assert body["servers_links"][0]["rel"] == "next"
    rest = admin.request("GET", body["servers_links"][0]["href"], timeout=30).json()
    assert len(rest["servers"]) >= 5
    assert not {s["id"] for s in rest["servers"]} & {s["id"] for s in body["servers"]}


@pytest.mark.parametrize("query", ["limit=abc", "limit=-1", "limit=1.5", "marker=nope",
                                   "name=" + "x" * 256])
def test_bad_query_parameters_are_400(shared_cloud, login, query):
    demo = login(shared_cloud, "demo")
    response = demo.request("GET", f"{demo.compute}/servers?{query}", timeout=10)
    assert response.status_code == 400, response.text
    assert response.json()["badRequest"]["code"] == 400


@pytest.mark.parametrize("pattern", ["^(a|aa)*$b", "(a+)+b", "(.*)*b", "a{1,100}{1,100}b"])
def test_a_name_filter_that_would_backtrack_forever_is_400(shared_cloud, login, pattern):
    """The attack: a server named 'aaaa…' and ``?name=(a|aa)*$b`` kept a worker thread
    of nova-api matching for longer than the universe is old."""
    demo = login(shared_cloud, "demo")
    add_instances(shared_cloud, demo.project_id, ["a" * 255])
    response = demo.request("GET", f"{demo.compute}/servers", params={"name": pattern},
                            timeout=10)
    assert response.status_code == 400, response.text
    assert "name" in response.json()["badRequest"]["message"]


def test_name_filters_as_clients_write_them(shared_cloud, login):
    """Substring, anchors, ``.`` and ``.*``: what ``openstack server list --name`` users
    type, matched in time linear in the name whatever the pattern."""
    demo = login(shared_cloud, "demo")
    add_instances(shared_cloud, demo.project_id, ["web-1", "web-2", "db-1", "x" * 255])

    def names(pattern):
        response = demo.request("GET", f"{demo.compute}/servers", params={"name": pattern},
                                timeout=10)
        assert response.status_code == 200, response.text
        return sorted(s["name"] for s in response.json()["servers"])

    assert names("web") == ["web-1", "web-2"]
    assert names("^db") == ["db-1"]
    assert names("-1$") == ["db-1", "web-1"]
    assert names("^w.b-.$") == ["web-1", "web-2"]
    assert names("^web\\-2$") == ["web-2"]
    assert names(".*.*.*.*.*.*.*.*.*.*.*.*y") == []
    assert names("^x.*x.*x.*x.*x.*x.*x.*x.*x.*x.*x$") == ["x" * 255]
