"""nova-api-metadata on its own: the signature check, the tenant check, the trees it serves."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from novalab.reference.common.db import Base, Database
from novalab.reference.common.metadata_secret import shared_secret, sign_instance_id
from novalab.reference.common.wiring import CloudConfig, Wiring
from novalab.reference.nova import service
from novalab.reference.nova.db import api as db_api
from novalab.reference.nova.db import models as _nova_models  # noqa: F401 (tables)
from novalab.tracing.setup import Telemetry


@pytest.fixture(scope="module")
def metadata(tmp_path_factory):
    telemetry = Telemetry(memory=True, otlp=False)
    w = Wiring(CloudConfig(state_dir=tmp_path_factory.mktemp("md")), telemetry)
    db = Database(w.config.db_url)
    Base.metadata.create_all(db.engine)
    spec = {"display_name": "db_1", "project_id": "proj-1", "user_id": "u", "flavor_id": "42",
            "flavor_name": "m1.nano", "memory_mb": 64, "vcpus": 1, "root_gb": 1,
            "vm_state": "active", "availability_zone": "az1"}
    instance = db_api.instance_create(db, dict(spec, uuid=str(uuid.uuid4())))
    cached = db_api.instance_create(db, dict(spec, uuid=str(uuid.uuid4())))
    KEYED.update(db_api.instance_create(db, dict(
        spec, uuid=str(uuid.uuid4()), key_name="laptop", key_data=PUBLIC_KEY,
        keypairs=[{"name": "laptop", "user_id": "u", "type": "ssh", "public_key": PUBLIC_KEY,
                   "fingerprint": "aa:bb"}])))
    ORPHAN.update(db_api.instance_create(db, dict(
        spec, uuid=str(uuid.uuid4()), key_name="gone", key_data=PUBLIC_KEY)))
    db_api.instance_info_cache_update(db, cached["uuid"], [STATIC_VIF])
    db.dispose()
    url = service.nova_api_metadata(w)  # no neutron here: only the cache describes networks
    SECRET["value"] = shared_secret(w.config.state_dir)
    yield url, instance, cached
    w.close()
    telemetry.shutdown()


STATIC_VIF = {
    "id": "5f2c3c0e-2a5e-4a4e-8d3e-1b2c3d4e5f60", "address": "fa:16:3e:12:34:56",
    "type": "bridge", "devname": "tap5f2c3c0e-2a",
    "network": {"id": "net-1", "label": "private", "bridge": "brqnet-1", "meta": {"mtu": 1450},
                "subnets": [{"cidr": "10.0.0.0/24", "version": 4, "meta": {},
                             "gateway": {"address": "10.0.0.1"}, "routes": [],
                             "dns": [{"address": "9.9.9.9"}],
                             "ips": [{"address": "10.0.0.7", "type": "fixed"}]}]}}


SECRET: dict[str, str] = {}  # the module cloud's metadata_proxy_shared_secret
KEYED: dict = {}  # an instance booted with the key pair "laptop"
ORPHAN: dict = {}  # one with a key name and data, but no pair kept
PUBLIC_KEY = ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHc2eXk1ZGh0bGx2c3E0bW9uZ2J2d2VyZnV3N2h4 "
              "me@laptop\n")


def sign(instance_id: str) -> str:
    return sign_instance_id(instance_id, SECRET["value"])


def proxied(instance, signature=None, tenant=None, **extra):
    headers = {"X-Instance-ID": instance["uuid"], "X-Tenant-ID": tenant or
               instance["project_id"], "X-Forwarded-For": "10.0.0.3",
               "X-Instance-ID-Signature": signature if signature is not None
               else sign(instance["uuid"])}
    headers.update(extra)
    return {k: v for k, v in headers.items() if v != "-"}


def test_signed_request_gets_meta_data(metadata):
    url, instance, _cached = metadata
    response = httpx.get(f"{url}/openstack/latest/meta_data.json", headers=proxied(instance))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    meta = response.json()
    assert meta["uuid"] == instance["uuid"]
    assert (meta["name"], meta["hostname"]) == ("db_1", "db-1.novalocal")
    assert meta["availability_zone"] == "az1" and meta["project_id"] == "proj-1"
    assert meta["devices"] == []
    # No instance metadata, no key pair: no key for either, as upstream.
    assert "meta" not in meta and "keys" not in meta and "public_keys" not in meta
    assert "public-keys/" not in httpx.get(f"{url}/latest/meta-data/",
                                           headers=proxied(instance)).text.splitlines()


def test_bad_or_empty_signature_is_403(metadata):
    url, instance, _cached = metadata
    for signature in (sign_instance_id(instance["uuid"], "wrong"), ""):
        response = httpx.get(f"{url}/openstack/latest/meta_data.json",
                             headers=proxied(instance, signature=signature))
        assert response.status_code == 403
        assert "Invalid proxy request signature" in response.text
    # Signed for another instance: also refused.
    other = sign(str(uuid.uuid4()))
    assert httpx.get(f"{url}/openstack", headers=proxied(instance, signature=other)) \
        .status_code == 403


def test_missing_headers_are_400_as_upstream(metadata):
    url, instance, _cached = metadata
    for missing in ("X-Instance-ID-Signature", "X-Instance-ID", "X-Tenant-ID"):
        headers = proxied(instance, **{missing: "-"})
        response = httpx.get(f"{url}/openstack", headers=headers)
        assert response.status_code == 400, missing
        assert f"{missing} header is missing" in response.text


def test_wrong_tenant_or_unknown_instance_is_404(metadata):
    url, instance, _cached = metadata
    assert httpx.get(f"{url}/openstack", headers=proxied(instance, tenant="other")) \
        .status_code == 404
    ghost = dict(instance, uuid=str(uuid.uuid4()))
    assert httpx.get(f"{url}/openstack", headers=proxied(ghost)).status_code == 404


def test_listings_and_ec2_tree(metadata):
    url, instance, _cached = metadata
    headers = proxied(instance)
    versions = httpx.get(f"{url}/openstack", headers=headers).text.splitlines()
    assert versions[0] == "2012-08-10" and versions[-1] == "latest"
    files = httpx.get(f"{url}/openstack/latest", headers=headers).text.splitlines()
    assert "meta_data.json" in files and "network_data.json" in files
    network_data = httpx.get(f"{url}/openstack/latest/network_data.json", headers=headers)
    assert json.loads(network_data.text) == {"links": [], "networks": [], "services": []}
    ec2 = httpx.get(f"{url}/latest/meta-data/", headers=headers).text.splitlines()
    assert "instance-id" in ec2 and "placement/" in ec2
    assert httpx.get(f"{url}/latest/meta-data/instance-id", headers=headers).text == \
        f"i-{instance['id']:08x}"
    assert httpx.get(f"{url}/latest/meta-data/placement/availability-zone",
                     headers=headers).text == "az1"
    assert httpx.get(f"{url}/openstack/1999-01-01/meta_data.json",
                     headers=headers).status_code == 404
    assert httpx.get(f"{url}/").text.splitlines()[-1] == "latest"  # no headers needed


def test_network_data_from_the_info_cache(metadata):
    url, _instance, cached = metadata
    response = httpx.get(f"{url}/openstack/latest/network_data.json", headers=proxied(cached))
    assert response.json() == {
        "links": [{"id": "tap5f2c3c0e-2a", "vif_id": STATIC_VIF["id"], "type": "bridge",
                   "mtu": 1450, "ethernet_mac_address": "fa:16:3e:12:34:56"}],
        "networks": [{"id": "network0", "type": "ipv4", "link": "tap5f2c3c0e-2a",
                      "ip_address": "10.0.0.7", "netmask": "255.255.255.0",
                      "routes": [{"network": "0.0.0.0", "netmask": "0.0.0.0",
                                  "gateway": "10.0.0.1"}],
                      "network_id": "net-1",
                      "services": [{"type": "dns", "address": "9.9.9.9"}]}],
        "services": [{"type": "dns", "address": "9.9.9.9"}]}
    assert httpx.get(f"{url}/latest/meta-data/local-ipv4", headers=proxied(cached)).text == \
        "10.0.0.7"


def test_a_key_pair_is_served_as_upstream_serves_it(metadata):
    """meta_data.json's public_keys and keys; EC2's public-keys tree with its odd listing."""
    url, _instance, _cached = metadata
    headers = proxied(KEYED)
    meta = httpx.get(f"{url}/openstack/latest/meta_data.json", headers=headers).json()
    assert meta["public_keys"] == {"laptop": PUBLIC_KEY}
    assert meta["keys"] == [{"name": "laptop", "type": "ssh", "data": PUBLIC_KEY}]
    ec2 = f"{url}/latest/meta-data"
    assert "public-keys/" in httpx.get(f"{ec2}/", headers=headers).text.splitlines()
    assert httpx.get(f"{ec2}/public-keys/", headers=headers).text == "0=laptop"
    assert httpx.get(f"{ec2}/public-keys/0/", headers=headers).text == "openssh-key"
    key = httpx.get(f"{ec2}/public-keys/0/openssh-key", headers=headers)
    assert (key.status_code, key.text) == (200, PUBLIC_KEY)
    assert httpx.get(f"{ec2}/public-keys/1/openssh-key", headers=headers).status_code == 404
    # The oldest EC2 version has the key too.
    assert httpx.get(f"{url}/1.0/meta-data/public-keys/0/openssh-key",
                     headers=headers).text == PUBLIC_KEY



def test_a_key_name_without_its_pair_serves_no_keys_json(metadata):
    """An instance with a key name but no pair kept (upstream: lazy-loading found none)
    has no keys in meta_data.json; the EC2 tree reads key_name and key_data alone."""
    url, _instance, _cached = metadata
    headers = proxied(ORPHAN)
    meta = httpx.get(f"{url}/openstack/latest/meta_data.json", headers=headers).json()
    assert "public_keys" not in meta and "keys" not in meta
    assert httpx.get(f"{url}/latest/meta-data/public-keys/", headers=headers).text == "0=gone"
