"""Carry the W3C trace context across a boundary, and only from those the cloud trusts.

An RPC message is our own envelope: the sender injects ``traceparent`` into the
message headers, the server extracts it to parent its ``process`` span (HTTP
needs none of that: the Flask and httpx instrumentors inject and extract).

Over HTTP, a ``traceparent`` is also a claim anyone can make: a client that
sends another project's trace id would join that trace, and read it wherever
traces are shown by what they touched. So a service joins the context a
request carries only when the sender signed it with the deployment's key, as
every service's own HTTP client does (``X-Trace-HMAC``, an HMAC-SHA256 of the
``traceparent`` and ``tracestate``; osprofiler's ``X-Trace-Info`` and
``X-Trace-HMAC`` under ``[profiler] hmac_keys`` are upstream's way of the
same). Any other request starts a new trace whose SERVER span *links* to the
context it sent: OpenTelemetry's advice for a trust boundary.
"""

from __future__ import annotations

import hashlib
import hmac

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

HMAC_HEADER = "X-Trace-HMAC"
# Where TrustedContext leaves the context it would not join, for the SERVER span's link.
UNTRUSTED_CONTEXT = "novalab.trace.untrusted_context"
_CONTEXT_HEADERS = ("HTTP_TRACEPARENT", "HTTP_TRACESTATE", "HTTP_BAGGAGE")


def inject(headers: dict[str, str], context: Context | None = None) -> dict[str, str]:
    """Write the current (or given) trace context into ``headers`` and return them."""
    propagate.inject(headers, context=context)
    return headers


def extract(headers: dict[str, str] | None) -> Context:
    """The context the sender injected, or an empty one."""
    return propagate.extract(headers or {})


def context_key(secret: str) -> bytes:
    """The deployment's key for trace contexts, derived from its shared secret."""
    return hmac.new(secret.encode(), b"novalab trace context", hashlib.sha256).digest()


def signature(key: bytes, traceparent: str, tracestate: str = "") -> str:
    """What ``X-Trace-HMAC`` carries for this context."""
    return hmac.new(key, f"{traceparent}\n{tracestate}".encode("latin-1"),
                    hashlib.sha256).hexdigest()


def signed(key: bytes, trace_id: int, span_id: int) -> dict[str, str]:
    """The headers that make a request join trace ``trace_id`` under ``span_id``, as the
    deployment's own clients send them (a tool or test that holds the key)."""
    traceparent = f"00-{trace_id:032x}-{span_id:016x}-01"
    return {"traceparent": traceparent, HMAC_HEADER: signature(key, traceparent)}


class TrustedContext:
    """WSGI middleware: the request's trace context, if its sender signed it; else none.

    Wraps the app outside the Flask instrumentation, which then starts the
    SERVER span as a new root; ``tracing.http.instrument_flask`` links it to
    the context found in ``environ[UNTRUSTED_CONTEXT]``.
    """

    def __init__(self, app, key: bytes):
        self.app = app
        self.key = key

    def __call__(self, environ, start_response):
        given = environ.pop("HTTP_X_TRACE_HMAC", "")
        parent = environ.get("HTTP_TRACEPARENT")
        if parent is None or not self._signed(parent, environ.get("HTTP_TRACESTATE", ""),
                                              given):
            for name in _CONTEXT_HEADERS:
                environ.pop(name, None)
            if parent is not None:
                context = trace.get_current_span(TraceContextTextMapPropagator().extract(
                    {"traceparent": parent})).get_span_context()
                if context.is_valid:
                    environ[UNTRUSTED_CONTEXT] = context
        return self.app(environ, start_response)

    def _signed(self, traceparent: str, tracestate: str, given: str) -> bool:
        expected = signature(self.key, traceparent, tracestate)
        return hmac.compare_digest(expected.encode(), given.encode("latin-1"))
