"""A bound port's journey: DHCP and L2 agents wire it, the blocks lift, Nova hears of it."""

from __future__ import annotations

import json

import libvirt
from opentelemetry.trace import SpanKind

from novalab.reference.common.context import get_admin_context
from novalab.reference.neutron import constants
from novalab.reference.neutron.agent.l2.agent import libvirt_network_name

HOST = "compute-1"
INSTANCE = "0c7d3a52-9f4e-4a53-9a36-3f0b2a4b1c11"


def service_of(span) -> str:
    return span.resource.attributes["service.name"]


def private(netcloud, token):
    return netcloud.request("GET", "/networks?name=private", token).json()["networks"][0]


def create_bound_port(netcloud, admin, network_id, host=HOST, device_id=INSTANCE):
    response = netcloud.request("POST", "/ports", admin, json={"port": {
        "network_id": network_id, "device_id": device_id, "device_owner": "compute:nova",
        "binding:host_id": host}})
    assert response.status_code == 201, response.text
    port = response.json()["port"]
    netcloud.start_guest(port["id"])
    return port


def port_status(netcloud, admin, port_id):
    return netcloud.request("GET", f"/ports/{port_id}", admin).json()["port"]["status"]


def test_bound_port_goes_active_through_dhcp_and_l2(netcloud):
    admin = netcloud.token("admin")
    network = private(netcloud, admin)
    port = create_bound_port(netcloud, admin, network["id"])
    assert port["status"] == "DOWN"
    assert port["binding:vif_type"] == "bridge"

    event = netcloud.nova.wait_for(lambda e: e["tag"] == port["id"])
    assert event == [{"name": "network-vif-plugged", "server_uuid": INSTANCE,
                      "tag": port["id"], "status": "completed"}]
    assert port_status(netcloud, admin, port["id"]) == "ACTIVE"
    assert netcloud.core.blocks.blocks(port["id"]) == []
    # Nova was told as the neutron service user.
    caller = netcloud.keystone.validate_token(netcloud.nova.tokens[-1], include_catalog=False)
    assert caller["user"]["name"] == "neutron"

    # DHCP: the hosts file in dnsmasq's format, and the stand-in really reloaded it.
    ip = port["fixed_ips"][0]["ip_address"]
    driver = netcloud.dhcp.cache[network["id"]]
    entry = f"{port['mac_address']},host-{ip.replace('.', '-')}.openstacklocal,{ip}"
    assert entry in driver.get_conf_file_name("host").read_text().splitlines()
    status = json.loads(driver.get_conf_file_name("status.json").read_text())
    assert status["loads"] >= 2 and status["pid"] == driver.process.pid
    assert {"mac": port["mac_address"], "ip": ip,
            "name": f"host-{ip.replace('.', '-')}.openstacklocal"} in status["hosts"]

    # L2: the network's bridge is a started libvirt network with the port recorded on it.
    conn = libvirt.open("test:///default")
    try:
        lv_network = conn.networkLookupByName(libvirt_network_name(network["id"]))
        assert lv_network.isActive() == 1
        assert lv_network.UUIDString() == network["id"]
        assert f"<bridge name='{constants.bridge_name(network['id'])}'" in lv_network.XMLDesc()
    finally:
        conn.close()
    assert constants.tap_name(port["id"]) in netcloud.l2.mgr.plugged(network["id"])


def test_one_trace_from_the_api_call_to_nova(netcloud):
    admin = netcloud.token("admin")
    network = private(netcloud, admin)
    netcloud.spans()  # flush
    port = create_bound_port(netcloud, admin, network["id"])
    netcloud.nova.wait_for(lambda e: e["tag"] == port["id"])

    post = netcloud.wait(lambda: [s for s in netcloud.spans()
                                  if s.kind is SpanKind.SERVER and service_of(s) ==
                                  "neutron-server" and s.name == "POST /v2.0/ports"],
                         what="the POST span")[-1]
    trace_id = post.context.trace_id

    def complete():
        spans = netcloud.spans(trace_id)
        names = {s.name for s in spans}
        wanted = {"dnsmasq reload", "libvirt.networkUpdate", "RpcCallbacks.update_device_up",
                  "DhcpRpcCallback.dhcp_ready_on_ports", "Notifier.send_events",
                  "process q-agent-notifier-port-update.compute-1"}
        # Complete also means no span whose parent has not ended yet: the DHCP
        # agent's inner spans end before the RPC span that holds them.
        return spans if wanted <= names and len(roots_of(spans)) == 1 else None

    def roots_of(spans):
        by_id = {s.context.span_id: s for s in spans}
        return [s for s in spans if s.parent is None or s.parent.span_id not in by_id]

    spans = netcloud.wait(complete, what="the whole trace, every span under one root")
    assert {"neutron-server", "neutron-dhcp-agent", "neutron-l2-agent"} <= \
        {service_of(s) for s in spans}
    (_root,) = roots_of(spans)  # everything hangs off the client's request

    dnsmasq = [s for s in spans if s.name == "dnsmasq reload"]
    assert dnsmasq and all(s.kind is SpanKind.CLIENT for s in dnsmasq)
    assert dnsmasq[-1].attributes["peer.service"] == "dnsmasq"
    assert dnsmasq[-1].attributes[constants.ATTR_DNSMASQ_HOSTS] >= 2
    assert service_of(dnsmasq[-1]) == "neutron-dhcp-agent"
    libvirt_spans = [s for s in spans if s.name.startswith("libvirt.")]
    assert libvirt_spans and all(s.kind is SpanKind.CLIENT and service_of(s) ==
                                 "neutron-l2-agent" for s in libvirt_spans)
    ready = next(s for s in spans if s.name == "DhcpRpcCallback.dhcp_ready_on_ports")
    assert service_of(ready) == "neutron-server"
    # The notification to Nova is an HTTP CLIENT span of neutron-server.
    notify = next(s for s in spans if s.name == "Notifier.send_events")
    http = [s for s in spans if s.kind is SpanKind.CLIENT and s.parent and
            s.parent.span_id == notify.context.span_id]
    assert http and service_of(http[0]) == "neutron-server"


def test_nova_two_step_binding(netcloud):
    """Created unbound (DHCP block only) it stays DOWN; binding it later makes it ACTIVE."""
    demo, admin = netcloud.token("demo"), netcloud.token("admin")
    network = private(netcloud, demo)
    port = netcloud.request("POST", "/ports", demo, json={"port": {
        "network_id": network["id"], "device_id": INSTANCE}}).json()["port"]
    ip = port["fixed_ips"][0]["ip_address"]
    driver = netcloud.dhcp.cache[network["id"]]
    netcloud.wait(lambda: netcloud.core.blocks.blocks(port["id"]) == [],
                  what="the DHCP block to lift")
    assert ip in driver.get_conf_file_name("host").read_text()
    assert port_status(netcloud, admin, port["id"]) == "DOWN"  # not bound: not wired
    assert netcloud.nova.events == []

    bound = netcloud.request("PUT", f"/ports/{port['id']}", admin, json={"port": {
        "binding:host_id": HOST, "device_owner": "compute:nova"}})
    assert bound.status_code == 200, bound.text
    assert port_status(netcloud, admin, port["id"]) == "DOWN"  # no guest tap yet
    netcloud.start_guest(port["id"])
    netcloud.nova.wait_for(lambda e: e["tag"] == port["id"])
    assert port_status(netcloud, admin, port["id"]) == "ACTIVE"


def test_host_without_l2_agent_fails_to_bind(netcloud):
    admin = netcloud.token("admin")
    port = create_bound_port(netcloud, admin, private(netcloud, admin)["id"],
                             host="compute-99")
    assert port["binding:vif_type"] == "binding_failed"
    # No L2 agent to wait for; the DHCP block may already be lifting.
    assert "L2" not in netcloud.core.blocks.blocks(port["id"])
    netcloud.wait(lambda: netcloud.core.blocks.blocks(port["id"]) == [],
                  what="the DHCP block to lift")
    assert port_status(netcloud, admin, port["id"]) == "DOWN"  # never wired anywhere


def test_port_delete_unwires(netcloud):
    admin = netcloud.token("admin")
    network = private(netcloud, admin)
    port = create_bound_port(netcloud, admin, network["id"])
    netcloud.nova.wait_for(lambda e: e["tag"] == port["id"])
    tap = constants.tap_name(port["id"])
    driver = netcloud.dhcp.cache[network["id"]]
    assert netcloud.request("DELETE", f"/ports/{port['id']}", admin).status_code == 204
    netcloud.wait(lambda: tap not in netcloud.l2.mgr.plugged(network["id"]),
                  what="the L2 agent to unplug")
    netcloud.wait(lambda: port["mac_address"] not in
                  driver.get_conf_file_name("host").read_text(), what="dnsmasq to forget")
    deleted = netcloud.nova.wait_for(lambda e: e["name"] == "network-vif-deleted")
    assert deleted[0]["tag"] == port["id"]


def test_a_port_deleted_while_its_status_is_saved_is_no_error(netcloud):
    """The L2 agent reports a port up just as the user deletes it (the soak found it)."""
    from sqlalchemy import event, text
    from sqlalchemy.orm import Session

    admin = netcloud.token("admin")
    response = netcloud.request("POST", "/ports", admin, json={"port": {
        "network_id": private(netcloud, admin)["id"]}})
    port_id = response.json()["port"]["id"]

    def delete_first(session, flush_context, instances):
        # Another request's delete commits between the status read and its save.
        session.connection().execute(text("DELETE FROM neutron_ports WHERE id = :id"),
                                     {"id": port_id})

    event.listen(Session, "before_flush", delete_first)
    try:
        changed = netcloud.core.update_port_status(get_admin_context(), port_id, "ACTIVE")
    finally:
        event.remove(Session, "before_flush", delete_first)
    assert changed is False
