"""``GET /servers`` filters as a member types them: ``openstack server list --status
ACTIVE --flavor m1.nano --image cirros --name web --ip 10.0`` and ``--tags`` (2.26).

Upstream's ``_get_servers``: a member's filters are ``reservation_id``, ``name``,
``status``, ``image``, ``flavor``, ``ip``, ``ip6`` and ``changes-since`` (and the
tag filters from 2.26); anything else, admin-only ones included, is dropped
silently. An unknown status lists nothing below 2.38 and is a 400 from 2.38.
"""

from __future__ import annotations

import pytest

from tests.reference.nova.test_shelve import act, boot, wait_server

V2_38 = {"OpenStack-API-Version": "compute 2.38"}
V2_52 = {"OpenStack-API-Version": "compute 2.52"}


@pytest.fixture(scope="module")
def servers(shared_cloud):
    """Two servers of demo's: ``web-1`` ACTIVE tagged a,b; ``db-1`` SHUTOFF tagged b."""
    from tests.conftest import Session

    demo = Session(shared_cloud, "demo", "demo")
    try:
        web = boot(demo, shared_cloud, "web-1")
        db = boot(demo, shared_cloud, "db-1")
        for server, tags in ((web, ["a", "b"]), (db, ["b"])):
            response = demo.request("PUT", f"{demo.compute}/servers/{server['id']}/tags",
                                    json={"tags": tags}, headers=V2_52)
            assert response.status_code == 200, response.text
        assert act(demo, db["id"], {"os-stop": None}).status_code == 202
        wait_server(demo, db["id"], "SHUTOFF")
        yield {"web": web, "db": db}
    finally:
        demo.close()


def names(session, query: str, headers=None) -> set[str]:
    response = session.request("GET", f"{session.compute}/servers?{query}",
                               headers=headers or {})
    assert response.status_code == 200, response.text
    return {s["name"] for s in response.json()["servers"]}


def test_status_filters(shared_cloud, login, servers):
    demo = login(shared_cloud)
    assert names(demo, "status=ACTIVE") == {"web-1"}
    assert names(demo, "status=shutoff") == {"db-1"}
    assert names(demo, "status=ACTIVE&status=SHUTOFF") == {"web-1", "db-1"}
    assert names(demo, "status=REBOOT") == set()
    assert names(demo, "status=BOGUS") == set()          # below 2.38: nothing
    response = demo.request("GET", f"{demo.compute}/servers?status=BOGUS", headers=V2_38)
    assert response.status_code == 400
    assert response.json()["badRequest"]["message"] == "Invalid status value"
    response = demo.request("GET", f"{demo.compute}/servers?status=DELETED")
    assert response.status_code == 403


def test_flavor_image_name_and_ip_filters(shared_cloud, login, servers):
    demo = login(shared_cloud)
    assert names(demo, "flavor=42") == {"web-1", "db-1"}
    assert names(demo, "flavor=1") == set()
    assert names(demo, "flavor=nosuch") == set()
    assert names(demo, f"image={shared_cloud.cirros['id']}") == {"web-1", "db-1"}
    assert names(demo, "image=00000000-0000-0000-0000-000000000000") == set()
    assert names(demo, "name=^web") == {"web-1"}
    address = servers["web"]["addresses"]["private"][0]["addr"]
    assert names(demo, f"ip=^{address}$") == {"web-1"}
    assert names(demo, "ip=^192\\.0\\.2\\.") == set()
    assert names(demo, "changes-since=2000-01-01T00:00:00Z") == {"web-1", "db-1"}
    assert names(demo, "changes-since=2999-01-01T00:00:00Z") == set()
    assert names(demo, "status=ACTIVE&name=db") == set()


def test_unknown_and_admin_only_filters_are_ignored_for_members(shared_cloud, login, servers):
    demo, admin = login(shared_cloud), login(shared_cloud, "admin")
    assert names(demo, "foo=bar") == {"web-1", "db-1"}
    assert names(demo, "host=nosuch") == {"web-1", "db-1"}
    assert names(admin, "all_tenants=1&host=nosuch") == set()
    # Tag filters exist from 2.26 only: below, a member's are dropped too.
    assert names(demo, "tags=a") == {"web-1", "db-1"}


def test_tag_filters(shared_cloud, login, servers):
    demo = login(shared_cloud)
    assert names(demo, "tags=a,b", V2_52) == {"web-1"}
    assert names(demo, "tags=b", V2_52) == {"web-1", "db-1"}
    assert names(demo, "tags-any=a,c", V2_52) == {"web-1"}
    assert names(demo, "not-tags=a,b", V2_52) == {"db-1"}
    assert names(demo, "not-tags-any=a", V2_52) == {"db-1"}
    assert names(demo, "not-tags-any=b", V2_52) == set()


def test_flavor_filter_sees_flavors_as_the_caller_does(shared_cloud, login, servers):
    """A member filtering by a private flavor they may no longer see lists nothing, as
    upstream's ``Flavor.get_by_flavor_id(context, ...)`` is scoped to the caller; an
    admin filtering by it finds the server."""
    admin, demo = login(shared_cloud, "admin"), login(shared_cloud)
    flavors = f"{admin.compute}/flavors"
    made = admin.request("POST", flavors, json={"flavor": {
        "name": "filter-private", "ram": 64, "vcpus": 1, "disk": 1, "id": "filter-private",
        "os-flavor-access:is_public": False}})
    assert made.status_code == 200, made.text
    action = f"{flavors}/filter-private/action"
    access = {"tenant": demo.project_id}
    assert admin.request("POST", action,
                         json={"addTenantAccess": access}).status_code == 200
    network = demo.request("GET", demo.client.endpoint("network") +
                           "/v2.0/networks?name=private").json()["networks"][0]["id"]
    response = demo.request("POST", f"{demo.compute}/servers", json={"server": {
        "name": "private-1", "flavorRef": "filter-private",
        "imageRef": shared_cloud.cirros["id"], "networks": [{"uuid": network}]}})
    assert response.status_code == 202, response.text
    server_id = response.json()["server"]["id"]
    try:
        wait_server(demo, server_id, "ACTIVE")
        assert names(demo, "flavor=filter-private") == {"private-1"}
        assert admin.request("POST", action,
                             json={"removeTenantAccess": access}).status_code == 200
        assert names(demo, "flavor=filter-private") == set()
        assert names(admin, "flavor=filter-private&all_tenants=1") == {"private-1"}
    finally:
        demo.request("DELETE", f"{demo.compute}/servers/{server_id}")
