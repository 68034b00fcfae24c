"""HTTP tracing per service, with the OpenTelemetry instrumentation packages.

The requests instrumentor patches the whole process, so in the one-process cloud
every client span would carry one service's name. Instead each service gets its
own ``httpx.Client`` instrumented with that service's provider, and each Flask
app is instrumented on its own (``instrument_app``): a span's ``service.name`` is
always the service that really sent or served the request.
"""

from __future__ import annotations

import functools
import ssl

import httpx
from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor

from novalab.tracing import attributes as attr
from novalab.tracing import propagation


def instrument_flask(app, tracer_provider) -> None:
    """Trace every request ``app`` serves as a SERVER span of its service.

    A request whose trace context was not trusted (``propagation.TrustedContext``)
    gets a new trace, and its SERVER span a link to the context the client sent.
    """
    # Imported here: flask's instrumentation (and flask itself) is a tenth of a second
    # that every `novalab` command would pay at start, and only the services need it.
    from opentelemetry.instrumentation.flask import FlaskInstrumentor

    FlaskInstrumentor.instrument_app(app, tracer_provider=tracer_provider,
                                     enable_commenter=False, request_hook=_link_untrusted)


def _link_untrusted(span, environ) -> None:
    context = environ.get(propagation.UNTRUSTED_CONTEXT)
    if context is not None and span.is_recording():
        span.add_link(context, {attr.NOVALAB_LINK_UNTRUSTED_PARENT: True})


class SigningTransport(httpx.BaseTransport):
    """Signs the trace context the instrumentation injected (``X-Trace-HMAC``), so the
    services it calls join this trace (``propagation.TrustedContext``)."""

    def __init__(self, transport: httpx.BaseTransport, key: bytes):
        self.transport = transport
        self.key = key

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        traceparent = request.headers.get("traceparent")
        if traceparent:
            request.headers[propagation.HMAC_HEADER] = propagation.signature(
                self.key, traceparent, request.headers.get("tracestate", ""))
        return self.transport.handle_request(request)

    def close(self) -> None:
        self.transport.close()


def http_client(tracer_provider=None, *, timeout: float = 30.0,
                local_address: str | None = None, trace_key: bytes | None = None
                ) -> httpx.Client:
    """An HTTP client whose CLIENT spans (and ``traceparent``) belong to one service.

    ``tracer_provider=None`` leaves the client uninstrumented (untraced baseline);
    ``local_address`` is the address its connections come from; ``trace_key``, the
    deployment's (``Wiring.trace_key``), makes the services it calls join its trace.
    """
    verify = default_ssl_context()
    transport = (httpx.HTTPTransport(local_address=local_address, verify=verify)
                 if local_address or trace_key else None)
    if trace_key is not None:
        transport = SigningTransport(transport, trace_key)
    client = httpx.Client(timeout=timeout, transport=transport, verify=verify)
    if tracer_provider is not None:
        HTTPXClientInstrumentor.instrument_client(client, tracer_provider=tracer_provider)
    return client


@functools.cache
def default_ssl_context() -> ssl.SSLContext:
    """The system's CA context, built once for every client of the process.

    httpx builds a fresh context per client by default, loading certifi's whole
    CA bundle each time: about 56 ms of CPU, which a short-lived client (the
    guest's per-boot metadata reader) paid on every boot (docs/perf/boot-profile.md).
    An SSLContext is safe to share between clients and threads.
    """
    return httpx.create_ssl_context()
