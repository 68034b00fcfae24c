"""Who may join a trace: the cloud's own clients, never an outside client's ``traceparent``.

Issue 21, finding 11: a request carrying a ``traceparent`` with another project's
trace id joined that trace, after which the page showed the victim's trace to
the attacker. A request from outside the cloud now starts a trace of its own,
with a span link to the context it sent; the services' own clients sign the
context they send (``X-Trace-HMAC``) and keep one boot one trace.
"""

from __future__ import annotations

import time

import pytest
from conftest import Session

VICTIM_TRACE = "5eed" * 8
VICTIM_SPAN = "c0ffee00" * 2


def _server_span(cloud, request_id: str, timeout: float = 10.0):
    """nova-api's SERVER span of the request ``request_id`` (the span ends just after
    the response is sent)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for span in cloud.telemetry.finished_spans():
            if span.kind.name == "SERVER" and \
                    span.attributes.get("openstack.request_id") == request_id:
                return span
        time.sleep(0.05)
    raise AssertionError(f"no SERVER span of {request_id}")


@pytest.fixture(scope="module")
def demo(shared_cloud):
    session = Session(shared_cloud, "demo", "demo")
    yield session
    session.close()


def test_an_outside_clients_traceparent_starts_a_new_trace_linked_to_it(shared_cloud, demo):
    response = demo.request("GET", f"{demo.compute}/servers", headers={
        "traceparent": f"00-{VICTIM_TRACE}-{VICTIM_SPAN}-01", "tracestate": "novalab=x"})
    assert response.status_code == 200, response.text
    span = _server_span(shared_cloud, response.headers["X-OpenStack-Request-ID"])
    assert format(span.context.trace_id, "032x") != VICTIM_TRACE
    assert span.parent is None
    assert [(format(ln.context.trace_id, "032x"), format(ln.context.span_id, "016x"))
            for ln in span.links] == [(VICTIM_TRACE, VICTIM_SPAN)]


def test_a_forged_signature_is_no_better_than_none(shared_cloud, demo):
    response = demo.request("GET", f"{demo.compute}/servers", headers={
        "traceparent": f"00-{VICTIM_TRACE}-{VICTIM_SPAN}-01", "X-Trace-HMAC": "00" * 32})
    span = _server_span(shared_cloud, response.headers["X-OpenStack-Request-ID"])
    assert format(span.context.trace_id, "032x") != VICTIM_TRACE


def test_the_clouds_own_clients_keep_one_trace(shared_cloud):
    """A service's HTTP client (``Wiring.http``) signs what it sends: its callee joins."""
    w = shared_cloud.wiring
    tracer = w.tracer("nova-compute")
    http = w.http("nova-compute")
    with tracer.start_as_current_span("a service's own work") as parent:
        response = http.get(f"{w.urls['keystone']}/v3")
    assert response.status_code == 200
    span = _server_span(shared_cloud, response.headers["X-OpenStack-Request-ID"])
    assert span.context.trace_id == parent.get_span_context().trace_id
    assert not span.links


def test_an_unsigned_client_of_the_same_process_is_outside_too(shared_cloud):
    """Tracing alone is no pass: only the deployment's key is."""
    from novalab.tracing.http import http_client

    tracer = shared_cloud.wiring.tracer("someone")
    with http_client(shared_cloud.wiring.provider("someone")) as http, \
            tracer.start_as_current_span("a client's own span") as parent:
        response = http.get(f"{shared_cloud.wiring.urls['keystone']}/v3")
    span = _server_span(shared_cloud, response.headers["X-OpenStack-Request-ID"])
    assert span.context.trace_id != parent.get_span_context().trace_id
    assert [ln.context.trace_id for ln in span.links] == [parent.get_span_context().trace_id]
