"""Security groups with the unmodified ``openstack`` CLI and openstacksdk on
``novalab serve`` (issue 12): groups and rules in Neutron, a server booted in a
group, and groups added to and removed from it through Nova.

It reuses ``tests/labs/test_openstack_cli.py``'s cloud (``novalab serve`` on the
standard ports: run it in a network namespace of its own, e.g.
``unshare -rn bash -c 'ip link set lo up; .venv/bin/python -m pytest THIS_FILE'``)
and its helpers. One serve for the module.
"""

from __future__ import annotations

import openstack as sdk
import pytest
from labs.test_openstack_cli import cloud_env, openstack, table  # noqa: F401

pytestmark = pytest.mark.e2e  # `novalab serve` and the `openstack` CLI

CONNECT_KEYS = ("auth_url", "username", "password", "project_name", "project_domain_id",
                "user_domain_id", "region_name", "identity_api_version")


def groups_of(server: dict) -> list[str]:
    """The names in ``server show``'s ``security_groups`` (a list of {"name": ...})."""
    return sorted(g["name"] for g in server["security_groups"])


def test_security_groups_with_the_cli(cloud_env):  # noqa: F811
    env = cloud_env
    names = [g["Name"] for g in table(env, "security", "group", "list")]
    assert names == ["default"]  # created on first need, once
    default = table(env, "security", "group", "show", "default")
    assert len(default["rules"]) == 4

    web = table(env, "security", "group", "create", "--description", "web servers", "web")
    assert (web["name"], web["description"], web["stateful"]) == ("web", "web servers", True)
    assert {r["direction"] for r in web["rules"]} == {"egress"}
    rule = table(env, "security", "group", "rule", "create", "--protocol", "tcp",
                 "--dst-port", "22", "--remote-ip", "0.0.0.0/0", "web")
    assert (rule["protocol"], rule["port_range_min"], rule["port_range_max"],
            rule["direction"], rule["remote_ip_prefix"]) == ("tcp", 22, 22, "ingress",
                                                             "0.0.0.0/0")
    rules = table(env, "security", "group", "rule", "list", "web")
    assert rule["id"] in {r["ID"] for r in rules} and len(rules) == 3
    ssh = [r for r in rules if r["ID"] == rule["id"]][0]
    assert (ssh["IP Protocol"], ssh["Port Range"]) == ("tcp", "22:22")
    refused = openstack(env, "security", "group", "rule", "create", "--protocol", "tcp",
                        "--dst-port", "22", "--remote-ip", "0.0.0.0/0", "web",
                        expect_ok=False)
    assert refused.returncode != 0 and "already exists" in refused.stderr

    # A server booted in "web": its port is in that group, and Nova says so.
    server = table(env, "server", "create", "--flavor", "m1.nano", "--image", "cirros",
                   "--network", "private", "--security-group", "web", "--wait", "sg-vm")
    assert server["status"] == "ACTIVE"
    shown = table(env, "server", "show", "sg-vm")
    assert groups_of(shown) == ["web"]
    ports = table(env, "port", "list", "--server", "sg-vm", "--long")
    assert [p["Security Groups"] for p in ports] == [[web["id"]]]
    unknown = openstack(env, "server", "create", "--flavor", "m1.nano", "--image", "cirros",
                        "--network", "private", "--security-group", "nope", "x",
                        expect_ok=False)
    # The CLI looks the group up in Neutron itself before it asks Nova (whose own 400,
    # "Unable to find security_group with name or id", the API tests check).
    assert unknown.returncode != 0 and "No SecurityGroup found for nope" in unknown.stderr

    openstack(env, "server", "add", "security", "group", "sg-vm", "default")
    assert groups_of(table(env, "server", "show", "sg-vm")) == ["default", "web"]
    openstack(env, "server", "remove", "security", "group", "sg-vm", "web")
    assert groups_of(table(env, "server", "show", "sg-vm")) == ["default"]

    # A group in use cannot go; once the server is gone it can.
    in_use = openstack(env, "security", "group", "delete", "default", expect_ok=False)
    assert in_use.returncode != 0
    openstack(env, "security", "group", "rule", "delete", rule["id"])
    assert rule["id"] not in {r["ID"] for r in table(env, "security", "group", "rule",
                                                     "list", "web")}
    openstack(env, "server", "delete", "--wait", "sg-vm")
    openstack(env, "security", "group", "delete", "web")
    assert [g["Name"] for g in table(env, "security", "group", "list")] == ["default"]


def test_security_groups_with_openstacksdk(cloud_env):  # noqa: F811
    env = cloud_env
    conn = sdk.connect(**{key: env[f"OS_{key.upper()}"] for key in CONNECT_KEYS
                          if f"OS_{key.upper()}" in env})
    try:
        group = conn.network.create_security_group(name="sdk-web", description="sdk")
        assert "sdk-web" in {g.name for g in conn.network.security_groups()}
        rule = conn.network.create_security_group_rule(
            security_group_id=group.id, direction="ingress", protocol="tcp",
            port_range_min=80, port_range_max=80, remote_ip_prefix="0.0.0.0/0")
        assert (rule.protocol, rule.port_range_min, rule.ether_type) == ("tcp", 80, "IPv4")
        assert rule.id in {r.id for r in conn.network.security_group_rules(
            security_group_id=group.id)}
        image = conn.image.find_image("cirros")
        flavor = conn.compute.find_flavor("m1.nano")
        network = conn.network.find_network("private")
        server = conn.compute.create_server(
            name="sdk-vm", image_id=image.id, flavor_id=flavor.id,
            networks=[{"uuid": network.id}], security_groups=[{"name": "sdk-web"}])
        server = conn.compute.wait_for_server(server, wait=120)
        assert [g["name"] for g in server.security_groups] == ["sdk-web"]
        default = conn.network.find_security_group("default")
        conn.compute.add_security_group_to_server(server, default)
        server = conn.compute.get_server(server.id)
        assert sorted(g["name"] for g in server.security_groups) == ["default", "sdk-web"]
        conn.compute.remove_security_group_from_server(server, group)
        server = conn.compute.get_server(server.id)
        assert [g["name"] for g in server.security_groups] == ["default"]
        conn.compute.delete_server(server)
        conn.compute.wait_for_delete(server, wait=120)
        conn.network.delete_security_group_rule(rule)
        conn.network.delete_security_group(group)
        assert "sdk-web" not in {g.name for g in conn.network.security_groups()}
    finally:
        conn.close()
