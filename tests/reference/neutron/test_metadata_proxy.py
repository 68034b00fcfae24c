"""The guest's metadata request: cloud-init -> metadata proxy -> nova-api-metadata."""

from __future__ import annotations

import base64
import uuid

import httpx
import pytest

from novalab.reference.common.metadata_secret import (
    guest_source_address,
    shared_secret,
    sign_instance_id,
)
from novalab.reference.guest.metadata import MetadataNotFound, fetch_metadata, read_v2
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
        "network_id": network["id"], "device_id": instance["uuid"],
        "device_owner": "compute:nova"}}).json()["port"]
    return {"instance": instance, "network": network, "port": port,
            "ip": port["fixed_ips"][0]["ip_address"]}


def as_guest(netcloud, port) -> httpx.Client:
    """An HTTP client sending from the loopback address of ``port``'s guest."""
    source = guest_source_address(port["id"], shared_secret(netcloud.w.config.state_dir))
    return netcloud.w.http("cloud-init", local_address=source)


def test_meta_data_through_the_proxy(netcloud, guest):
    tracer = netcloud.w.tracer("cloud-init")
    http = as_guest(netcloud, guest["port"])
    meta = fetch_metadata(netcloud.w.urls["metadata-proxy"], http, tracer=tracer)
    instance = guest["instance"]
    assert meta["uuid"] == instance["uuid"]
    assert meta["name"] == "Web Server 1" and meta["hostname"] == "web-server-1.novalocal"
    assert meta["project_id"] == instance["project_id"]
    assert meta["meta"] == {"role": "web"}
    assert meta["devices"] == [] and meta["launch_index"] == 0
    assert "keys" not in meta  # booted without a key pair: upstream sends no keys at all

    network_data = fetch_metadata(netcloud.w.urls["metadata-proxy"], http,
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


def test_an_address_no_guest_sends_from_is_404(netcloud, guest):
    with pytest.raises(MetadataNotFound, match="HTTP 404"):
        fetch_metadata(netcloud.w.urls["metadata-proxy"], netcloud.http)
    stranger = netcloud.w.http("stranger", local_address="127.9.9.9")
    with pytest.raises(MetadataNotFound, match="HTTP 404"):
        fetch_metadata(netcloud.w.urls["metadata-proxy"], stranger)


def test_client_sent_identity_headers_reach_no_ones_user_data(netcloud, guest):
    """The attack of issue 10: with no credentials, a client named another project's guest
    in X-Forwarded-For and X-Neutron-Network-ID and the proxy served its user data."""
    text = b"#cloud-config\npassword: victim-secret\n"
    victim_project = netcloud.keystone.validate_token(
        netcloud.token("alt_demo"), include_catalog=False)["project"]["id"]
    instance = nova_db.instance_create(netcloud.w.database("test"), {
        "uuid": str(uuid.uuid4()), "display_name": "victim", "project_id": victim_project,
        "user_id": "u", "flavor_id": "42", "flavor_name": "m1.nano", "memory_mb": 64,
        "vcpus": 1, "root_gb": 1, "vm_state": "active",
        "user_data": base64.b64encode(text).decode()})
    admin = netcloud.token("admin", "admin")
    port = netcloud.request("POST", "/ports", admin, json={"port": {
        "network_id": guest["network"]["id"], "device_id": instance["uuid"],
        "device_owner": "compute:nova", "project_id": victim_project}}).json()["port"]
    forged = {"X-Forwarded-For": port["fixed_ips"][0]["ip_address"],
              "X-Neutron-Network-ID": guest["network"]["id"],
              "X-Instance-ID": instance["uuid"], "X-Tenant-ID": victim_project}
    url = netcloud.w.urls["metadata-proxy"] + "/openstack/latest/user_data"
    answer = httpx.get(url, headers=forged)
    assert answer.status_code == 404 and b"victim-secret" not in answer.content
    # From another guest's address, the headers change nothing: it gets its own (none).
    mine = as_guest(netcloud, guest["port"]).get(url, headers=forged)
    assert mine.status_code == 404 and b"victim-secret" not in mine.content
    # The victim's guest, from its own address, does get it.
    assert as_guest(netcloud, port).get(url).content == text


def test_nova_metadata_refuses_the_old_default_secret(netcloud, guest):
    """The other half: nova-api-metadata accepted an HMAC made with a well-known secret."""
    instance_id = guest["instance"]["uuid"]
    headers = {"X-Instance-ID": instance_id, "X-Tenant-ID": guest["instance"]["project_id"],
               "X-Forwarded-For": guest["ip"]}
    url = netcloud.w.urls["metadata"] + "/openstack/latest/meta_data.json"
    for secret in ("novalab-metadata-secret", ""):
        forged = httpx.get(url, headers=dict(
            headers, **{"X-Instance-ID-Signature": sign_instance_id(instance_id, secret)}))
        assert forged.status_code == 403
    real = shared_secret(netcloud.w.config.state_dir)
    assert len(real) == 64
    signed = httpx.get(url, headers=dict(
        headers, **{"X-Instance-ID-Signature": sign_instance_id(instance_id, real)}))
    assert signed.status_code == 200 and signed.json()["uuid"] == instance_id


def test_the_secret_is_the_deployments_own_and_private(netcloud, tmp_path):
    secret = shared_secret(netcloud.w.config.state_dir)
    assert shared_secret(netcloud.w.config.state_dir) == secret
    assert shared_secret(tmp_path) != secret
    mode = (tmp_path / "metadata_proxy_shared_secret").stat().st_mode & 0o777
    assert mode == 0o600


def test_the_guest_reads_its_user_data_only_when_it_has_some(netcloud, guest):
    """cloud-init's read_v2: meta_data.json, then user_data only if the file list names it
    (no 404 on the guest's span for a server without user data)."""
    proxy = netcloud.w.urls["metadata-proxy"]
    meta, user_data = read_v2(proxy, as_guest(netcloud, guest["port"]))
    assert meta["uuid"] == guest["instance"]["uuid"] and user_data is None

    demo = netcloud.token("demo")
    text = b"#cloud-config\nhostname: web-2\n"
    instance = nova_db.instance_create(netcloud.w.database("test"), {
        "uuid": str(uuid.uuid4()), "display_name": "Web Server 2",
        "project_id": guest["instance"]["project_id"], "user_id": "u", "flavor_id": "42",
        "flavor_name": "m1.nano", "memory_mb": 64, "vcpus": 1, "root_gb": 1,
        "vm_state": "active", "user_data": base64.b64encode(text).decode()})
    port = netcloud.request("POST", "/ports", demo, json={"port": {
        "network_id": guest["network"]["id"], "device_id": instance["uuid"],
        "device_owner": "compute:nova"}}).json()["port"]
    meta, user_data = read_v2(proxy, as_guest(netcloud, port))
    assert meta["uuid"] == instance["uuid"] and user_data == text
