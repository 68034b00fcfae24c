"""The guest's metadata request: cloud-init -> metadata proxy -> nova-api-metadata."""

from __future__ import annotations

import base64
import uuid

import httpx
import pytest

from novalab.reference.neutron.guest_agent import MetadataNotFound, fetch_metadata, read_v2
from novalab.reference.nova.db import api as nova_db
from novalab.tracing import attributes as attr


@pytest.fixture
def guest(netcloud):
    """An instance row in nova's database and its port on ``private``, owned by demo."""
    demo = netcloud.token("demo")
    project_id = netcloud.keystone.validate_token(demo, include_catalog=False)["project"]["id"]
    instance = nova_db.instance_create(netcloud.w.database("test"), {
        "uuid": str(uuid.uuid4()), "display_name": "Web Server 1", "project_id": project_id,
        "user_id": "u", "flavor_id": "42", "flavor_name": "m1.nano", "memory_mb": 64,
        "vcpus": 1, "root_gb": 1, "vm_state": "active", "metadata": {"role": "web"}})
    network = netcloud.request("GET", "/networks?name=private", demo).json()["networks"][0]
    port = netcloud.request("POST", "/ports", demo, json={"port": {
        "network_id": network["id"], "device_id": instance["uuid"]}}).json()["port"]
    return {"instance": instance, "network": network, "port": port,
            "ip": port["fixed_ips"][0]["ip_address"]}


def test_meta_data_through_the_proxy(netcloud, guest):
    tracer = netcloud.w.tracer("cloud-init")
    http = netcloud.w.http("cloud-init")
    meta = fetch_metadata(netcloud.w.urls["metadata-proxy"], guest["ip"],
                          guest["network"]["id"], http, tracer=tracer)
    instance = guest["instance"]
    assert meta["uuid"] == instance["uuid"]
    assert meta["name"] == "Web Server 1" and meta["hostname"] == "web-server-1.novalocal"
    assert meta["project_id"] == instance["project_id"]
    assert meta["meta"] == {"role": "web"}
    assert meta["devices"] == [] and meta["keys"] == [] and meta["launch_index"] == 0

    network_data = fetch_metadata(netcloud.w.urls["metadata-proxy"], guest["ip"],
                                  guest["network"]["id"], http,
                                  path="/openstack/latest/network_data.json")
    link = network_data["links"][0]
    assert link["ethernet_mac_address"] == guest["port"]["mac_address"]
    assert link["id"] == "tap" + guest["port"]["id"][:11]
    assert network_data["networks"] == [{"id": "network0", "type": "ipv4_dhcp",
                                         "link": link["id"],
                                         "network_id": guest["network"]["id"]}]

    # One trace: cloud-init, the proxy, neutron-server (the port lookup), nova-api-metadata.
    root = next(s for s in netcloud.spans() if s.name == "MetadataReader.read_v2")
    wanted = {"cloud-init", "neutron-metadata-proxy", "neutron-server", "nova-api-metadata"}

    # The proxy vouches for the instance (X-Instance-ID), and nova-api-metadata names it.
    vouched = {"MetadataProxyHandlerBaseSocketServer._proxy_request",
               "MetadataRequestHandler._handle_instance_id_request"}

    def whole_trace():
        spans = netcloud.spans(root.context.trace_id)
        services = {s.resource.attributes["service.name"] for s in spans}
        return spans if wanted <= services and vouched <= {s.name for s in spans} else None

    spans = netcloud.wait(whole_trace, what="the metadata trace")
    assert any(s.name == "MetadataRequestHandler._validate_shared_secret" for s in spans)
    for span in spans:
        if span.name in vouched:
            assert span.attributes[attr.NOVA_INSTANCE_UUID] == instance["uuid"], span.name


def test_unknown_guest_address_is_404(netcloud, guest):
    with pytest.raises(MetadataNotFound, match="HTTP 404"):
        fetch_metadata(netcloud.w.urls["metadata-proxy"], "10.0.0.200",
                       guest["network"]["id"], netcloud.http)


def test_proxy_needs_the_haproxy_headers(netcloud, guest):
    url = netcloud.w.urls["metadata-proxy"] + "/openstack/latest/meta_data.json"
    assert httpx.get(url).status_code == 400
    assert httpx.get(url, headers={"X-Forwarded-For": "not-an-ip",
                                   "X-Neutron-Network-ID": "x"}).status_code == 400


def test_the_guest_reads_its_user_data_only_when_it_has_some(netcloud, guest):
    """cloud-init's read_v2: meta_data.json, then user_data only if the file list names it
    (no 404 on the guest's span for a server without user data)."""
    proxy, http = netcloud.w.urls["metadata-proxy"], netcloud.w.http("cloud-init")
    meta, user_data = read_v2(proxy, guest["ip"], guest["network"]["id"], http)
    assert meta["uuid"] == guest["instance"]["uuid"] and user_data is None

    demo = netcloud.token("demo")
    text = b"#cloud-config\nhostname: web-2\n"
    instance = nova_db.instance_create(netcloud.w.database("test"), {
        "uuid": str(uuid.uuid4()), "display_name": "Web Server 2",
        "project_id": guest["instance"]["project_id"], "user_id": "u", "flavor_id": "42",
        "flavor_name": "m1.nano", "memory_mb": 64, "vcpus": 1, "root_gb": 1,
        "vm_state": "active", "user_data": base64.b64encode(text).decode()})
    port = netcloud.request("POST", "/ports", demo, json={"port": {
        "network_id": guest["network"]["id"], "device_id": instance["uuid"]}}).json()["port"]
    meta, user_data = read_v2(proxy, port["fixed_ips"][0]["ip_address"],
                              guest["network"]["id"], http)
    assert meta["uuid"] == instance["uuid"] and user_data == text
