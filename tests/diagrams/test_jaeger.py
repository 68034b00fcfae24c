"""Jaeger JSON export: the UI's upload format, checked against a schema and read back."""

from __future__ import annotations

import json

import jsonschema

from novalab.diagrams.jaeger import SCHEMA, dumps, to_jaeger, write_jaeger
from novalab.diagrams.load import load_trace


def test_export_matches_the_schema(embedded_trace, rabbitmq_trace):
    for trace in (embedded_trace, rabbitmq_trace):
        jsonschema.validate(to_jaeger(trace), SCHEMA)


def test_schema_rejects_what_jaeger_would(embedded_trace):
    doc = to_jaeger(embedded_trace)
    doc["data"][0]["spans"][0]["references"] = [{"refType": "PARENT", "traceID": "x",
                                                 "spanID": "y"}]
    errors = list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(doc))
    assert errors


def test_spans_processes_and_tags(embedded_trace, rabbitmq_trace):
    (data,) = to_jaeger(embedded_trace)["data"]
    assert data["traceID"] == embedded_trace.trace_id and len(data["spans"]) == 183
    services = sorted(p["serviceName"] for p in data["processes"].values())
    assert services == sorted(embedded_trace.services)
    span = next(s for s in data["spans"] if s["operationName"] == "POST /v2.1/servers")
    tags = {t["key"]: t for t in span["tags"]}
    assert tags["span.kind"]["value"] == "server"
    assert tags["http.response.status_code"] == {"key": "http.response.status_code",
                                                 "type": "int64", "value": 202}
    assert span["startTime"] == next(
        s for s in embedded_trace if s.span_id == span["spanID"]).start_ns // 1000
    # two compute hosts are two processes of one service
    (data2,) = to_jaeger(rabbitmq_trace)["data"]
    computes = [p for p in data2["processes"].values() if p["serviceName"] == "nova-compute"]
    hosts = {t["value"] for p in computes for t in p["tags"] if t["key"] == "host.name"}
    assert len(computes) == len(hosts) >= 1


def test_references(embedded_trace):
    (data,) = to_jaeger(embedded_trace)["data"]
    by_id = {s["spanID"]: s for s in data["spans"]}
    process = next(s for s in data["spans"] if s["operationName"] == "process scheduler")
    send = next(s for s in data["spans"] if s["operationName"] == "send scheduler")
    assert process["references"] == [{"refType": "FOLLOWS_FROM", "traceID": send["traceID"],
                                      "spanID": send["spanID"]}]  # the link is the parent
    receive = next(s for s in data["spans"] if s["operationName"].startswith("receive reply_"))
    kinds = [r["refType"] for r in receive["references"]]
    assert kinds == ["CHILD_OF", "FOLLOWS_FROM"]
    assert by_id[receive["references"][1]["spanID"]]["operationName"].startswith("send reply_")
    root = next(s for s in data["spans"] if not s["references"])
    assert root["operationName"] == "openstack server create"


def test_error_status_and_events(embedded_trace):
    (data,) = to_jaeger(embedded_trace)["data"]
    failed = [s for s in data["spans"]
              if any(t["key"] == "otel.status_code" and t["value"] == "ERROR" for t in s["tags"])]
    assert failed and all(any(t["key"] == "error" and t["value"] is True for t in s["tags"])
                          for s in failed)
    schedule = next(s for s in data["spans"] if s["operationName"] == "FilterScheduler._schedule")
    assert [f["value"] for log in schedule["logs"] for f in log["fields"]
            if f["key"] == "event"] == ["filter"] * 5


def test_written_file_golden_and_reload(embedded_trace, tmp_path, golden):
    path = write_jaeger(embedded_trace, tmp_path / "trace.jaeger.json")
    golden("trace.jaeger.json", path.read_text())
    back = load_trace(path)
    assert [s.span_id for s in back] == [s.span_id for s in embedded_trace]
    assert json.loads(path.read_text())["data"][0]["warnings"] is None


def test_file_layout_is_valid_json_one_span_per_line(rabbitmq_trace):
    doc = to_jaeger(rabbitmq_trace)
    text = dumps(doc)
    assert json.loads(text) == json.loads(json.dumps(doc))
    assert len(text.splitlines()) == len(doc["data"][0]["spans"]) + 2
