"""nova-api-metadata: what a guest learns about itself (``nova/api/metadata``).

Requests come from neutron's metadata proxy (``service_metadata_proxy = True``),
which has already found the instance from the guest's address and says so in
headers: ``X-Instance-ID``, ``X-Tenant-ID``, ``X-Forwarded-For`` and
``X-Instance-ID-Signature``, an HMAC-SHA256 of the instance id under the secret
both services share. The handler checks the signature with
``hmac.compare_digest`` (a missing header is 400, a wrong or empty signature
403, as upstream), reads the instance from nova's database, checks that
``X-Tenant-ID`` is its project (else 404), and serves:

* ``/openstack`` (the versions), ``/openstack/<version>`` (the files),
  ``/openstack/<version>/meta_data.json``, ``network_data.json`` (built from the
  instance's network info cache, or from neutron while there is none yet),
  ``vendor_data.json``, ``user_data``;
* the EC2 tree: ``/<version>/meta-data/`` and a few keys (``instance-id``,
  ``hostname``, ``local-ipv4``, ``instance-type``, ``placement/availability-zone``...).

A server booted with a key pair (``--key-name``) is served the copy of the pair it
keeps (``instances.key_data``, ``keypairs``): in ``meta_data.json`` as
``public_keys`` (name to key) and ``keys`` (name, type, data), and in the EC2
tree as ``public-keys/`` listing ``0=<name>`` and ``public-keys/0/openssh-key``.
That is how a guest's cloud-init finds the key to put in ``authorized_keys``.

Left out: passwords, vendordata drivers, device tags, the config drive and the
metadata cache.
"""

from __future__ import annotations

import base64
import hmac
import ipaddress
import json
import logging
import os
import posixpath
import re
from datetime import date

from flask import Flask, Response, request
from opentelemetry import trace
from werkzeug.exceptions import HTTPException

from novalab.reference.common import exception
from novalab.reference.common.context import get_admin_context
from novalab.reference.common.db import Database
from novalab.reference.common.metadata_secret import sign_instance_id
from novalab.reference.nova.db import api as db_api
from novalab.tracing import attributes as attr
from novalab.tracing.http import instrument_flask
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)

HANDLER = "nova/api/metadata/handler.py"
BASE = "nova/api/metadata/base.py"

# EC2 and OpenStack metadata versions (nova/api/metadata/base.py).
VERSIONS = ["1.0", "2007-01-19", "2007-03-01", "2007-08-29", "2007-10-10", "2007-12-15",
            "2008-02-01", "2008-09-01", "2009-04-04"]
GRIZZLY, LIBERTY, NEWTON_ONE, VICTORIA = "2013-04-04", "2015-10-15", "2016-06-30", "2020-10-14"
OPENSTACK_VERSIONS = ["2012-08-10", GRIZZLY, "2013-10-17", LIBERTY, NEWTON_ONE, "2016-10-06",
                      "2017-02-22", "2018-08-27", VICTORIA, "2025-04-04"]
DHCP_DOMAIN = "novalocal"  # CONF.api.dhcp_domain


class InvalidMetadataPath(Exception):
    pass


def _text(status: int, title: str, explanation: str = "") -> Response:
    """A webob-style plain error page, as upstream's ``HTTPForbidden(explanation=…)``."""
    return Response(f"{status} {title}\n\n{explanation}\n\n   ", status=status,
                    content_type="text/plain; charset=UTF-8")


def ec2_md_print(data) -> str:
    """A listing: a dict's keys (``key/`` for a subtree, or the subtree's ``_name``)."""
    if isinstance(data, dict):
        return "\n".join(str(data[k]["_name"]) if isinstance(data[k], dict) and "_name" in data[k]
                         else f"{k}/" if isinstance(data[k], dict) else k
                         for k in sorted(data) if k != "_name")
    if isinstance(data, list):
        return "\n".join(data)
    return data if isinstance(data, str) else str(data)


def sanitize_hostname(name: str) -> str:
    """nova.utils.sanitize_hostname, in short: lower case, [a-z0-9-], at most 63."""
    name = re.sub(r"[ _.]", "-", (name or "").lower())
    name = re.sub(r"[^\w.-]+", "", name, flags=re.ASCII).strip(".-")
    return name[:63] or "server"


def get_network_metadata(network_info: list[dict]) -> dict:
    """``network_data.json`` (``nova/virt/netutils.py`` ``get_network_metadata``)."""
    links, nets, services = [], [], []
    for index, vif in enumerate(network_info):
        subnets = [s for s in vif["network"]["subnets"] if s["version"] == 4]
        if not subnets:
            continue
        link = {"id": vif.get("devname") or f"interface{index}", "vif_id": vif["id"],
                "type": vif.get("type") if vif.get("type") == "bridge" else "phy",
                "mtu": None if any(s["meta"].get("dhcp_server") for s in subnets)
                else vif["network"]["meta"].get("mtu"),
                "ethernet_mac_address": vif["address"]}
        links.append(link)
        subnet = subnets[0]
        if not subnet["ips"]:
            continue
        net_id = f"network{len(nets)}"
        if subnet["meta"].get("dhcp_server"):
            nets.append({"id": net_id, "type": "ipv4_dhcp", "link": link["id"],
                         "network_id": vif["network"]["id"]})
        else:
            cidr = ipaddress.ip_network(subnet["cidr"])
            gateway = (subnet.get("gateway") or {}).get("address")
            nets.append({"id": net_id, "type": "ipv4", "link": link["id"],
                         "ip_address": subnet["ips"][0]["address"],
                         "netmask": str(cidr.netmask),
                         "routes": [{"network": "0.0.0.0", "netmask": "0.0.0.0",
                                     "gateway": gateway}] if gateway else [],
                         "network_id": vif["network"]["id"],
                         "services": [{"type": "dns", "address": d["address"]}
                                      for d in subnet["dns"]]})
        services += [{"type": "dns", "address": d["address"]} for d in subnet["dns"]
                     if {"type": "dns", "address": d["address"]} not in services]
    return {"links": links, "networks": nets, "services": services}


class InstanceMetadata:
    """One instance's metadata tree (``nova.api.metadata.base.InstanceMetadata``)."""

    def __init__(self, db: Database, instance: dict, address: str | None, network_api,
                 tracer):
        self.db = db
        self.instance = instance
        self.address = address
        self.network_api = network_api
        self.tracer = tracer
        self.mimetype = "text/plain"
        self._network_info = None

    @property
    def network_info(self) -> list[dict]:
        """The instance's VIFs: its network info cache, as upstream reads them.

        An instance whose compute host has not saved a cache yet is described by
        asking neutron (``get_instance_nw_info``), which is what fills the cache.
        """
        if self._network_info is None:
            cached = db_api.instance_info_cache_get_by_instances(
                self.db, [self.instance["uuid"]]).get(self.instance["uuid"])
            if cached:
                self._network_info = cached
            elif self.network_api is not None:
                self._network_info = self.network_api.get_instance_nw_info(
                    get_admin_context(), self.instance)
            else:
                self._network_info = []
        return self._network_info

    def _hostname(self) -> str:
        return f"{sanitize_hostname(self.instance['display_name'])}.{DHCP_DOMAIN}"

    @property
    def availability_zone(self) -> str:
        return self.instance.get("availability_zone") or "nova"

    @upstream(BASE, "InstanceMetadata.lookup")
    def lookup(self, path: str):
        path = posixpath.normpath("/" + path.lstrip("/"))
        tokens = [t for t in path.split("/")[1:] if t]
        self.mimetype = "text/plain"
        if not tokens or tokens[0] not in ("ec2", "openstack"):
            tokens = ["ec2", *tokens]
        if len(tokens) == 1:
            if tokens[0] == "openstack":
                today = date.today().isoformat()
                return [v for v in OPENSTACK_VERSIONS if v <= today] + ["latest"]
            return [*VERSIONS, "latest"]
        try:
            if tokens[0] == "openstack":
                return self._openstack_item(tokens[1:])
            return self._ec2_item(tokens[1:])
        except (KeyError, IndexError) as exc:
            raise InvalidMetadataPath(path) from exc

    def _openstack_item(self, tokens: list[str]):
        version = OPENSTACK_VERSIONS[-1] if tokens[0] == "latest" else tokens[0]
        if version not in OPENSTACK_VERSIONS:
            raise KeyError(version)
        if len(tokens) == 1:
            files = ["meta_data.json"]
            if self.instance.get("user_data"):
                files.append("user_data")
            return [*files, "vendor_data.json", "network_data.json"]
        name = "/".join(tokens[1:])
        if name == "meta_data.json":
            return self._metadata_as_json(version)
        if name == "network_data.json":
            self.mimetype = "application/json"
            return json.dumps(get_network_metadata(self.network_info))
        if name == "vendor_data.json":
            self.mimetype = "application/json"
            return json.dumps({})
        if name == "user_data" and self.instance.get("user_data"):
            return base64.b64decode(self.instance["user_data"])
        raise KeyError(name)

    @upstream(BASE, "InstanceMetadata._metadata_as_json")
    def _metadata_as_json(self, version: str) -> str:
        instance = self.instance
        metadata = {"uuid": instance["uuid"]}
        if instance.get("metadata"):
            metadata["meta"] = instance["metadata"]
        keypair = self._keypair()
        if keypair:
            metadata["public_keys"] = {keypair["name"]: keypair["public_key"]}
            metadata["keys"] = [{"name": keypair["name"], "type": keypair["type"],
                                 "data": keypair["public_key"]}]
        metadata.update({"hostname": self._hostname(), "name": instance["display_name"],
                         "launch_index": instance.get("launch_index") or 0,
                         "availability_zone": self.availability_zone})
        if version >= GRIZZLY:
            metadata["random_seed"] = base64.b64encode(os.urandom(512)).decode()
        if version >= LIBERTY:
            metadata["project_id"] = instance["project_id"]
        if version >= NEWTON_ONE:
            metadata["devices"] = []
        if version >= VICTORIA:
            metadata["dedicated_cpus"] = []
        self.mimetype = "application/json"
        return json.dumps(metadata)

    def _keypair(self) -> dict | None:
        """The key pair the instance keeps (``instance.keypairs[0]``), if it has one."""
        if not self.instance.get("key_name"):
            return None
        keypair = (self.instance.get("keypairs") or [None])[0]
        if keypair is None:
            LOG.debug("Unable to find keypair for instance with key name '%s'.",
                      self.instance["key_name"])
            return None
        # What the guest is being handed, for a learner to follow to its cloud-init.
        span = trace.get_current_span()
        span.set_attribute(attr.NOVA_KEYPAIR_NAME, keypair["name"])
        span.set_attribute(attr.NOVA_KEYPAIR_FINGERPRINT, keypair.get("fingerprint") or "")
        return keypair

    def _ec2_item(self, tokens: list[str]):
        version = VERSIONS[-1] if tokens[0] == "latest" else tokens[0]
        if version not in VERSIONS:
            raise KeyError(version)
        fixed = [ip["address"] for vif in self.network_info
                 for s in vif["network"]["subnets"] for ip in s["ips"]]
        meta = {"ami-launch-index": str(self.instance.get("launch_index") or 0),
                "hostname": self._hostname(), "local-hostname": self._hostname(),
                "instance-id": f"i-{self.instance['id']:08x}",
                "instance-type": self.instance["flavor_name"],
                "local-ipv4": fixed[0] if fixed else (self.address or ""),
                "placement": {"availability-zone": self.availability_zone},
                "instance-action": "none"}
        # EC2 renders public keys strangely: public-keys/ lists "0=<name>" (no
        # slash), public-keys/0/ lists "openssh-key", which is the key itself.
        if self.instance.get("key_name"):
            meta["public-keys"] = {"0": {"_name": f"0={self.instance['key_name']}",
                                         "openssh-key": self.instance.get("key_data") or ""}}
        data = {"meta-data": meta}
        if self.instance.get("user_data"):
            data["user-data"] = base64.b64decode(self.instance["user_data"])
        for token in tokens[1:]:
            data = data[token]
        return data


class MetadataRequestHandler:
    """The WSGI handler (``nova.api.metadata.handler.MetadataRequestHandler``)."""

    def __init__(self, db: Database, network_api, tracer, secret: str):
        self.db = db
        self.network_api = network_api
        self.tracer = tracer
        self.secret = secret

    def __call__(self, path: str = "") -> Response:
        if posixpath.normpath("/" + path) == "/":
            return Response(ec2_md_print([*VERSIONS, "latest"]), content_type="text/plain")
        try:
            meta_data = self._handle_instance_id_request()
        except _HTTPError as err:
            return err.response
        if meta_data is None:
            return _text(404, "Not Found", "The resource could not be found.")
        try:
            data = meta_data.lookup(path)
        except InvalidMetadataPath:
            return _text(404, "Not Found", "The resource could not be found.")
        body = data if isinstance(data, bytes) else ec2_md_print(data)
        return Response(body, content_type=meta_data.mimetype)

    @upstream(HANDLER, "MetadataRequestHandler._handle_instance_id_request")
    def _handle_instance_id_request(self) -> InstanceMetadata | None:
        headers = request.headers
        instance_id = headers.get("X-Instance-ID")
        tenant_id = headers.get("X-Tenant-ID")
        signature = headers.get("X-Instance-ID-Signature")
        remote_address = headers.get("X-Forwarded-For")
        if instance_id is None:
            msg = "X-Instance-ID header is missing from request."
        elif signature is None:
            msg = "X-Instance-ID-Signature header is missing from request."
        elif tenant_id is None:
            msg = "X-Tenant-ID header is missing from request."
        elif len(headers.getlist("X-Instance-ID")) > 1:
            msg = "Multiple X-Instance-ID headers found within request."
        elif len(headers.getlist("X-Tenant-ID")) > 1:
            msg = "Multiple X-Tenant-ID headers found within request."
        else:
            msg = None
        if msg:
            raise _HTTPError(_text(400, "Bad Request", msg))
        # The instance the proxy says is asking (X-Instance-ID), before it is trusted.
        trace.get_current_span().set_attribute(attr.NOVA_INSTANCE_UUID, instance_id)
        self._validate_shared_secret(instance_id, signature, remote_address)
        return self._get_meta_by_instance_id(instance_id, tenant_id, remote_address)

    @upstream(HANDLER, "MetadataRequestHandler._validate_shared_secret")
    def _validate_shared_secret(self, requestor_id: str, signature: str,
                                requestor_address: str | None) -> None:
        expected = sign_instance_id(requestor_id, self.secret)
        if not signature or not hmac.compare_digest(expected, signature):
            LOG.warning("X-Instance-ID-Signature: %s does not match the expected signature "
                        "for id: %s. Request From: %s", signature, requestor_id,
                        requestor_address)
            raise _HTTPError(_text(403, "Forbidden", "Invalid proxy request signature."))

    @upstream(HANDLER, "MetadataRequestHandler.get_metadata_by_instance_id")
    def _get_meta_by_instance_id(self, instance_id: str, tenant_id: str,
                                 remote_address: str | None) -> InstanceMetadata | None:
        try:
            instance = db_api.instance_get_by_uuid(self.db, instance_id)
        except exception.InstanceNotFound:
            LOG.error("Failed to get metadata for instance id: %s", instance_id)
            return None
        if instance["project_id"] != tenant_id:
            LOG.warning("Tenant_id %s does not match tenant_id of instance %s.", tenant_id,
                        instance_id)
            return None
        return InstanceMetadata(self.db, instance, remote_address, self.network_api,
                                self.tracer)


class _HTTPError(Exception):
    def __init__(self, response: Response):
        super().__init__(response.status)
        self.response = response


def create_app(db: Database, network_api, tracer, secret: str, tracer_provider=None) -> Flask:
    """The nova-api-metadata WSGI app; ``network_api`` may be None (no network_data).

    ``secret`` is the deployment's ``metadata_proxy_shared_secret``: a request
    whose ``X-Instance-ID-Signature`` is not the HMAC of its instance id under it
    is a 403."""
    app = Flask("nova-api-metadata")
    if tracer_provider is not None:
        instrument_flask(app, tracer_provider)
    handler = MetadataRequestHandler(db, network_api, tracer, secret)
    app.add_url_rule("/", "root", handler, methods=["GET", "HEAD"])
    app.add_url_rule("/<path:path>", "metadata", handler, methods=["GET", "HEAD"])

    @app.errorhandler(Exception)
    def _unexpected(exc):
        if isinstance(exc, HTTPException):
            return _text(exc.code or 500, exc.name, exc.description or "")
        LOG.exception("Unexpected error in %s", request.path)
        return _text(500, "Internal Server Error",
                     "An unknown error has occurred. Please try your request again.")

    return app
