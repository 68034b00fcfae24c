"""neutron-metadata-proxy: what a guest reaches at http://169.254.169.254.

Upstream this is two processes: an haproxy inside the network's namespace,
listening on 169.254.169.254:80, which adds ``X-Neutron-Network-ID`` and
``X-Forwarded-For: <guest address>`` and forwards over a unix socket to
neutron-metadata-agent, which finds the guest's port and forwards to
nova-api-metadata. novalab runs both halves as one HTTP service on loopback.

On loopback every guest's source address is 127.0.0.1, so the guest (see
``guest_agent.py``) sends the two headers haproxy would have added itself. The
proxy then does the agent's part:

1. find the port with that fixed IP on that network (neutron-server's REST API,
   ``GET /v2.0/ports?fixed_ips=ip_address=…&network_id=…``, as the neutron service
   user; upstream's agent asks over RPC, older ones used this same REST call);
2. take the port's ``device_id`` as the instance id and its project;
3. forward to nova-api-metadata with ``X-Instance-ID``, ``X-Tenant-ID``,
   ``X-Forwarded-For`` and ``X-Instance-ID-Signature`` (HMAC of the instance id).
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable

import httpx
from flask import Flask, Response, request
from opentelemetry import trace

from novalab.reference.neutron.agent.metadata import sign_instance_id
from novalab.tracing import attributes as attr
from novalab.tracing.http import instrument_flask
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)

NETWORK_ID_HEADER = "X-Neutron-Network-ID"
PROXY_BASE = "neutron/agent/metadata/proxy_base.py"
AGENT = "neutron/agent/metadata/agent.py"


def _text(status: int, title: str, message: str) -> Response:
    body = f"<html>\n <head>\n  <title>{status} {title}</title>\n </head>\n <body>\n" \
           f"  <h1>{status} {title}</h1>\n  {message}<br /><br />\n\n\n </body>\n</html>"
    return Response(body, status=status, content_type="text/html; charset=UTF-8")


class MetadataProxyHandler:
    def __init__(self, urls: dict[str, str], http: httpx.Client,
                 service_token: Callable[..., str], tracer):
        self.urls = urls  # neutron and metadata URLs, read at request time
        self.http = http
        self.service_token = service_token
        self.tracer = tracer

    def __call__(self) -> Response:
        forwarded_for = request.headers.get("X-Forwarded-For", "").split(",")[0].strip()
        network_id = request.headers.get(NETWORK_ID_HEADER)
        if not forwarded_for or not network_id:
            return _text(400, "Bad Request", "X-Forwarded-For and X-Neutron-Network-ID are "
                                             "required (haproxy adds them upstream).")
        try:
            ipaddress.ip_address(forwarded_for)
        except ValueError:
            return _text(400, "Bad Request", f"Invalid X-Forwarded-For {forwarded_for!r}.")
        try:
            instance_id, project_id = self._get_instance_and_project_id(forwarded_for,
                                                                        network_id)
            if not instance_id:
                return _text(404, "Not Found",
                             f"Instance was not found on network {network_id}.")
            return self._proxy_request(instance_id, project_id, forwarded_for)
        except Exception:
            LOG.exception("Unexpected error.")
            return _text(500, "Internal Server Error",
                         "An unknown error has occurred. Please try your request again.")

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
        url = f"{self.urls['neutron']}/v2.0/ports"
        params = [("fixed_ips", f"ip_address={remote_address}"), ("network_id", network_id),
                  ("fields", "device_id"), ("fields", "project_id")]
        response = None
        for attempt in range(2):  # one retry with a fresh token
            response = self.http.get(url, params=params, headers={
                "X-Auth-Token": self.service_token(refresh=attempt > 0)})
            if response.status_code != 401:
                break
        response.raise_for_status()
        return response.json()["ports"]

    @upstream("neutron/common/metadata.py",
              "MetadataProxyHandlerBaseSocketServer._proxy_request")
    def _proxy_request(self, instance_id: str, project_id: str, remote_address: str):
        # The instance the proxy vouches for (X-Instance-ID), on its span.
        trace.get_current_span().set_attribute(attr.NOVA_INSTANCE_UUID, instance_id)
        headers = {"X-Forwarded-For": remote_address, "X-Instance-ID": instance_id,
                   "X-Tenant-ID": project_id,
                   "X-Instance-ID-Signature": sign_instance_id(instance_id)}
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
    app.add_url_rule("/", "proxy", handler, methods=["GET", "POST", "HEAD"])
    app.add_url_rule("/<path:path>", "proxy_path", lambda path: handler(),
                     methods=["GET", "POST", "HEAD"])
    return app
