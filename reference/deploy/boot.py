"""One traced boot, start to finish: what ``novalab boot`` runs.

The client's root span is the trace's root: every HTTP request it makes, and
through ``traceparent`` every server span, RPC message and libvirt call that
follows, shares its trace id. After the server is ACTIVE (or ERROR) we wait for
the compute host's build to finish, flush the exporters, and keep the spans of
that one trace.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan

from novalab.reference.deploy.client import CloudClient
from novalab.reference.deploy.embedded import EmbeddedCloud
from novalab.tracing import collect
from novalab.tracing.http import http_client
from novalab.tracing.otlp_json import from_readable_spans

CLIENT_SERVICE = "novalab-client"


@dataclass
class BootRequest:
    name: str = "demo-server"
    flavor: str = "m1.nano"
    image: str = "cirros"
    username: str = "demo"
    project: str = "demo"
    timeout: float = 60.0
    # A data volume of this many GB, created by Nova through Cinder (None: no volume).
    volume_size: int | None = 1


@dataclass
class BootOutcome:
    """How a boot ended and which trace tells it (embedded or running cloud)."""

    server: dict
    trace_id: int
    elapsed: float

    @property
    def active(self) -> bool:
        return self.server.get("status") == "ACTIVE"

    @property
    def trace_id_hex(self) -> str:
        return format(self.trace_id, "032x")


@dataclass
class BootResult(BootOutcome):
    spans: list[ReadableSpan] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)


def server_extra(request: BootRequest, image_id: str) -> dict:
    """What the boot asks for beyond name, flavor and image: the data volume, if any.

    Like ``openstack server create --block-device
    source_type=blank,destination_type=volume,volume_size=1,delete_on_termination=true``.
    """
    if not request.volume_size:
        return {}
    return {"block_device_mapping_v2": [
        {"uuid": image_id, "source_type": "image", "destination_type": "local",
         "boot_index": 0, "delete_on_termination": True},
        {"source_type": "blank", "destination_type": "volume",
         "volume_size": request.volume_size, "boot_index": -1, "delete_on_termination": True}]}


def client_boot(tracer, provider, auth_url: str, password: str, request: BootRequest,
                on_change: Callable[[dict], None] | None = None,
                trace_key: bytes | None = None) -> tuple[dict, int, float]:
    """The user's side of a boot, under one root span: ``(server, trace id, seconds)``.

    Authenticate, look the flavor and image up, post the server and poll it to
    ACTIVE or ERROR, with an HTTP client traced by ``provider`` (None: untraced).
    ``trace_key`` (the deployment's, which only its owner can read) signs the
    client's trace context, so the services join it: one boot, one trace
    (``tracing/propagation.py``); without it each request starts a trace of its own.
    """
    with http_client(provider, trace_key=trace_key) as http:
        client = CloudClient(auth_url, http)
        started = time.perf_counter()
        with tracer.start_as_current_span("openstack server create", attributes={
                "novalab.server.name": request.name, "novalab.flavor": request.flavor,
                "novalab.image": request.image}) as root:
            client.authenticate(request.username, password, request.project)
            flavor = client.find_flavor(request.flavor)
            image = client.find_image(request.image)
            created = client.create_server(request.name, flavor["id"], image["id"],
                                           **server_extra(request, image["id"]))
            root.set_attribute("nova.instance.uuid", created["id"])
            server = client.wait_for_server(created["id"], timeout=request.timeout,
                                            on_change=on_change)
            root.set_attribute("novalab.server.status", server["status"])
            if server["status"] != "ACTIVE":
                root.set_status(trace.StatusCode.ERROR, server.get("fault", {}).get("message",
                                                                                    "ERROR"))
        elapsed = time.perf_counter() - started
    return server, root.get_span_context().trace_id, elapsed


def boot(cloud: EmbeddedCloud, request: BootRequest,
         on_change: Callable[[dict], None] | None = None) -> BootResult:
    """Boot one server on ``cloud`` as a user would, and collect its trace."""
    telemetry = cloud.telemetry
    provider = telemetry.provider(CLIENT_SERVICE) if cloud.traced else None
    server, trace_id, elapsed = client_boot(telemetry.tracer(CLIENT_SERVICE, "novalab.client"),
                                            provider, cloud.identity_url,
                                            cloud.config.credentials.password_for(request.username),
                                            request, on_change, trace_key=cloud.wiring.trace_key)
    cloud.wait_idle()
    spans = collect_trace(telemetry, trace_id)
    return BootResult(server=server, trace_id=trace_id, elapsed=elapsed, spans=spans,
                      dropped=telemetry.dropped())


def collect_trace(telemetry, trace_id: int, timeout: float = 5.0) -> list[ReadableSpan]:
    """The trace's spans once it is whole: every span's parent has ended too, and
    every message and HTTP request in it reached its other end.

    A client can see a response before the server's span for it has ended (the
    span closes after the last byte is sent), a service may still be closing
    spans after the work the client waits for is done, and a cast (a DHCP
    agent's port update, say) may still sit in its queue. Spans are only
    recorded when they end, so we wait until no recorded span misses its parent
    and no PRODUCER or HTTP CLIENT span lacks its other end.
    """
    deadline = time.monotonic() + timeout
    while True:
        telemetry.force_flush()
        spans = telemetry.finished_spans(trace_id)
        if not collect.incomplete(from_readable_spans(spans)) or time.monotonic() > deadline:
            return spans
        time.sleep(0.005)
