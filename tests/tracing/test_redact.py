"""What non-admins never see of a span: who called a server, and what vouches for a guest."""

from __future__ import annotations

from novalab.tracing.model import Span, frozen
from novalab.tracing.redact import REDACTED, redacted


def _span(kind: str, **attributes) -> Span:
    return Span("a" * 32, "b" * 16, None, "GET", kind, "neutron-metadata-proxy", 0, 1,
                attributes=frozen(attributes))


def test_the_caller_of_a_server_span_is_hidden_and_the_callee_of_a_client_span_is_not():
    server, client = redacted([
        _span("SERVER", **{"client.address": "127.9.8.7", "client.port": 4242,
                           "network.peer.address": "127.9.8.7", "url.path": "/latest"}),
        _span("CLIENT", **{"network.peer.address": "127.0.0.1", "server.port": 8775})])
    assert dict(server.attributes) == {"client.address": REDACTED, "client.port": REDACTED,
                                       "network.peer.address": REDACTED, "url.path": "/latest"}
    assert dict(client.attributes) == {"network.peer.address": "127.0.0.1", "server.port": 8775}


def test_recorded_metadata_headers_are_hidden_on_any_span():
    (span,) = redacted([_span("CLIENT", **{
        "http.request.header.x-forwarded-for": ("10.0.0.3",),
        "http.request.header.x_instance_id_signature": ("ab12",),
        "http.request.header.x-instance-id": ("uuid",)})])
    assert span.get("http.request.header.x-forwarded-for") == REDACTED
    assert span.get("http.request.header.x_instance_id_signature") == REDACTED
    assert span.get("http.request.header.x-instance-id") == ("uuid",)
