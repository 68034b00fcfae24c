"""``network agent list``, ``network list --external``, the extensions neutron-server has
loaded, and the 404s of the ones it has not (routers, floating IPs)."""

from __future__ import annotations

import time

import jsonschema

from novalab.reference.neutron import constants
from novalab.reference.neutron.server.extensions import LOADED

from .conftest import COMPUTE_HOST


def test_agents_are_the_ones_that_reported_and_alive_is_the_heartbeats_age(netcloud):
    admin = netcloud.token("admin")
    agents = netcloud.request("GET", "/agents", admin).json()["agents"]
    by_type = {a["agent_type"]: a for a in agents}
    assert set(by_type) == {constants.AGENT_TYPE_DHCP, constants.AGENT_TYPE_L2}
    assert by_type[constants.AGENT_TYPE_L2]["host"] == COMPUTE_HOST
    assert by_type[constants.AGENT_TYPE_DHCP]["binary"] == "neutron-dhcp-agent"
    assert all(a["alive"] and a["admin_state_up"] for a in agents)
    # Each row is a real report_state: the server's endpoint handled one per agent.
    reports = [s for s in netcloud.spans() if s.name == "AgentExtRpcCallback.report_state"]
    assert len(reports) >= 2
    shown = netcloud.request("GET", f"/agents/{by_type['DHCP agent']['id']}", admin).json()
    assert shown["agent"] == by_type[constants.AGENT_TYPE_DHCP]
    only_l2 = netcloud.request("GET", f"/agents?agent_type={constants.AGENT_TYPE_L2}"
                               f"&host={COMPUTE_HOST}", admin).json()["agents"]
    assert [a["id"] for a in only_l2] == [by_type[constants.AGENT_TYPE_L2]["id"]]

    # No report since they started (report_interval is 0 here): once agent_down_time
    # is shorter than the heartbeat's age, the same rows read as dead.
    netcloud.core.agents.agent_down_time = 0.5
    time.sleep(0.6)
    agents = netcloud.request("GET", "/agents", admin).json()["agents"]
    assert [a["alive"] for a in agents] == [False, False]
    dead = netcloud.request("GET", "/agents?alive=false", admin).json()["agents"]
    assert len(dead) == 2
    assert netcloud.request("GET", "/agents?alive=true", admin).json()["agents"] == []


def test_a_member_sees_no_agents(netcloud):
    demo = netcloud.token("demo")
    assert netcloud.request("GET", "/agents", demo).json() == {"agents": []}
    admin_list = netcloud.request("GET", "/agents", netcloud.token("admin")).json()["agents"]
    response = netcloud.request("GET", f"/agents/{admin_list[0]['id']}", demo)
    assert response.status_code == 404
    assert response.json()["NeutronError"]["type"] == "AgentNotFound"


def test_external_filter(netcloud):
    demo = netcloud.token("demo")
    everything = netcloud.request("GET", "/networks", demo).json()["networks"]
    assert everything and not any(n["router:external"] for n in everything)
    external = netcloud.request("GET", "/networks?router:external=True", demo).json()
    assert external == {"networks": []}
    internal = netcloud.request("GET", "/networks?router:external=False", demo).json()
    assert [n["id"] for n in internal["networks"]] == [n["id"] for n in everything]


def test_routers_and_floating_ips_answer_as_an_unloaded_extension(netcloud):
    demo = netcloud.token("demo")
    for method, path in (("GET", "/routers"), ("POST", "/routers"),
                         ("GET", "/floatingips"), ("DELETE", "/floatingips/abc"),
                         ("PUT", "/routers/abc/add_router_interface")):
        response = netcloud.request(method, path, demo, json={"router": {}})
        assert response.status_code == 404, (method, path)
        error = response.json()["NeutronError"]
        assert error["type"] == "HTTPNotFound"
        collection = path.split("/")[1]
        assert f"could not be found: {collection}" in error["message"]
        assert "novalab" in error["message"] and "Left out" in error["message"]


def test_extensions_list_what_is_served(netcloud):
    demo = netcloud.token("demo")
    listed = netcloud.request("GET", "/extensions", demo).json()["extensions"]
    aliases = {e["alias"] for e in listed}
    assert aliases >= {row[0] for row in LOADED}
    assert {"agent", "external-net", "quotas", "binding"} <= aliases
    assert not aliases & {"router", "l3_agent_scheduler", "dvr"}
    one = netcloud.request("GET", "/extensions/agent", demo).json()["extension"]
    assert one["name"] == "agent"
    assert netcloud.request("GET", "/extensions/router", demo).status_code == 404


AGENT = {"type": "object", "properties": {
    "id": {"type": "string"}, "agent_type": {"type": "string"},
    "binary": {"type": "string"}, "topic": {"type": "string"}, "host": {"type": "string"},
    "admin_state_up": {"type": "boolean"}, "alive": {"type": "boolean"},
    "created_at": {"type": "string", "pattern": r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$"},
    "started_at": {"type": "string", "pattern": r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$"},
    "heartbeat_timestamp": {"type": "string",
                            "pattern": r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$"},
    "description": {"type": ["string", "null"]}, "configurations": {"type": "object"},
    "resources_synced": {"type": ["boolean", "null"]}},
    "required": ["id", "agent_type", "binary", "topic", "host", "admin_state_up", "alive",
                 "created_at", "started_at", "heartbeat_timestamp", "description",
                 "configurations", "resources_synced"],
    "additionalProperties": False}
EXTENSION = {"type": "object", "properties": {
    "alias": {"type": "string"}, "name": {"type": "string"},
    "description": {"type": "string"}, "updated": {"type": "string"},
    "links": {"type": "array"}},
    "required": ["alias", "name", "description", "updated", "links"],
    "additionalProperties": False}


def test_bodies_match_the_api_reference(netcloud):
    """Agents and extensions as the Networking API reference lists their fields (the
    ``availability_zone`` extension is not loaded, so agents have no zone)."""
    admin = netcloud.token("admin")
    agents = netcloud.request("GET", "/agents", admin).json()
    jsonschema.validate(agents, {"type": "object", "properties": {
        "agents": {"type": "array", "items": AGENT, "minItems": 2}},
        "required": ["agents"], "additionalProperties": False})
    one = netcloud.request("GET", f"/agents/{agents['agents'][0]['id']}", admin).json()
    jsonschema.validate(one, {"type": "object", "properties": {"agent": AGENT},
                              "required": ["agent"], "additionalProperties": False})
    extensions = netcloud.request("GET", "/extensions", admin).json()
    jsonschema.validate(extensions, {"type": "object", "properties": {
        "extensions": {"type": "array", "items": EXTENSION}},
        "required": ["extensions"], "additionalProperties": False})
