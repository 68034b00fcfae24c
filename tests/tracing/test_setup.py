"""The tracing hub: providers per service, shared exporters, drops counted not hidden."""

from __future__ import annotations

import json
import socket

from opentelemetry import trace

from novalab.tracing.setup import Telemetry


def test_each_service_gets_its_own_resource(tmp_path):
    telemetry = Telemetry(memory=True, otlp=False)
    with telemetry.tracer("nova-api").start_as_current_span("a"):
        with telemetry.tracer("nova-compute", host="compute-7").start_as_current_span("b"):
            pass
    spans = {s.name: s for s in telemetry.finished_spans()}
    assert spans["a"].resource.attributes["service.name"] == "nova-api"
    assert spans["b"].resource.attributes["service.name"] == "nova-compute"
    assert spans["b"].resource.attributes["host.name"] == "compute-7"
    assert spans["b"].parent.span_id == spans["a"].context.span_id
    assert telemetry.services == ["nova-api", "nova-compute"]
    telemetry.shutdown()


def test_host_ip_is_on_every_resource_when_given():
    """`novalab service --advertise-address` puts the host's address on its resources;
    an embedded cloud gives none, and its resources have no host.ip."""
    telemetry = Telemetry(memory=True, otlp=False, host_ip=["198.18.0.2"])
    resource = telemetry.provider("nova-compute", host="compute-1").resource.attributes
    assert resource["host.ip"] == ("198.18.0.2",) and resource["host.name"] == "compute-1"
    assert "host.ip" not in Telemetry(memory=True, otlp=False).provider("x").resource.attributes
    telemetry.shutdown()


def test_file_exporter_writes_otlp_json_lines(tmp_path):
    path = tmp_path / "spans.jsonl"
    telemetry = Telemetry(file_path=path, otlp=False)
    with telemetry.tracer("keystone").start_as_current_span("issue"):
        pass
    telemetry.shutdown()
    lines = path.read_text().splitlines()
    assert len(lines) == 1
    doc = json.loads(lines[0])
    span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert span["name"] == "issue" and len(span["traceId"]) == 32


def test_dropped_spans_are_reported(tmp_path):
    """A queue too small for a burst loses spans; the hub must say how many."""
    telemetry = Telemetry(file_path=tmp_path / "x.jsonl", otlp=False, max_queue_size=4,
                          schedule_delay_millis=60_000)
    tracer = telemetry.tracer("nova-conductor")
    for index in range(50):
        with tracer.start_as_current_span(f"s{index}"):
            pass
    telemetry.force_flush()
    dropped = telemetry.dropped()
    assert dropped.get("file", 0) > 0
    telemetry.shutdown()


def test_nothing_dropped_with_default_queue(tmp_path):
    telemetry = Telemetry(memory=True, file_path=tmp_path / "y.jsonl", otlp=False)
    tracer = telemetry.tracer("nova-conductor")
    for index in range(3000):  # more than the SDK's default queue of 2,048
        with tracer.start_as_current_span(f"s{index}"):
            pass
    telemetry.force_flush()
    assert telemetry.dropped() == {}
    assert len(telemetry.finished_spans()) == 3000
    telemetry.shutdown()


def test_disabled_telemetry_is_noop():
    telemetry = Telemetry(enabled=False)
    provider = telemetry.provider("nova-api")
    assert isinstance(provider, trace.NoOpTracerProvider)
    assert telemetry.finished_spans() == []


def test_a_dead_endpoint_is_not_a_drop(tmp_path, monkeypatch):
    """dropped() is about the local copies; what the OTLP endpoint missed is counted apart."""
    with socket.socket() as sock:  # a port nobody listens on: bound, then closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_PROTOCOL", raising=False)
    telemetry = Telemetry(memory=True, file_path=tmp_path / "z.jsonl")
    tracer = telemetry.tracer("nova-api")
    for index in range(20):
        with tracer.start_as_current_span(f"s{index}"):
            pass
    telemetry.shutdown()
    assert telemetry.dropped() == {}
    assert telemetry.remote_skipped() == {"otlp": 20}
    assert len(telemetry.finished_spans()) == 20
    assert len((tmp_path / "z.jsonl").read_text().splitlines()) >= 1
