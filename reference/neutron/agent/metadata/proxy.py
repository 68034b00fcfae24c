"""neutron-metadata-proxy: what a guest reaches at http://169.254.169.254.

Upstream this is two processes: an haproxy inside the network's namespace,
listening on 169.254.169.254:80, which adds ``X-Neutron-Network-ID`` and
``X-Forwarded-For: <guest address>`` and forwards over a unix socket to
neutron-metadata-agent, which finds the guest's port and forwards to
nova-api-metadata. novalab runs both halves as one HTTP service on loopback.

Who is asking is never taken from the request's headers: a client can send any
``X-Forwarded-For`` or ``X-Neutron-Network-ID``, and upstream's haproxy
overwrites them. What vouches for the guest is where the request comes from.
Each guest stand-in sends from its own loopback address, derived from its port
(``guest_source_address``), so the proxy does the agent's part from the source
address alone:

1. find the port whose guest address the request came from (neutron-server's
   REST API, ``GET /v2.0/ports``, as the neutron service user; upstream's agent
   asks by network and fixed IP, which its namespace vouches for);
2. take the port's network, fixed IP, ``device_id`` (the instance) and project;
3. forward to nova-api-metadata with ``X-Instance-ID``, ``X-Tenant-ID``,
   ``X-Forwarded-For`` and ``X-Instance-ID-Signature`` (HMAC of the instance id
   under the deployment's shared secret).
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable

import httpx
from flask import Flask, Response, request
from opentelemetry import trace

from novalab.reference.common.metadata_secret import guest_source_address, sign_instance_id
from novalab.tracing import attributes as attr
from novalab.tracing.http import instrument_flask
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)

PROXY_BASE = "neutron/agent/metadata/proxy_base.py"
AGENT = "neutron/agent/metadata/agent.py"


def _text(status: int, title: str, message: str) -> Response:
    body = f"<html>\n <head>\n  <title>{status} {title}</title>\n </head>\n <body>\n" \
           f"  <h1>{status} {title}</h1>\n  {message}<br /><br />\n\n\n </body>\n</html>"
    return Response(body, status=status, content_type="text/html; charset=UTF-8")


class MetadataProxyHandler:
    def __init__(self, urls: dict[str, str], http: httpx.Client,
                 service_token: Callable[..., str], tracer, secret: str):
        self.urls = urls  # neutron and metadata URLs, read at request time
        self.http = http
        self.service_token = service_token
        self.tracer = tracer
        self.secret = secret

    def __call__(self) -> Response:
        source = request.remote_addr or ""
        try:
            port = self._port_of_source(source)
            if port is None:
                return _text(404, "Not Found", f"No guest port sends from {source}.")
            instance_id, project_id = self._get_instance_and_project_id(
                port["fixed_ip"], port["network_id"])
            if not instance_id:
                return _text(404, "Not Found",
                             f"Instance was not found on network {port['network_id']}.")
            return self._proxy_request(instance_id, project_id, port["fixed_ip"])
        except Exception:
            LOG.exception("Unexpected error.")
            return _text(500, "Internal Server Error",
                         "An unknown error has occurred. Please try your request again.")

    def _port_of_source(self, source: str) -> dict | None:
        """The guest port whose stand-in sends from ``source`` (what the namespace knows).

        Written by hand: upstream needs no such lookup, because haproxy in the
        network's namespace already knows the network and sees the guest's own IP.
        """
        try:
            if not ipaddress.ip_address(source).is_loopback:
                return None
        except ValueError:
            return None
        for port in self._list("ports", [("fields", f) for f in
                                         ("id", "network_id", "fixed_ips", "device_owner")]):
            if port.get("device_owner", "").startswith("compute:") and port["fixed_ips"] \
                    and guest_source_address(port["id"], self.secret) == source:
                return {"network_id": port["network_id"],
                        "fixed_ip": port["fixed_ips"][0]["ip_address"]}
        return None

    @upstream(PROXY_BASE, "MetadataProxyHandlerBase._get_instance_and_project_id")
    def _get_instance_and_project_id(self, remote_address: str, network_id: str):
        ports = self._get_ports_from_server(remote_address, network_id)
        if len(ports) == 1:
            return ports[0]["device_id"], ports[0]["project_id"]
        if not ports:
            LOG.warning("No port found in network %s with IP address %s", network_id,
                        remote_address)
        return None, None

    @upstream(AGENT, "MetadataProxyHandler._get_ports_from_server")
    def _get_ports_from_server(self, remote_address: str, network_id: str) -> list[dict]:
        return self._list("ports", [("fixed_ips", f"ip_address={remote_address}"),
                                    ("network_id", network_id),
                                    ("fields", "device_id"), ("fields", "project_id")])

    def _list(self, collection: str, params: list) -> list[dict]:
        url = f"{self.urls['neutron']}/v2.0/{collection}"
        response = None
        for attempt in range(2):  # one retry with a fresh token
            response = self.http.get(url, params=params, headers={
                "X-Auth-Token": self.service_token(refresh=attempt > 0)})
            if response.status_code != 401:
                break
        response.raise_for_status()
        return response.json()[collection]

    @upstream("neutron/common/metadata.py",
              "MetadataProxyHandlerBaseSocketServer._proxy_request")
    def _proxy_request(self, instance_id: str, project_id: str, remote_address: str):
        # The instance the proxy vouches for (X-Instance-ID), on its span.
        trace.get_current_span().set_attribute(attr.NOVA_INSTANCE_UUID, instance_id)
        headers = {"X-Forwarded-For": remote_address, "X-Instance-ID": instance_id,
                   "X-Tenant-ID": project_id,
                   "X-Instance-ID-Signature": sign_instance_id(instance_id, self.secret)}
        url = f"{self.urls['metadata']}{request.path}"
        try:
            response = self.http.request(request.method, url, headers=headers,
                                         params=list(request.args.items(multi=True)),
                                         content=request.get_data())
        except httpx.TransportError:
            LOG.warning("The remote metadata server is temporarily unavailable.")
            return _text(503, "Service Unavailable", "The remote metadata server is "
                                                     "temporarily unavailable. Please try "
                                                     "again later.")
        if response.status_code == 403:
            LOG.warning("The remote metadata server responded with Forbidden. This response "
                        "usually occurs when shared secrets do not match.")
        return Response(response.content, status=response.status_code,
                        content_type=response.headers.get("content-type", "text/plain"))


def create_app(handler: MetadataProxyHandler, tracer_provider=None) -> Flask:
    app = Flask("neutron-metadata-proxy")
    if tracer_provider is not None:
        instrument_flask(app, tracer_provider)

    def proxy(path: str = "") -> Response:
        return handler()

    # A guest's POST (its password) passes through to nova-api-metadata untouched.
    proxy.raw_body_reason = "proxied as is to nova-api-metadata, which reads it"
    app.add_url_rule("/", "proxy", proxy, methods=["GET", "POST", "HEAD"])
    app.add_url_rule("/<path:path>", "proxy_path", proxy, methods=["GET", "POST", "HEAD"])
    return app
