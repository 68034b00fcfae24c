"""Security groups: the API, the default group, ports in groups, and the L2 agent's filter."""

from __future__ import annotations

import threading

import httpx
from sqlalchemy import event

from novalab.reference.neutron.agent.linux.iptables_firewall import chain_name, ipset_name
from novalab.tracing import attributes as attr

HOST = "compute-1"
INSTANCE = "5a0e3c1c-2b7d-4e36-9d0c-1f8a6b0c2d44"


def error_of(response: httpx.Response) -> tuple[int, str]:
    body = response.json()["NeutronError"]
    assert set(body) == {"type", "message", "detail"}
    return response.status_code, body["type"]


def groups(netcloud, token, query=""):
    response = netcloud.request("GET", f"/security-groups{query}", token)
    assert response.status_code == 200, response.text
    return response.json()["security_groups"]


def create_group(netcloud, token, name, **extra):
    response = netcloud.request("POST", "/security-groups", token,
                                json={"security_group": {"name": name, **extra}})
    assert response.status_code == 201, response.text
    return response.json()["security_group"]


def create_rule(netcloud, token, **rule):
    return netcloud.request("POST", "/security-group-rules", token,
                            json={"security_group_rule": rule})


def shape(rule):
    return (rule["direction"], rule["ethertype"], rule["remote_group_id"] is not None,
            rule["protocol"], rule["remote_ip_prefix"])


def test_default_group_created_once_with_its_four_rules(netcloud):
    demo = netcloud.token("demo")
    first = groups(netcloud, demo)
    assert [g["name"] for g in first] == ["default"]
    default = first[0]
    assert default["description"] == "Default security group"
    assert default["stateful"] is True and default["revision_number"] == 0
    assert sorted(shape(r) for r in default["security_group_rules"]) == [
        ("egress", "IPv4", False, None, None), ("egress", "IPv6", False, None, None),
        ("ingress", "IPv4", True, None, None), ("ingress", "IPv6", True, None, None)]
    assert {r["remote_group_id"] for r in default["security_group_rules"]} == \
        {None, default["id"]}
    assert all(r["belongs_to_default_sg"] for r in default["security_group_rules"])
    # Asked again (and by a rule list, and a port create): still one default group.
    assert groups(netcloud, demo) == first
    rules = netcloud.request("GET", "/security-group-rules", demo).json()
    assert len(rules["security_group_rules"]) == 4
    network = netcloud.request("GET", "/networks?name=private", demo).json()["networks"][0]
    port = netcloud.request("POST", "/ports", demo, json={"port": {
        "network_id": network["id"]}}).json()["port"]
    assert port["security_groups"] == [default["id"]]
    # An explicit empty list (or null, neutron-lib's convert_none_to_empty_list): none.
    for empty in ([], None):
        bare = netcloud.request("POST", "/ports", demo, json={"port": {
            "network_id": network["id"], "security_groups": empty}}).json()["port"]
        assert bare["security_groups"] == []
    assert [g["id"] for g in groups(netcloud, demo, "?name=default")] == [default["id"]]
    # The DHCP port, neutron's own, is in no group.
    admin = netcloud.token("admin")
    dhcp = netcloud.request("GET", "/ports?device_owner=network:dhcp", admin).json()["ports"]
    assert dhcp[0]["security_groups"] == []
    # Extension listed once it is served.
    aliases = {e["alias"] for e in netcloud.request("GET", "/extensions",
                                                   demo).json()["extensions"]}
    assert {"security-group", "stateful-security-group"} <= aliases


def test_group_and_rule_lifecycle(netcloud):
    demo = netcloud.token("demo")
    web = create_group(netcloud, demo, "web", description="web servers")
    # A new group gets the two egress rules only.
    assert sorted(shape(r) for r in web["security_group_rules"]) == [
        ("egress", "IPv4", False, None, None), ("egress", "IPv6", False, None, None)]
    assert not any(r["belongs_to_default_sg"] for r in web["security_group_rules"])
    ssh = create_rule(netcloud, demo, security_group_id=web["id"], direction="ingress",
                      protocol="TCP", port_range_min=22, port_range_max="22",
                      remote_ip_prefix="0.0.0.0/0")
    assert ssh.status_code == 201, ssh.text
    ssh = ssh.json()["security_group_rule"]
    assert (ssh["protocol"], ssh["port_range_min"], ssh["port_range_max"],
            ssh["ethertype"], ssh["normalized_cidr"]) == ("tcp", 22, 22, "IPv4", "0.0.0.0/0")
    again = create_rule(netcloud, demo, security_group_id=web["id"], direction="ingress",
                        protocol="6", port_range_min=22, port_range_max=22)
    assert error_of(again) == (409, "SecurityGroupRuleExists")
    assert ssh["id"] in again.json()["NeutronError"]["message"]
    host = create_rule(netcloud, demo, security_group_id=web["id"], direction="ingress",
                       remote_ip_prefix="192.0.2.7").json()["security_group_rule"]
    assert host["remote_ip_prefix"] == "192.0.2.7/32"

    shown = netcloud.request("GET", f"/security-groups/{web['id']}", demo).json()
    assert len(shown["security_group"]["security_group_rules"]) == 4
    listed = netcloud.request(
        "GET", f"/security-group-rules?security_group_id={web['id']}&direction=ingress"
               "&fields=id&fields=protocol", demo).json()["security_group_rules"]
    assert sorted(listed, key=lambda r: r["id"]) == sorted(
        [{"id": ssh["id"], "protocol": "tcp"}, {"id": host["id"], "protocol": None}],
        key=lambda r: r["id"])
    renamed = netcloud.request("PUT", f"/security-groups/{web['id']}", demo, json={
        "security_group": {"name": "www", "description": "d"}}).json()["security_group"]
    assert (renamed["name"], renamed["description"], renamed["revision_number"]) == \
        ("www", "d", 1)
    assert netcloud.request("DELETE", f"/security-group-rules/{ssh['id']}",
                            demo).status_code == 204
    assert error_of(netcloud.request("GET", f"/security-group-rules/{ssh['id']}", demo)) == \
        (404, "SecurityGroupRuleNotFound")
    assert netcloud.request("DELETE", f"/security-groups/{web['id']}", demo).status_code == 204
    assert error_of(netcloud.request("GET", f"/security-groups/{web['id']}", demo)) == \
        (404, "SecurityGroupNotFound")
    assert netcloud.request("GET", f"/security-group-rules?security_group_id={web['id']}",
                            demo).json()["security_group_rules"] == []


def test_the_default_group_is_kept(netcloud):
    demo, admin = netcloud.token("demo"), netcloud.token("admin")
    default = groups(netcloud, demo)[0]
    assert error_of(netcloud.request("POST", "/security-groups", demo, json={
        "security_group": {"name": "Default"}})) == (409, "SecurityGroupDefaultAlreadyExists")
    assert error_of(netcloud.request("PUT", f"/security-groups/{default['id']}", demo, json={
        "security_group": {"name": "other"}})) == (409, "SecurityGroupCannotUpdateDefault")
    assert error_of(netcloud.request("DELETE", f"/security-groups/{default['id']}", demo)) \
        == (409, "SecurityGroupCannotRemoveDefault")
    # In use by a port: not even an admin may delete it.
    network = netcloud.request("GET", "/networks?name=private", demo).json()["networks"][0]
    netcloud.request("POST", "/ports", demo, json={"port": {"network_id": network["id"]}})
    assert error_of(netcloud.request("DELETE", f"/security-groups/{default['id']}",
                                     admin)) == (409, "SecurityGroupInUse")


def test_schema_and_rule_errors(netcloud):
    demo = netcloud.token("demo")
    sg = create_group(netcloud, demo, "errors")["id"]
    bad_bodies = [
        {"security_group": {"name": "x", "colour": "red"}},
        {"security_group": {"name": 7}},
        {"security_group": {"stateful": "maybe"}},
        {"security_groups": {}},
    ]
    for body in bad_bodies:
        response = netcloud.request("POST", "/security-groups", demo, json=body)
        assert error_of(response) == (400, "HTTPBadRequest"), body
    cases = [
        ({"direction": "sideways"}, (400, "HTTPBadRequest")),
        ({"direction": "ingress", "ethertype": "IPv5"}, (400, "HTTPBadRequest")),
        ({"direction": "ingress", "port_range_min": 70000}, (400, "HTTPBadRequest")),
        ({"direction": "ingress", "remote_ip_prefix": "not-a-cidr"}, (400, "HTTPBadRequest")),
        ({"direction": "ingress", "protocol": "carrier-pigeon"},
         (400, "SecurityGroupRuleInvalidProtocol")),
        ({"direction": "ingress", "port_range_min": 22},
         (400, "SecurityGroupProtocolRequiredWithPorts")),
        ({"direction": "ingress", "protocol": "tcp", "port_range_min": 30,
          "port_range_max": 20}, (400, "SecurityGroupInvalidPortRange")),
        ({"direction": "ingress", "protocol": "icmp", "port_range_min": 300},
         (400, "SecurityGroupInvalidIcmpValue")),
        ({"direction": "ingress", "protocol": "icmp", "port_range_max": 0},
         (400, "SecurityGroupMissingIcmpType")),
        ({"direction": "ingress", "protocol": "gre", "port_range_min": 1,
          "port_range_max": 2}, (400, "SecurityGroupInvalidProtocolForPort")),
        ({"direction": "ingress", "ethertype": "IPv6", "remote_ip_prefix": "10.0.0.0/8"},
         (400, "SecurityGroupRuleParameterConflict")),
        ({"direction": "ingress", "remote_ip_prefix": "10.0.0.0/8", "remote_group_id": sg},
         (400, "SecurityGroupMultipleRemoteEntites")),
        ({"direction": "ingress", "remote_group_id": "0b6ee1f6-5dd1-4f6a-9d62-0c5a2c1f3a11"},
         (404, "SecurityGroupNotFound")),
    ]
    for rule, expected in cases:
        assert error_of(create_rule(netcloud, demo, security_group_id=sg, **rule)) == \
            expected, rule
    missing = create_rule(netcloud, demo, direction="ingress")
    assert error_of(missing) == (400, "HTTPBadRequest")
    assert netcloud.request("PUT", f"/security-group-rules/{sg}", demo, json={
        "security_group_rule": {"description": "x"}}).status_code == 405


def test_member_cannot_see_or_use_another_projects_group(netcloud):
    demo, alt, admin = (netcloud.token(u) for u in ("demo", "alt_demo", "admin"))
    mine = create_group(netcloud, demo, "demo-only")
    assert mine["id"] not in {g["id"] for g in groups(netcloud, alt)}
    assert "demo-only" not in {g["name"] for g in groups(netcloud, alt,
                                                         f"?project_id={mine['project_id']}")}
    for method, path, body in (
            ("GET", f"/security-groups/{mine['id']}", None),
            ("PUT", f"/security-groups/{mine['id']}", {"security_group": {"name": "x"}}),
            ("DELETE", f"/security-groups/{mine['id']}", None),
            ("GET", f"/security-group-rules/{mine['security_group_rules'][0]['id']}", None),
            ("DELETE", f"/security-group-rules/{mine['security_group_rules'][0]['id']}",
             None)):
        response = netcloud.request(method, path, alt, json=body)
        assert response.status_code == 404, (method, path, response.text)
    assert error_of(create_rule(netcloud, alt, security_group_id=mine["id"],
                                direction="ingress")) == (404, "SecurityGroupNotFound")
    alt_own = groups(netcloud, alt)[0]
    assert error_of(create_rule(netcloud, alt, security_group_id=alt_own["id"],
                                direction="ingress", remote_group_id=mine["id"])) == \
        (404, "SecurityGroupNotFound")
    network = netcloud.request("GET", "/networks?name=alt-private", alt).json()["networks"][0]
    port = netcloud.request("POST", "/ports", alt, json={"port": {
        "network_id": network["id"], "security_groups": [mine["id"]]}})
    assert error_of(port) == (404, "SecurityGroupNotFound")
    # A reader of the project may look, not change.
    assert mine["id"] in {g["id"] for g in groups(netcloud, admin)}


def test_quota_bounds_groups_and_rules(netcloud):
    demo, admin = netcloud.token("demo"), netcloud.token("admin")
    project = groups(netcloud, demo)[0]["project_id"]  # creates the default group
    quota = netcloud.request("GET", f"/quotas/{project}", demo).json()["quota"]
    assert (quota["security_group"], quota["security_group_rule"]) == (10, 100)
    response = netcloud.request("PUT", f"/quotas/{project}", admin, json={"quota": {
        "security_group": 2, "security_group_rule": 7}})
    assert response.status_code == 200, response.text
    extra = create_group(netcloud, demo, "second")  # default + this = 2
    assert error_of(netcloud.request("POST", "/security-groups", demo, json={
        "security_group": {"name": "third"}})) == (409, "OverQuota")
    # 4 default rules + 2 egress = 6: one more fits, the next does not.
    assert create_rule(netcloud, demo, security_group_id=extra["id"], direction="ingress",
                       protocol="icmp").status_code == 201
    assert error_of(create_rule(netcloud, demo, security_group_id=extra["id"],
                                direction="ingress", protocol="udp")) == (409, "OverQuota")
    details = netcloud.request("GET", f"/quotas/{project}/details", demo).json()["quota"]
    assert details["security_group"]["used"] == 2
    assert details["security_group_rule"]["used"] == 7
    # A new group's two template rules must fit the rule limit itself (not its usage).
    netcloud.request("PUT", f"/quotas/{project}", admin, json={"quota": {
        "security_group": 10, "security_group_rule": 1}})
    assert error_of(netcloud.request("POST", "/security-groups", demo, json={
        "security_group": {"name": "too-many-rules"}})) == (409, "OverQuota")


def _bound_port(netcloud, token, admin, **extra):
    network = netcloud.request("GET", "/networks?name=private", token).json()["networks"][0]
    response = netcloud.request("POST", "/ports", token, json={"port": {
        "network_id": network["id"], "device_id": INSTANCE, **extra}})
    assert response.status_code == 201, response.text
    port = response.json()["port"]
    netcloud.start_guest(port["id"])
    bound = netcloud.request("PUT", f"/ports/{port['id']}", admin, json={"port": {
        "binding:host_id": HOST, "device_owner": "compute:nova"}})
    assert bound.status_code == 200, bound.text
    netcloud.wait(lambda: netcloud.request("GET", f"/ports/{port['id']}", admin)
                  .json()["port"]["status"] == "ACTIVE", what="port ACTIVE")
    return port


def test_l2_agent_filter_holds_the_rules_and_follows_updates(netcloud):
    demo, admin = netcloud.token("demo"), netcloud.token("admin")
    default = groups(netcloud, demo)[0]
    port = _bound_port(netcloud, demo, admin)
    ip, mac = port["fixed_ips"][0]["ip_address"], port["mac_address"].upper()
    firewall = netcloud.l2.firewall
    ingress, spoof = chain_name(port["id"], "i"), chain_name(port["id"], "s")
    assert ingress == "neutron-linuxbri-i" + port["id"][:10]
    lines = firewall.chains(port["id"])["iptables"]
    members = ipset_name(default["id"], "IPv4")
    assert f"-A {ingress} -m state --state RELATED,ESTABLISHED -j RETURN" in lines
    assert f"-A {ingress} -m set --match-set {members} src -j RETURN" in lines
    assert f"-A {spoof} -s {ip}/32 -m mac --mac-source {mac} -j RETURN" in lines
    assert lines[-1] == f"-A {spoof} -j DROP"
    assert ip in firewall.ipsets[members]
    # The trace shows it: the firewall driver's span carries the lines, below the
    # agent's question to the server.
    spans = netcloud.spans()
    prepared = [s for s in spans if s.name == "IptablesFirewallDriver.prepare_port_filter"
                and s.attributes.get(attr.NEUTRON_PORT_ID) == port["id"]]
    assert prepared and list(prepared[0].attributes[attr.NOVALAB_FIREWALL_RULES]) == \
        lines + firewall.chains(port["id"])["ip6tables"]
    assert attr.NOVALAB_STAND_IN in prepared[0].attributes
    assert any(s.name == "SecurityGroupServerRpcCallback.security_group_info_for_devices"
               for s in spans)

    # A rule added to the group reaches the agent (security_groups_rule_updated).
    ssh = create_rule(netcloud, demo, security_group_id=default["id"], direction="ingress",
                      protocol="tcp", port_range_min=22, port_range_max=22)
    assert ssh.status_code == 201, ssh.text
    wanted = f"-A {ingress} -p tcp -m tcp --dport 22 -j RETURN"
    netcloud.wait(lambda: wanted in firewall.chains(port["id"])["iptables"],
                  what="the new rule in the port's chain")
    # ... and its removal too.
    netcloud.request("DELETE", f"/security-group-rules/{ssh.json()['security_group_rule']['id']}",
                     demo)
    netcloud.wait(lambda: wanted not in firewall.chains(port["id"])["iptables"],
                  what="the rule gone from the port's chain")

    # A port moved to another group gets that group's rules only (a port update).
    web = create_group(netcloud, demo, "web")
    create_rule(netcloud, demo, security_group_id=web["id"], direction="ingress",
                protocol="tcp", port_range_min=80, port_range_max=80)
    moved = netcloud.request("PUT", f"/ports/{port['id']}", demo, json={"port": {
        "security_groups": [web["id"]]}})
    assert moved.json()["port"]["security_groups"] == [web["id"]]
    http = f"-A {ingress} -p tcp -m tcp --dport 80 -j RETURN"
    netcloud.wait(lambda: http in firewall.chains(port["id"])["iptables"],
                  what="the web group's rule")
    assert not any("--match-set" in line for line in firewall.chains(port["id"])["iptables"])

    # Deleted: the filter is gone.
    netcloud.request("DELETE", f"/ports/{port['id']}", demo)
    netcloud.wait(lambda: firewall.chains(port["id"]) == {}, what="filter removed")


def test_an_agents_refresh_costs_the_same_queries_however_many_ports(netcloud):
    """``security_group_info_for_devices`` reads all the agent's ports at once: an L2
    agent refreshes every port on its host at each member change, and read a port at
    a time that grew with the host's ports on every boot (docs/perf/scale.md)."""
    demo = netcloud.token("demo")
    network = netcloud.request("GET", "/networks?name=private", demo).json()["networks"][0]
    ports = [netcloud.request("POST", "/ports", demo, json={"port": {
        "network_id": network["id"]}}).json()["port"] for _ in range(6)]
    here = threading.get_ident()
    statements: list[str] = []

    def record(_conn, _cursor, statement, *_args):
        if threading.get_ident() == here:  # the agents' threads share the engine
            statements.append(statement)

    def queries_for(port_ids: list[str]) -> int:
        statements.clear()
        event.listen(netcloud.core.db.engine, "before_cursor_execute", record)
        try:
            info = netcloud.core.security_group_info_for_ports(port_ids)
        finally:
            event.remove(netcloud.core.db.engine, "before_cursor_execute", record)
        assert sorted(info["devices"]) == sorted(port_ids)
        return len(statements)

    ids = [port["id"] for port in ports]
    few = queries_for(ids[:2])
    assert few > 0 and queries_for(ids) == few
