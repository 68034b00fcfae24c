"""The server tags API (2.26) on both topologies: ``openstack server set --tag``,
``server unset --tag`` and what ``server show`` lists.

Checked as upstream's ``ServerTagsController``: the status codes (201 with a
Location for a new tag, 204 for one already there), the body schema and its limits
(60 characters without '/' or ',', 50 tags), the states tags may change in (409
otherwise), the policies (a reader reads, a member writes), and a 404 below 2.26.
"""

from __future__ import annotations

import pytest

from tests.reference.nova.test_shelve import act, boot, wait_server

V2_26 = {"OpenStack-API-Version": "compute 2.26"}


@pytest.fixture(scope="module", params=["classic", "modern"])
def shared_cloud(request, tmp_path_factory):
    from tests.conftest import make_cloud

    with make_cloud(tmp_path_factory.mktemp(request.param),
                    topology=request.param) as running:
        yield running
    running.telemetry.shutdown()


def tags_url(session, server_id, tag=None) -> str:
    url = f"{session.compute}/servers/{server_id}/tags"
    return f"{url}/{tag}" if tag is not None else url


def call(session, method, url, **kwargs):
    return session.request(method, url, headers=V2_26, **kwargs)


def test_tags_are_set_listed_checked_and_removed(shared_cloud, login):
    demo = login(shared_cloud)
    server_id = boot(demo, shared_cloud, "tagged")["id"]
    assert call(demo, "GET", tags_url(demo, server_id)).json() == {"tags": []}
    response = call(demo, "PUT", tags_url(demo, server_id, "web"))
    assert response.status_code == 201, response.text
    assert response.headers["Location"].endswith(f"/servers/{server_id}/tags/web")
    assert call(demo, "PUT", tags_url(demo, server_id, "web")).status_code == 204
    assert call(demo, "GET", tags_url(demo, server_id, "web")).status_code == 204
    missing = call(demo, "GET", tags_url(demo, server_id, "db"))
    assert missing.status_code == 404
    assert missing.json()["itemNotFound"]["message"] == f"Server {server_id} has no tag 'db'"
    response = call(demo, "PUT", tags_url(demo, server_id), json={"tags": ["b", "a", "b"]})
    assert response.status_code == 200, response.text
    assert response.json() == {"tags": ["a", "b"]}
    shown = call(demo, "GET", f"{demo.compute}/servers/{server_id}").json()["server"]
    assert sorted(shown["tags"]) == ["a", "b"]
    assert call(demo, "DELETE", tags_url(demo, server_id, "a")).status_code == 204
    gone = call(demo, "DELETE", tags_url(demo, server_id, "a"))
    assert gone.status_code == 404
    assert gone.json()["itemNotFound"]["message"] == \
        f"Instance {server_id} has no tag 'a'"
    assert call(demo, "DELETE", tags_url(demo, server_id)).status_code == 204
    assert call(demo, "GET", tags_url(demo, server_id)).json() == {"tags": []}


def test_tag_bodies_limits_and_versions(shared_cloud, login):
    demo = login(shared_cloud)
    server_id = boot(demo, shared_cloud, "limits")["id"]
    for bad in ({"tags": ["a,b"]}, {"tags": ["a/b"]}, {"tags": [""]}, {"tags": ["x" * 61]},
                {"tags": [f"t{i}" for i in range(51)]}, {"tags": "a"}, {"tag": []}):
        response = call(demo, "PUT", tags_url(demo, server_id), json=bad)
        assert response.status_code == 400, bad
    invalid = call(demo, "PUT", tags_url(demo, server_id, "a,b"))
    assert invalid.status_code == 400
    assert invalid.json()["badRequest"]["message"].startswith("Tag 'a,b' is invalid.")
    assert call(demo, "PUT", tags_url(demo, server_id, "x"), json={"a": 1}).status_code == 400
    fifty = [f"t{i}" for i in range(50)]
    assert call(demo, "PUT", tags_url(demo, server_id), json={"tags": fifty}).status_code == 200
    over = call(demo, "PUT", tags_url(demo, server_id, "one-more"))
    assert over.status_code == 400
    assert over.json()["badRequest"]["message"] == \
        "The number of tags exceeded the per-server limit 50"
    # Below 2.26 the resource is not there.
    response = demo.request("GET", tags_url(demo, server_id),
                            headers={"OpenStack-API-Version": "compute 2.25"})
    assert response.status_code == 404


def test_tags_change_only_in_states_upstream_allows_and_policies_hold(shared_cloud, login):
    demo = login(shared_cloud)
    reader, other = login(shared_cloud, "reader", "demo"), login(shared_cloud, "alt_demo")
    server_id = boot(demo, shared_cloud, "shelved-tags")["id"]
    assert call(demo, "PUT", tags_url(demo, server_id, "kept")).status_code == 201
    assert call(reader, "GET", tags_url(reader, server_id)).json() == {"tags": ["kept"]}
    assert call(reader, "PUT", tags_url(reader, server_id, "no")).status_code == 403
    assert call(other, "GET", tags_url(other, server_id)).status_code == 404
    assert act(demo, server_id, {"shelve": None}).status_code == 202
    wait_server(demo, server_id, "SHELVED_OFFLOADED")
    refused = call(demo, "PUT", tags_url(demo, server_id, "late"))
    assert refused.status_code == 409
    assert refused.json()["conflictingRequest"]["message"] == (
        f"Cannot 'update tag' instance {server_id} while it is in vm_state "
        "shelved_offloaded")
    assert call(demo, "DELETE", tags_url(demo, server_id)).status_code == 409
    assert call(demo, "GET", tags_url(demo, server_id)).json() == {"tags": ["kept"]}
