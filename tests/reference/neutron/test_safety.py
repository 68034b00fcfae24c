"""Neutron bodies and quotas: nothing a member sends can hang or grow the server,
and no project makes more than its quota."""

from __future__ import annotations

import pytest


def error_of(response):
    return response.status_code, response.json()["NeutronError"]["type"]


@pytest.fixture
def own_network(netcloud):
    demo = netcloud.token("demo")
    network = netcloud.request("POST", "/networks", demo,
                               json={"network": {"name": "big"}}).json()["network"]
    yield demo, network
    netcloud.request("DELETE", f"/networks/{network['id']}", demo)


@pytest.mark.parametrize("prefix", [8, 0])
def test_a_huge_subnet_answers_at_once_and_is_never_listed_address_by_address(
        netcloud, own_network, prefix):
    """The attack: cidr 0.0.0.0/0 (or a /8) never answered and grew the server by
    ~90 MB/s, because pools were expanded address by address before any check."""
    demo, network = own_network
    cidr = "10.0.0.0/8" if prefix == 8 else "0.0.0.0/0"
    response = netcloud.http.post(f"{netcloud.neutron}/subnets", timeout=10.0,
                                  headers={"X-Auth-Token": demo},
                                  json={"subnet": {"network_id": network["id"], "cidr": cidr}})
    assert response.status_code == 201, response.text
    subnet = response.json()["subnet"]
    assert len(subnet["allocation_pools"]) == 1
    port = netcloud.request("POST", "/ports", demo, json={"port": {
        "network_id": network["id"]}}, timeout=10.0).json()["port"]
    assert port["fixed_ips"][0]["subnet_id"] == subnet["id"]
    netcloud.request("DELETE", f"/ports/{port['id']}", demo)


@pytest.mark.parametrize("network", [{"mtu": "abc"}, {"mtu": -1}, {"mtu": 10**30},
                                     {"name": {"a": 1}}, {"admin_state_up": "yes"},
                                     {"name": "x" * 256}])
def test_wrong_network_values_are_400(netcloud, network):
    demo = netcloud.token("demo")
    response = netcloud.request("POST", "/networks", demo, json={"network": network})
    assert error_of(response) == (400, "HTTPBadRequest")


@pytest.mark.parametrize("subnet", [{"cidr": 5}, {"cidr": "10.1.0.0/33"},
                                    {"cidr": "10.1.0.0/24", "gateway_ip": "zz"},
                                    {"cidr": "10.1.0.0/24", "ip_version": "4"}])
def test_wrong_subnet_values_are_400(netcloud, own_network, subnet):
    demo, network = own_network
    response = netcloud.request("POST", "/subnets", demo,
                                json={"subnet": dict(subnet, network_id=network["id"])})
    assert error_of(response) == (400, "HTTPBadRequest")


def test_a_megabyte_name_is_refused_before_it_is_read(netcloud):
    demo = netcloud.token("demo")
    response = netcloud.request("POST", "/networks", demo,
                                json={"network": {"name": "x" * 1_000_000}})
    assert response.status_code == 413
    assert "NeutronError" in response.json()


def test_ports_over_the_quota_are_409_and_admins_set_quotas(netcloud):
    admin, other = netcloud.token("admin", "admin"), netcloud.token("alt_demo")
    project = netcloud.keystone.validate_token(other, include_catalog=False)["project"]["id"]
    network = netcloud.request("GET", "/networks?name=alt-private", other).json()["networks"][0]
    assert netcloud.request("PUT", f"/quotas/{project}", other,
                            json={"quota": {"port": 100}}).status_code == 403
    # Its network's DHCP port is the project's, and counts, as upstream's does.
    assert netcloud.request("PUT", f"/quotas/{project}", admin,
                            json={"quota": {"port": 2}}).json()["quota"]["port"] == 2
    first = netcloud.request("POST", "/ports", other,
                             json={"port": {"network_id": network["id"]}}).json()["port"]
    second = netcloud.request("POST", "/ports", other,
                              json={"port": {"network_id": network["id"]}})
    assert error_of(second) == (409, "OverQuota")
    assert second.json()["NeutronError"]["message"] == \
        "Quota exceeded for resources: ['port']."
    details = netcloud.request("GET", f"/quotas/{project}/details", other).json()["quota"]
    assert details["port"] == {"limit": 2, "used": 2, "reserved": 0}
    netcloud.request("DELETE", f"/ports/{first['id']}", other)
    assert netcloud.request("DELETE", f"/quotas/{project}", admin).status_code == 204
    assert netcloud.request("GET", f"/quotas/{project}", other).json()["quota"]["port"] == 500
