"""The traced libvirt proxies turn each call into a CLIENT span."""

import types
import uuid

import libvirt
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from novalab.tracing.libvirt import TracedConnection, TracedDomain

URI = "test:///default"


@pytest.fixture
def exporter():
    return InMemorySpanExporter()


@pytest.fixture
def conn(exporter):
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    raw = libvirt.open(URI)
    yield TracedConnection(raw, provider.get_tracer("test"), URI)
    raw.close()


def _xml(name, dom_uuid):
    return (f"<domain type='test'><name>{name}</name><uuid>{dom_uuid}</uuid>"
            "<memory unit='KiB'>65536</memory><vcpu>1</vcpu>"
            "<os><type arch='i686'>hvm</type></os></domain>")


def test_calls_are_client_spans_and_domains_are_traced(conn, exporter):
    dom_uuid = str(uuid.uuid4())
    dom = conn.defineXML(_xml(f"traced-{dom_uuid[:8]}", dom_uuid))
    try:
        assert isinstance(dom, TracedDomain)
        dom.createWithFlags(0)
        assert dom.info()[0] == libvirt.VIR_DOMAIN_RUNNING
        dom.destroy()
    finally:
        dom.undefine()
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == [
        "libvirt.defineXML", "libvirt.createWithFlags", "libvirt.info", "libvirt.destroy",
        "libvirt.undefine"]
    first = spans[0]
    assert first.kind == trace.SpanKind.CLIENT
    assert dict(first.attributes) == {
        "rpc.system": "libvirt", "rpc.method": "defineXML",
        "peer.service": "libvirt", "server.address": URI,
    }


def test_domain_lists_are_traced(conn):
    domains = conn.listAllDomains(0)
    assert domains and all(isinstance(d, TracedDomain) for d in domains)


def test_errors_are_recorded_and_reraised(conn, exporter):
    with pytest.raises(libvirt.libvirtError):
        conn.lookupByUUIDString(str(uuid.uuid4()))
    (span,) = exporter.get_finished_spans()
    assert span.name == "libvirt.lookupByUUIDString"
    assert span.status.status_code == trace.StatusCode.ERROR
    assert span.events[0].name == "exception"
    assert span.events[0].attributes["exception.type"].endswith("libvirtError")


def test_non_callables_pass_through(exporter):
    tracer = TracerProvider().get_tracer("test")
    proxy = TracedConnection(types.SimpleNamespace(uri=URI, count=3), tracer, URI)
    assert proxy.uri == URI and proxy.count == 3
    assert exporter.get_finished_spans() == ()
