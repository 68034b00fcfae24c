"""Carry the W3C trace context across a boundary the instrumentation packages don't see.

HTTP needs none of this (the Flask and httpx instrumentors inject and extract), but
an RPC message is our own envelope: the sender injects ``traceparent`` into the
message headers, the server extracts it to parent its ``process`` span.
"""

from __future__ import annotations

from opentelemetry import propagate
from opentelemetry.context import Context


def inject(headers: dict[str, str], context: Context | None = None) -> dict[str, str]:
    """Write the current (or given) trace context into ``headers`` and return them."""
    propagate.inject(headers, context=context)
    return headers


def extract(headers: dict[str, str] | None) -> Context:
    """The context the sender injected, or an empty one."""
    return propagate.extract(headers or {})
