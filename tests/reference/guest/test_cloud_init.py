"""The guest stand-in reads its key pair from the metadata service, and the trace shows how.

A server booted with ``key_name`` on an embedded cloud: its cloud-init asks for
``meta_data.json`` through neutron-metadata-proxy, nova-api-metadata serves the
key pair the instance kept, and the guest "installs" it. The fingerprint the
guest computes from what it received must be the one Nova computed at import,
and both must be ``ssh-keygen``'s.
"""

from __future__ import annotations

import time

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from novalab.reference.guest.cloud_init import md5_fingerprint
from novalab.tracing import attributes as attr


def _public_key() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key()
    return key.public_bytes(serialization.Encoding.OpenSSH,
                            serialization.PublicFormat.OpenSSH).decode() + " learner@lab"


def _spans(cloud, trace_id: int, name: str, timeout: float = 15.0) -> list:
    deadline = time.monotonic() + timeout
    while True:
        found = [s for s in cloud.telemetry.finished_spans(trace_id) if s.name == name]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


@pytest.mark.parametrize("topology", ["classic", "modern"])
def test_the_key_reaches_the_guest_through_the_metadata_proxy(cloud_factory, login,
                                                              topology):
    cloud = cloud_factory(topology=topology)
    demo = login(cloud, "demo")
    public_key = _public_key()
    imported = demo.request("POST", f"{demo.compute}/os-keypairs", json={
        "keypair": {"name": "lab-key", "public_key": public_key}})
    assert imported.status_code == 200, imported.text
    fingerprint = imported.json()["keypair"]["fingerprint"]
    made = demo.request("POST", f"{demo.compute}/servers", json={"server": {
        "name": "keyed", "flavorRef": "42", "imageRef": cloud.cirros["id"],
        "key_name": "lab-key"}})
    assert made.status_code == 202, made.text
    server_id = made.json()["server"]["id"]
    assert demo.client.wait_for_server(server_id)["status"] == "ACTIVE"
    assert cloud.wait_idle()

    # What the guest read, and what it would install.
    assert cloud.guests.results[server_id]["public_keys"] == {"lab-key": public_key}
    spans = cloud.telemetry.finished_spans()
    (installed,) = [s for s in spans if s.name == "ssh_util.setup_user_keys"
                    and s.resource.attributes["service.name"] == "cloud-init"]
    assert installed.attributes[attr.NOVA_KEYPAIR_NAME] == "lab-key"
    assert installed.attributes[attr.NOVA_KEYPAIR_FINGERPRINT] == fingerprint == \
        md5_fingerprint(public_key)
    assert installed.attributes[attr.CODE_FUNCTION_NAME] == \
        "cloudinit.ssh_util.setup_user_keys"

    # In the boot's trace: the guest's request for meta_data.json went through the
    # proxy, which forwarded it to nova-api-metadata, which served the key.
    by_id = {s.context.span_id: s for s in cloud.telemetry.finished_spans(
        installed.context.trace_id)}
    (served,) = [s for s in _spans(cloud, installed.context.trace_id,
                                   "InstanceMetadata._metadata_as_json")]
    assert served.attributes[attr.NOVA_KEYPAIR_NAME] == "lab-key"
    assert served.attributes[attr.NOVA_KEYPAIR_FINGERPRINT] == fingerprint
    chain, span = [], served
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        chain.append((span.resource.attributes["service.name"], span.kind.name,
                      span.name if span.kind.name == "INTERNAL" else ""))
    assert chain[:8] == [
        ("nova-api-metadata", "INTERNAL", "InstanceMetadata.lookup"),
        ("nova-api-metadata", "SERVER", ""),                 # step 53
        ("neutron-metadata-proxy", "CLIENT", ""),
        ("neutron-metadata-proxy", "INTERNAL",
         "MetadataProxyHandlerBaseSocketServer._proxy_request"),
        ("neutron-metadata-proxy", "SERVER", ""),            # step 52
        ("cloud-init", "CLIENT", ""),
        ("cloud-init", "INTERNAL", "MetadataReader.read_v2"),
        ("cloud-init", "INTERNAL", "cloud-init init"),
    ], chain
    # The guest installs the key in the same first boot, after reading it.
    assert by_id[installed.parent.span_id].name == "cloud-init init"
    # Nova's own record of the key at import carries the same fingerprint.
    (created,) = [s for s in spans if s.name == "KeypairAPI.import_key_pair"]
    assert created.attributes[attr.NOVA_KEYPAIR_FINGERPRINT] == fingerprint
