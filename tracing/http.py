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
from opentelemetry.instrumentation.flask import FlaskInstrumentor
from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor


def instrument_flask(app, tracer_provider) -> None:
    """Trace every request ``app`` serves as a SERVER span of its service."""
    FlaskInstrumentor.instrument_app(app, tracer_provider=tracer_provider,
                                     enable_commenter=False)


def http_client(tracer_provider=None, *, timeout: float = 30.0,
                local_address: str | None = None) -> httpx.Client:
    """An HTTP client whose CLIENT spans (and ``traceparent``) belong to one service.

    ``tracer_provider=None`` leaves the client uninstrumented (untraced baseline);
    ``local_address`` is the address its connections come from.
    """
    verify = default_ssl_context()
    transport = (httpx.HTTPTransport(local_address=local_address, verify=verify)
                 if local_address else None)
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
