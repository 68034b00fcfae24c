"""A server's security groups through Nova: create, the views, the actions, the list."""

from __future__ import annotations

from tests.reference.nova.api.test_servers import create, wait_status


def neutron(session, cloud, method, path, **kwargs):
    return session.request(method, f"{cloud.urls['neutron']}/v2.0{path}", **kwargs)


def port_groups(session, cloud, server_id):
    ports = neutron(session, cloud, "GET", "/ports",
                    params={"device_id": server_id}).json()["ports"]
    return [sorted(p["security_groups"]) for p in ports]


def test_server_security_groups_end_to_end(shared_cloud, login):
    cloud = shared_cloud
    demo, alt = login(cloud, "demo"), login(cloud, "alt_demo")
    web = neutron(demo, cloud, "POST", "/security-groups",
                  json={"security_group": {"name": "web"}}).json()["security_group"]
    default = neutron(demo, cloud, "GET", "/security-groups?name=default").json()[
        "security_groups"][0]
    theirs = neutron(alt, cloud, "POST", "/security-groups",
                     json={"security_group": {"name": "theirs"}}).json()["security_group"]

    # Unknown, or another project's: a 400 before anything is built.
    for name in ("nope", theirs["id"]):
        refused = create(demo, cloud, security_groups=[{"name": name}])
        assert refused.status_code == 400, refused.text
        assert refused.json()["badRequest"]["message"] == \
            f"Unable to find security_group with name or id '{name}'"
    bad = create(demo, cloud, security_groups=[{"nom": "web"}])
    assert bad.status_code == 400

    response = create(demo, cloud, security_groups=[{"name": "web"}, {"name": "web"}])
    assert response.status_code == 202, response.text
    created = response.json()["server"]
    assert created["security_groups"] == [{"name": "web"}, {"name": "web"}]  # as asked
    server = wait_status(demo, created["id"])
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["security_groups"] == [{"name": "web"}]
    assert port_groups(demo, cloud, server["id"]) == [[web["id"]]]

    action = f"{demo.compute}/servers/{server['id']}/action"
    added = demo.request("POST", action, json={"addSecurityGroup": {"name": "default"}})
    assert added.status_code == 202 and added.content == b""
    assert port_groups(demo, cloud, server["id"]) == [sorted([web["id"], default["id"]])]
    shown = demo.request("GET", f"{demo.compute}/servers/{server['id']}").json()["server"]
    assert sorted(g["name"] for g in shown["security_groups"]) == ["default", "web"]
    detail = demo.request("GET", f"{demo.compute}/servers/detail").json()["servers"]
    assert sorted(g["name"] for g in detail[0]["security_groups"]) == ["default", "web"]

    listed = demo.request("GET", f"{demo.compute}/servers/{server['id']}/os-security-groups")
    assert listed.status_code == 200, listed.text
    groups = listed.json()["security_groups"]
    assert [g["name"] for g in groups] == ["default", "web"]
    ingress = groups[0]["rules"]  # default's: ingress from its own members, v4 and v6
    assert len(ingress) == 2 and all(r["group"] == {"name": "default",
                                                    "tenant_id": default["tenant_id"]}
                                     for r in ingress)
    assert groups[1]["rules"] == []  # web has egress rules only

    # Not the caller's: not found; the alt project cannot touch the server at all.
    assert demo.request("POST", action, json={
        "addSecurityGroup": {"name": theirs["id"]}}).status_code == 404
    assert alt.request("POST", action, json={
        "addSecurityGroup": {"name": "theirs"}}).status_code == 404
    assert demo.request("POST", action, json={
        "addSecurityGroup": {"name": ""}}).status_code == 400

    removed = demo.request("POST", action, json={"removeSecurityGroup": {"name": "web"}})
    assert removed.status_code == 202
    assert port_groups(demo, cloud, server["id"]) == [[default["id"]]]
    again = demo.request("POST", action, json={"removeSecurityGroup": {"name": "web"}})
    assert again.status_code == 404
    assert "not associated" in again.json()["itemNotFound"]["message"]

    # The deprecated proxy is left out, and says so.
    proxy = demo.request("GET", f"{demo.compute}/os-security-groups")
    assert proxy.status_code == 404
    assert "deprecated at 2.36" in proxy.json()["itemNotFound"]["message"]
    demo.request("DELETE", f"{demo.compute}/servers/{server['id']}")


def test_requested_groups_reach_the_port_in_the_modern_topology(cloud_factory, login):
    """Today's Nova: the groups travel with the build request to the cell's instance,
    and nova-compute creates the port in them."""
    cloud = cloud_factory(topology="modern")
    demo = login(cloud, "demo")
    web = neutron(demo, cloud, "POST", "/security-groups",
                  json={"security_group": {"name": "web"}}).json()["security_group"]
    response = create(demo, cloud, security_groups=[{"name": web["id"]}])
    assert response.status_code == 202, response.text
    server = wait_status(demo, response.json()["server"]["id"])
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["security_groups"] == [{"name": "web"}]
    assert port_groups(demo, cloud, server["id"]) == [[web["id"]]]
