"""Loading traces: three file formats and in-memory SDK spans, one model, clear errors."""

from __future__ import annotations

import base64
import dataclasses
import json
from pathlib import Path

import pytest
from opentelemetry import trace as otel
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from novalab.diagrams.jaeger import to_jaeger
from novalab.diagrams.load import (
    TraceFormatError,
    from_readable_spans,
    load_spans,
    load_trace,
    load_traces,
    spans_from_text,
)
from novalab.diagrams.model import Trace
from novalab.tracing.otlp_json import to_otlp_dict

FIXTURES = Path(__file__).parent / "fixtures"
EMBEDDED = FIXTURES / "boot-embedded.otlp.json"
RABBITMQ = FIXTURES / "boot-rabbitmq-postgresql.otlp.jsonl"


def _essence(span, micros: bool = False):
    """What a round trip must keep (times to the microsecond for Jaeger)."""
    cut = (lambda ns: ns // 1000) if micros else (lambda ns: ns)
    return (span.trace_id, span.span_id, span.parent_id, span.name, span.kind, span.service,
            span.host, cut(span.start_ns), cut(span.duration_ns), dict(span.attributes),
            [(e.name, cut(e.time_ns), dict(e.attributes)) for e in span.events],
            [(ln.trace_id, ln.span_id) for ln in span.links], span.status,
            span.status_message, span.scope)


def test_otlp_json_file(embedded_trace):
    trace = embedded_trace
    assert len(trace) == 183
    assert trace.trace_id == "9f5d72ae091a901faa6c1f0a75eb17a2"
    assert set(trace.services) == {"novalab-client", "keystone", "nova-api", "glance-api",
                                   "nova-scheduler", "nova-compute", "nova-conductor"}
    assert trace.roots == (trace.root,)
    assert trace.root.name == "openstack server create" and trace.root.kind == "INTERNAL"
    create = next(s for s in trace if s.name == "POST /v2.1/servers")
    assert create.kind == "SERVER" and create.service == "nova-api"
    assert trace.parent(create).service == "novalab-client"
    assert [c.name for c in trace.children(create)] == ["ServersController.create"]
    process = next(s for s in trace if s.name == "process scheduler")
    assert process.links[0].span_id == process.parent_id
    assert process.get("messaging.message.body.size") > 0  # intValue became an int
    compute = next(s for s in trace if s.service == "nova-compute")
    assert compute.host == "compute-1"


def test_model_is_read_only(embedded_trace):
    span = embedded_trace.root
    with pytest.raises(dataclasses.FrozenInstanceError):
        span.name = "other"
    with pytest.raises(TypeError):
        span.attributes["x"] = 1  # type: ignore[index]
    assert isinstance(embedded_trace.spans, tuple)


def test_otlp_json_lines_file(rabbitmq_trace):
    trace = rabbitmq_trace
    assert len(trace) == 197
    systems = {s.get("messaging.system") for s in trace if s.get("messaging.system")}
    assert systems == {"rabbitmq"}
    assert {s.get("db.system.name") for s in trace if s.get("db.system.name")} == {"postgresql"}


def test_jaeger_round_trip(embedded_trace):
    text = json.dumps(to_jaeger(embedded_trace))
    back = Trace.of(spans_from_text(text))
    assert [_essence(s, micros=True) for s in back] == \
        [_essence(s, micros=True) for s in embedded_trace]


def test_otlp_json_lines_round_trip(embedded_trace):
    doc = json.loads(EMBEDDED.read_text())
    lines = "\n".join(json.dumps({"resourceSpans": [rs]}) for rs in doc["resourceSpans"])
    back = Trace.of(spans_from_text(lines + "\n"))
    assert [_essence(s) for s in back] == [_essence(s) for s in embedded_trace]


def _sdk_spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "nova-api",
                                                        "host.name": "vm"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("POST /v2.1/servers", kind=otel.SpanKind.SERVER,
                                      attributes={"http.route": "/v2.1/servers"}):
        with tracer.start_as_current_span("send scheduler", kind=otel.SpanKind.PRODUCER,
                                          attributes={"messaging.system": "rabbitmq",
                                                      "flavors": ("a", "b")}) as send:
            pass
        with tracer.start_as_current_span("process scheduler", kind=otel.SpanKind.CONSUMER,
                                          links=[otel.Link(send.get_span_context())]) as span:
            span.add_event("filter", {"hosts": 2})
            span.set_status(otel.Status(otel.StatusCode.ERROR, "NoValidHost"))
    provider.shutdown()
    return exporter.get_finished_spans()


def test_sdk_spans_and_otlp_encoding_agree():
    """In-memory spans and the same spans through our OTLP JSON writer load alike."""
    readable = _sdk_spans()
    direct = Trace.of(from_readable_spans(readable))
    via_file = Trace.of(spans_from_text(json.dumps(to_otlp_dict(readable))))
    assert [_essence(s) for s in via_file] == [_essence(s) for s in direct]
    process = next(s for s in direct if s.kind == "CONSUMER")
    assert process.status == "ERROR" and process.status_message == "NoValidHost"
    assert process.events[0].attributes["hosts"] == 2
    assert process.links[0].span_id == next(s for s in direct if s.kind == "PRODUCER").span_id
    assert next(s for s in direct if s.kind == "PRODUCER").get("flavors") == ("a", "b")
    assert load_trace(readable).trace_id == direct.trace_id


def test_base64_ids_are_accepted():
    trace_id, span_id = bytes(range(16)), bytes(range(8))
    doc = {"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "keystone"}}]},
        "scopeSpans": [{"spans": [{
            "traceId": base64.b64encode(trace_id).decode(),
            "spanId": base64.b64encode(span_id).decode(),
            "name": "GET /v3", "kind": "SPAN_KIND_SERVER",
            "startTimeUnixNano": "5", "endTimeUnixNano": "9",
            "status": {"code": "STATUS_CODE_OK"}}]}]}]}
    (span,) = spans_from_text(json.dumps(doc))
    assert (span.trace_id, span.span_id) == (trace_id.hex(), span_id.hex())
    assert (span.kind, span.status, span.duration_ns) == ("SERVER", "OK", 4)


def test_several_traces_in_one_file(tmp_path, embedded_trace):
    doc = json.loads(EMBEDDED.read_text())
    small = json.loads(RABBITMQ.read_text().splitlines()[0])
    lines = [json.dumps(doc), json.dumps(small)]
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n")
    traces = load_traces(path)
    assert [len(t) for t in traces] == sorted((len(t) for t in traces), reverse=True)
    assert load_trace(path).trace_id == embedded_trace.trace_id
    other = traces[1].trace_id
    assert load_trace(path, trace_id=other.upper()).trace_id == other
    with pytest.raises(TraceFormatError, match="trace 00ff not found; the file has 2"):
        load_trace(path, trace_id="00ff")


@pytest.mark.parametrize("content, message", [
    ("", "empty file"),
    ("{not json", "not JSON"),
    ('{"spans": []}', r"neither OTLP .* nor Jaeger .*found an object with keys spans"),
    ("[1, 2]", "found list"),
    ('{"resourceSpans": []}\n{"resourceSpans": [}\n', "line 2 is not JSON"),
    ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "ab", "spanId": "cd"}]}]}]}',
     r"resourceSpans\[0\] span 0 (spanId|traceId)"),
    ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "' + "a" * 32 +
     '", "spanId": "' + "b" * 16 + '"}]}]}]}', "malformed span"),
    ('{"data": [{"spans": [{"spanID": "1"}], "processes": {}}]}', r"data\[0\] span 0"),
])
def test_bad_files_say_what_is_wrong(tmp_path, content, message):
    path = tmp_path / "trace.json"
    path.write_text(content)
    with pytest.raises(TraceFormatError, match=message) as caught:
        load_spans(path)
    assert str(path) in str(caught.value)


def test_missing_file(tmp_path):
    with pytest.raises(TraceFormatError, match="no such file"):
        load_trace(tmp_path / "absent.json")
