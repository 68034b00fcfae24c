"""Export a trace as Jaeger JSON, the file Jaeger's UI opens with "JSON File".

The shape is the one Jaeger's query API returns::

    {"data": [{"traceID", "spans": [...], "processes": {"p1": {...}}, "warnings": null}]}

Each span: ``traceID``, ``spanID``, ``operationName``, ``references``,
``startTime`` and ``duration`` in microseconds, ``tags`` (typed), ``logs``
(the span's events), ``processID`` and ``warnings``. A process is one resource
(service plus host and the other resource attributes), so two compute hosts
are two processes of the service ``nova-compute``.

How OpenTelemetry's structure becomes Jaeger references (our decision):

- a span's parent is a ``CHILD_OF`` reference, first in the list;
- except a CONSUMER span whose parent is the PRODUCER span of its message:
  that parent becomes a ``FOLLOWS_FROM`` reference (OpenTracing's word for
  "caused by, but the cause does not wait for it": a sent message). Jaeger's
  UI still nests it under the producer, since it draws the tree from the
  first reference of either type;
- every link becomes a further ``FOLLOWS_FROM`` reference (as the
  OpenTelemetry Collector's Jaeger translator does), except a link to the
  span already referenced as parent.

Span kind, status and scope become the tags Jaeger's own OTLP translator
writes: ``span.kind``, ``otel.status_code``/``otel.status_description``
(plus ``error=true``), ``otel.scope.name``. ``load.spans_from_jaeger`` reads
all of this back into the same spans (times to the microsecond).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from novalab.diagrams.model import Span, Trace
from novalab.tracing import attributes as attr


def _tag(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "type": "bool", "value": value}
    if isinstance(value, int):
        return {"key": key, "type": "int64", "value": value}
    if isinstance(value, float):
        return {"key": key, "type": "float64", "value": value}
    if isinstance(value, (tuple, list, dict)):
        return {"key": key, "type": "string", "value": json.dumps(value, sort_keys=True)}
    return {"key": key, "type": "string", "value": str(value)}


def _references(span: Span, trace: Trace) -> list[dict[str, str]]:
    refs: list[dict[str, str]] = []
    parent = trace.span(span.parent_id)
    if span.parent_id:
        follows = span.kind == "CONSUMER" and parent is not None and parent.kind == "PRODUCER"
        refs.append({"refType": "FOLLOWS_FROM" if follows else "CHILD_OF",
                     "traceID": span.trace_id, "spanID": span.parent_id})
    for link in span.links:
        if link.span_id == span.parent_id and link.trace_id == span.trace_id:
            continue
        refs.append({"refType": "FOLLOWS_FROM", "traceID": link.trace_id,
                     "spanID": link.span_id})
    return refs


def _process_key(span: Span) -> tuple:
    return (span.service, tuple(sorted((k, str(v)) for k, v in span.resource.items())))


def to_jaeger(trace: Trace) -> dict[str, Any]:
    """The Jaeger JSON document for one trace."""
    processes: dict[tuple, str] = {}
    process_docs: dict[str, Any] = {}
    spans = []
    for span in trace:  # ordered by start time, then span id
        key = _process_key(span)
        if key not in processes:
            pid = f"p{len(processes) + 1}"
            processes[key] = pid
            tags = [_tag(k, v) for k, v in sorted(span.resource.items()) if k != attr.SERVICE_NAME]
            if span.host and attr.HOST_NAME not in span.resource:
                tags.append(_tag(attr.HOST_NAME, span.host))
            process_docs[pid] = {"serviceName": span.service, "tags": tags}
        tags = [_tag(k, v) for k, v in sorted(span.attributes.items())]
        tags.append(_tag(attr.SPAN_KIND, span.kind.lower()))
        if span.status != "UNSET":
            tags.append(_tag(attr.OTEL_STATUS_CODE, span.status))
        if span.status == "ERROR":
            tags.append(_tag("error", True))
        if span.status_message:
            tags.append(_tag(attr.OTEL_STATUS_DESCRIPTION, span.status_message))
        if span.scope:
            tags.append(_tag(attr.OTEL_SCOPE_NAME, span.scope))
        logs = [{"timestamp": event.time_ns // 1000,
                 "fields": [_tag("event", event.name)] +
                 [_tag(k, v) for k, v in sorted(event.attributes.items())]}
                for event in span.events]
        spans.append({
            "traceID": span.trace_id,
            "spanID": span.span_id,
            "operationName": span.name,
            "references": _references(span, trace),
            "startTime": span.start_ns // 1000,
            "duration": span.duration_ns // 1000,
            "tags": tags,
            "logs": logs,
            "processID": processes[key],
            "warnings": None,
            "flags": 1,
        })
    return {"data": [{"traceID": trace.trace_id, "spans": spans, "processes": process_docs,
                      "warnings": None}]}


def dumps(doc: dict[str, Any]) -> str:
    """The document as JSON text with one span per line: compact, yet easy to read and diff."""
    out = ['{"data": [']
    for n, item in enumerate(doc["data"]):
        rest = json.dumps({k: v for k, v in item.items() if k != "spans"}, sort_keys=True)
        spans = ",\n".join(json.dumps(span, sort_keys=True, separators=(",", ":"))
                           for span in item["spans"])
        out.append(("," if n else "") + '{"spans": [\n' + spans + "\n], " + rest[1:])
    out.append("]}\n")
    return "".join(out)


def write_jaeger(traces: Trace | Iterable[Trace], path: str | os.PathLike) -> Path:
    """Write one trace, or several, as one Jaeger JSON file; returns the path.

    Jaeger's UI opens a file of many traces ("JSON File" upload) and lists them
    all, so the traces a user selected travel together.
    """
    items = [traces] if isinstance(traces, Trace) else list(traces)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"data": [item for trace in items for item in to_jaeger(trace)["data"]]}
    path.write_text(dumps(doc), encoding="utf-8")
    return path


# A JSON Schema for the document above: what the export test validates against.
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["data"],
    "properties": {"data": {"type": "array", "minItems": 1, "items": {
        "type": "object",
        "required": ["traceID", "spans", "processes"],
        "properties": {
            "traceID": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
            "spans": {"type": "array", "items": {
                "type": "object",
                "required": ["traceID", "spanID", "operationName", "references", "startTime",
                             "duration", "tags", "logs", "processID"],
                "properties": {
                    "traceID": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
                    "spanID": {"type": "string", "pattern": "^[0-9a-f]{16}$"},
                    "operationName": {"type": "string"},
                    "references": {"type": "array", "items": {
                        "type": "object", "required": ["refType", "traceID", "spanID"],
                        "properties": {"refType": {"enum": ["CHILD_OF", "FOLLOWS_FROM"]},
                                       "traceID": {"type": "string"},
                                       "spanID": {"type": "string"}},
                        "additionalProperties": False}},
                    "startTime": {"type": "integer", "minimum": 0},
                    "duration": {"type": "integer", "minimum": 0},
                    "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}},
                    "logs": {"type": "array", "items": {
                        "type": "object", "required": ["timestamp", "fields"],
                        "properties": {"timestamp": {"type": "integer"},
                                       "fields": {"type": "array",
                                                  "items": {"$ref": "#/$defs/tag"}}}}},
                    "processID": {"type": "string"},
                    "warnings": {"type": ["array", "null"]},
                    "flags": {"type": "integer"},
                },
                "additionalProperties": False}},
            "processes": {"type": "object", "additionalProperties": {
                "type": "object", "required": ["serviceName", "tags"],
                "properties": {"serviceName": {"type": "string"},
                               "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}}}}},
            "warnings": {"type": ["array", "null"]},
        }}}},
    "$defs": {"tag": {
        "type": "object", "required": ["key", "type", "value"],
        "properties": {"key": {"type": "string"},
                       "type": {"enum": ["string", "bool", "int64", "float64", "binary"]}},
        "allOf": [
            {"if": {"properties": {"type": {"const": "string"}}},
             "then": {"properties": {"value": {"type": "string"}}}},
            {"if": {"properties": {"type": {"const": "bool"}}},
             "then": {"properties": {"value": {"type": "boolean"}}}},
            {"if": {"properties": {"type": {"const": "int64"}}},
             "then": {"properties": {"value": {"type": "integer"}}}},
            {"if": {"properties": {"type": {"const": "float64"}}},
             "then": {"properties": {"value": {"type": "number"}}}},
        ]}},
}
