"""neutron-server's REST API: versions, the seed, CRUD, filters, faults and isolation."""

from __future__ import annotations

import random
import re

import httpx

from novalab.tracing.propagation import signed


def error_of(response: httpx.Response) -> tuple[int, str]:
    body = response.json()["NeutronError"]
    assert set(body) == {"type", "message", "detail"}
    return response.status_code, body["type"]


def test_version_document_is_public_and_the_rest_needs_a_token(netcloud):
    root = httpx.get(netcloud.w.urls["neutron"] + "/")
    assert root.status_code == 200
    assert root.json()["versions"][0]["id"] == "v2.0"
    assert httpx.get(f"{netcloud.neutron}/networks").status_code == 401
    assert netcloud.request("GET", "/networks", "bogus").status_code == 401


def test_seeded_networks_are_each_projects_own(netcloud):
    """As DevStack's: ``private`` is demo's and not shared; alt_demo has ``alt-private``,
    a range of its own; each with its DHCP port, owned by the network's project."""
    demo, alt = netcloud.token("demo"), netcloud.token("alt_demo")
    networks = netcloud.request("GET", "/networks", demo).json()["networks"]
    assert [n["name"] for n in networks] == ["private"]
    private = networks[0]
    demo_project = netcloud.request("GET", "/ports", demo).json()["ports"][0]["project_id"]
    assert (private["shared"], private["status"], private["project_id"]) == \
        (False, "ACTIVE", demo_project)
    assert "provider:network_type" not in private  # admin-only attribute
    subnet = netcloud.request("GET", f"/subnets/{private['subnets'][0]}", demo).json()["subnet"]
    assert (subnet["name"], subnet["cidr"], subnet["gateway_ip"], subnet["enable_dhcp"]) == \
        ("private-subnet", "10.0.0.0/24", "10.0.0.1", True)
    assert subnet["allocation_pools"] == [{"start": "10.0.0.2", "end": "10.0.0.254"}]
    alt_networks = netcloud.request("GET", "/networks", alt).json()["networks"]
    assert [(n["name"], n["shared"]) for n in alt_networks] == [("alt-private", False)]
    alt_subnet = netcloud.request("GET", f"/subnets/{alt_networks[0]['subnets'][0]}",
                                  alt).json()["subnet"]
    assert (alt_subnet["name"], alt_subnet["cidr"], alt_subnet["gateway_ip"]) == \
        ("alt-private-subnet", "10.0.1.0/24", "10.0.1.1")
    admin = netcloud.token("admin")
    dhcp = netcloud.request("GET", "/ports?device_owner=network:dhcp", admin).json()["ports"]
    assert sorted((p["fixed_ips"][0]["ip_address"], p["project_id"]) for p in dhcp) == \
        [("10.0.0.2", demo_project), ("10.0.1.2", alt_networks[0]["project_id"])]


def test_port_crud_filters_and_fields(netcloud):
    demo = netcloud.token("demo")
    network = netcloud.request("GET", "/networks?name=private", demo).json()["networks"][0]
    created = []
    for device in ("vm-a", "vm-b"):
        response = netcloud.request("POST", "/ports", demo, json={"port": {
            "network_id": network["id"], "device_id": device, "name": f"port-{device}"}})
        assert response.status_code == 201, response.text
        created.append(response.json()["port"])
    first, second = created
    assert first["status"] == "DOWN"
    assert re.fullmatch(r"fa:16:3e(:[0-9a-f]{2}){3}", first["mac_address"])
    # IPAM hands out the next free address of the pool (.2 is the DHCP port).
    assert [p["fixed_ips"][0]["ip_address"] for p in created] == ["10.0.0.3", "10.0.0.4"]
    assert "binding:host_id" not in first  # binding attributes are admin/service only

    by_device = netcloud.request("GET", "/ports?device_id=vm-b", demo).json()["ports"]
    assert [p["id"] for p in by_device] == [second["id"]]
    by_ip = netcloud.request(
        "GET", f"/ports?fixed_ips=ip_address%3D10.0.0.3&network_id={network['id']}"
               "&fields=id&fields=device_id", demo).json()["ports"]
    assert by_ip == [{"id": first["id"], "device_id": "vm-a"}]

    updated = netcloud.request("PUT", f"/ports/{first['id']}", demo,
                               json={"port": {"name": "renamed"}}).json()["port"]
    assert updated["name"] == "renamed" and updated["revision_number"] == 1
    assert netcloud.request("DELETE", f"/ports/{first['id']}", demo).status_code == 204
    gone = netcloud.request("GET", f"/ports/{first['id']}", demo)
    assert error_of(gone) == (404, "PortNotFound")
    # The freed address is the next one handed out again.
    again = netcloud.request("POST", "/ports", demo, json={"port": {
        "network_id": network["id"]}}).json()["port"]
    assert again["fixed_ips"][0]["ip_address"] == "10.0.0.3"


def test_network_and_subnet_lifecycle(netcloud):
    demo = netcloud.token("demo")
    network = netcloud.request("POST", "/networks", demo,
                               json={"network": {"name": "mine"}}).json()["network"]
    assert network["shared"] is False
    subnet = netcloud.request("POST", "/subnets", demo, json={"subnet": {
        "network_id": network["id"], "cidr": "192.168.50.0/29", "name": "tiny"}})
    assert subnet.status_code == 201, subnet.text
    subnet = subnet.json()["subnet"]
    assert subnet["gateway_ip"] == "192.168.50.1"
    assert subnet["allocation_pools"] == [{"start": "192.168.50.2", "end": "192.168.50.6"}]
    overlap = netcloud.request("POST", "/subnets", demo, json={"subnet": {
        "network_id": network["id"], "cidr": "192.168.50.0/24"}})
    assert error_of(overlap) == (400, "InvalidInput")
    ports = [netcloud.request("POST", "/ports", demo, json={"port": {
        "network_id": network["id"]}}) for _ in range(6)]
    assert [p.status_code for p in ports] == [201] * 5 + [409]
    assert error_of(ports[-1]) == (409, "IpAddressGenerationFailure")
    in_use = netcloud.request("DELETE", f"/networks/{network['id']}", demo)
    assert error_of(in_use) == (409, "NetworkInUse")
    for port in ports[:5]:
        netcloud.request("DELETE", f"/ports/{port.json()['port']['id']}", demo)
    assert netcloud.request("DELETE", f"/networks/{network['id']}", demo).status_code == 204
    assert error_of(netcloud.request("GET", f"/subnets/{subnet['id']}", demo)) == \
        (404, "SubnetNotFound")


def test_faults(netcloud):
    demo = netcloud.token("demo")
    network = netcloud.request("GET", "/networks", demo).json()["networks"][0]
    cases = [
        ({"port": {}}, (400, "HTTPBadRequest")),
        ({"port": {"network_id": network["id"], "colour": "red"}}, (400, "HTTPBadRequest")),
        ({"port": {"network_id": "no-such-network"}}, (400, "HTTPBadRequest")),
        ({"port": {"network_id": "0b6ee1f6-5dd1-4f6a-9d62-0c5a2c1f3a11"}},
         (404, "NetworkNotFound")),
        ({"port": {"network_id": network["id"], "mac_address": "zz:zz"}},
         (400, "HTTPBadRequest")),
        ({"port": {"network_id": network["id"], "name": {"a": 1}}}, (400, "HTTPBadRequest")),
        ({"port": {"network_id": network["id"], "binding:host_id": "compute-1"}},
         (403, "PolicyNotAuthorized")),
        ({"port": {"network_id": network["id"],
                   "fixed_ips": [{"ip_address": "10.0.0.2"}]}}, (409, "IpAddressAlreadyAllocated")),
        ({"port": {"network_id": network["id"],
                   "fixed_ips": [{"ip_address": "10.9.9.9"}]}}, (400, "InvalidIpForSubnet")),
        ([{"port": {"network_id": network["id"]}}], (400, "HTTPBadRequest")),
    ]
    for body, expected in cases:
        assert error_of(netcloud.request("POST", "/ports", demo, json=body)) == expected, body
    bad_json = netcloud.http.post(f"{netcloud.neutron}/ports", content=b"{nope",
                                  headers={"X-Auth-Token": demo})
    assert error_of(bad_json) == (400, "HTTPBadRequest")
    shared = netcloud.request("POST", "/networks", demo,
                              json={"network": {"name": "x", "shared": True}})
    assert error_of(shared) == (403, "PolicyNotAuthorized")
    # Nothing half done: none of the refused requests left a port behind.
    admin = netcloud.token("admin")
    assert netcloud.request("GET", "/ports?device_owner=", admin).json()["ports"] == []


def test_project_isolation(netcloud):
    demo, alt, admin = (netcloud.token(u) for u in ("demo", "alt_demo", "admin"))
    network = netcloud.request("POST", "/networks", demo,
                               json={"network": {"name": "demo-only"}}).json()["network"]
    private = netcloud.request("GET", "/networks?name=private", demo).json()["networks"][0]
    port = netcloud.request("POST", "/ports", demo, json={"port": {
        "network_id": private["id"]}}).json()["port"]

    alt_networks = {n["name"] for n in netcloud.request("GET", "/networks", alt)
                    .json()["networks"]}
    assert alt_networks == {"alt-private"}  # its own only: not demo's private, not demo-only
    assert error_of(netcloud.request("GET", f"/networks/{network['id']}", alt)) == \
        (404, "NetworkNotFound")
    # Only its own network's DHCP port: none of demo's.
    assert [p["device_owner"] for p in netcloud.request("GET", "/ports", alt)
            .json()["ports"]] == ["network:dhcp"]
    assert error_of(netcloud.request("GET", f"/ports/{port['id']}", alt)) == \
        (404, "PortNotFound")
    assert error_of(netcloud.request("DELETE", f"/ports/{port['id']}", alt)) == \
        (404, "PortNotFound")
    for theirs in (network, private):
        on_theirs = netcloud.request("POST", "/ports", alt, json={"port": {
            "network_id": theirs["id"]}})
        assert error_of(on_theirs) == (404, "NetworkNotFound")

    admin_view = netcloud.request("GET", f"/ports/{port['id']}", admin).json()["port"]
    assert admin_view["binding:vif_type"] == "unbound"
    assert network["id"] in {n["id"] for n in netcloud.request("GET", "/networks", admin)
                             .json()["networks"]}


def test_listing_ports_costs_the_same_queries_however_many_ports(netcloud):
    """A port list reads addresses and security groups for all its ports at once;
    read a port at a time, every boot's listing grew with the network (scale.md).

    The statements counted are the SQL spans in the listing request's own trace
    (the test sends its traceparent, signed as the cloud's own clients sign): the
    DHCP agent's RPC to neutron-server runs beside it on the same database, and an
    engine-wide count took those in too."""
    demo = netcloud.token("demo")
    network = netcloud.request("GET", "/networks?name=private", demo).json()["networks"][0]

    def queries_to_list() -> tuple[int, int]:
        trace_id = random.getrandbits(128) | 1
        ports = netcloud.request("GET", f"/ports?network_id={network['id']}", demo,
                                 headers=signed(netcloud.w.trace_key, trace_id,
                                                random.getrandbits(64) | 1))
        assert ports.status_code == 200
        sql = [span for span in netcloud.spans(trace_id)
               if span.resource.attributes.get("service.name") == "neutron-server"
               and span.attributes.get("db.system.name")]
        return len(sql), len(ports.json()["ports"])

    created = [netcloud.request("POST", "/ports", demo, json={"port": {
        "network_id": network["id"]}}).json()["port"]["id"] for _ in range(2)]
    few, listed_few = queries_to_list()
    created += [netcloud.request("POST", "/ports", demo, json={"port": {
        "network_id": network["id"]}}).json()["port"]["id"] for _ in range(6)]
    many, listed_many = queries_to_list()
    assert few > 0 and listed_many == listed_few + 6
    assert many == few
    for port_id in created:
        netcloud.request("DELETE", f"/ports/{port_id}", demo)
