"""OTLP JSON, the one codec: the format of ``trace.json`` and of the trace store.

Writing the SDK's spans, we encode with OpenTelemetry's own OTLP JSON encoder
(``opentelemetry-exporter-otlp-json-common``), which follows the rules where
OTLP/JSON departs from the generic protobuf mapping (OTLP specification, "JSON
Protobuf Encoding"): trace and span ids are hex strings, not base64, and enums
are integers. The result is what the OpenTelemetry Collector's file exporter
writes, and what Jaeger reads. (It replaced the protobuf encoder followed by
protobuf's JSON mapping and an id rewrite: the same document, about a third of
the CPU a span, and every span of a traced service passes through it.)

Reading, every document becomes the ``Span`` records of ``novalab.tracing.model``
(:func:`spans_from_otlp`), and records go back to a document with
:func:`spans_to_otlp`. Every reader in novalab (the trace store, ``trace
collect``, the stitcher, ``flow check``, the diagrams) goes through these two
functions, so a value decodes the same way everywhere: ``intValue`` (a string
in JSON) as ``int``, ``doubleValue`` as ``float``, arrays as tuples, key-value
lists as dicts. The SDK's own objects convert with :func:`from_readable_spans`.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from novalab.tracing.model import KINDS, Event, Link, Span, frozen
from novalab.tracing.private import open_private, private_dir, write_private


def to_otlp_dict(spans: Sequence[ReadableSpan]) -> dict:
    """``{"resourceSpans": [...]}`` for ``spans``, grouped by resource and scope."""
    doc = encode_spans(spans).to_dict() if spans else {}
    doc.setdefault("resourceSpans", [])
    return doc


def write_trace_file(path: str | os.PathLike, spans: Sequence[ReadableSpan]) -> Path:
    """Write ``spans`` as one OTLP JSON document; returns the path written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_private(path, json.dumps(to_otlp_dict(spans), indent=1))


# The store's retention defaults (docs/tracing.md): a process's file is rotated at
# 16 MiB, and each process keeps at most 8 rotated segments, none older than 7 days.
SEGMENT_BYTES = 16 * 1024 * 1024
KEEP_SEGMENTS = 8
MAX_AGE_SECONDS = 7 * 24 * 3600


class OtlpJsonLinesExporter(SpanExporter):
    """Append each exported batch as one OTLP JSON line, like the Collector's file exporter.

    The file is rotated once it passes ``segment_bytes``: renamed to
    ``<name>.<UTC time>.jsonl`` beside it (readers glob ``*.jsonl``, so rotated
    segments stay readable), and this process's oldest segments are deleted
    beyond ``keep_segments`` or ``max_age`` seconds. Each process prunes only its
    own segments, so no writer ever loses a file it still appends to.
    """

    def __init__(self, path: str | os.PathLike, *, segment_bytes: int = SEGMENT_BYTES,
                 keep_segments: int = KEEP_SEGMENTS, max_age: float = MAX_AGE_SECONDS):
        self.path = Path(path)
        private_dir(self.path.parent)
        self.segment_bytes = segment_bytes
        self.keep_segments = keep_segments
        self.max_age = max_age
        self._lock = threading.Lock()
        self._file = open_private(self.path)  # closed in shutdown; 0600 (tracing/private.py)
        self.prune()

    def segments(self) -> list[Path]:
        """This file's rotated segments, oldest first (their names sort by time)."""
        return sorted(self.path.parent.glob(f"{self.path.stem}.*Z.jsonl"))

    def prune(self, now: float | None = None) -> list[Path]:
        """Delete rotated segments beyond the count or older than the age limit."""
        now = time.time() if now is None else now
        segments = self.segments()
        doomed = segments[:max(0, len(segments) - self.keep_segments)]
        for segment in segments[len(doomed):]:
            try:
                if now - segment.stat().st_mtime > self.max_age:
                    doomed.append(segment)
            except FileNotFoundError:
                continue
        for segment in doomed:
            segment.unlink(missing_ok=True)
        return doomed

    def _rotate(self) -> None:
        self._file.close()
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"{time.time() % 1:.6f}"[1:]
        self.path.replace(self.path.with_name(f"{self.path.stem}.{stamp}Z.jsonl"))
        self._file = open_private(self.path)
        self.prune()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        line = json.dumps(to_otlp_dict(spans), separators=(",", ":"))
        with self._lock:
            if self._file.closed:
                return SpanExportResult.FAILURE
            self._file.write(line + "\n")
            self._file.flush()
            if self._file.tell() >= self.segment_bytes:
                self._rotate()
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with self._lock:
            self._file.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


# -- reading: OTLP JSON to span records ------------------------------------------------------

class TraceFormatError(ValueError):
    """A trace file that cannot be read; the message says where and why."""


_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR", "STATUS_CODE_UNSET": "UNSET",
           "STATUS_CODE_OK": "OK", "STATUS_CODE_ERROR": "ERROR"}
_STATUS_CODE = {"UNSET": 0, "OK": 1, "ERROR": 2}


def hex_id(value: Any, size: int, where: str) -> str:
    """An OTLP id as lowercase hex: hex is taken as is, base64 (protobuf's JSON) is decoded."""
    if not isinstance(value, str) or not value:
        raise TraceFormatError(f"{where}: missing id")
    text = value.lower()
    if len(text) == size * 2 and all(c in "0123456789abcdef" for c in text):
        return text
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != size:
        raise TraceFormatError(f"{where}: {value!r} is neither {size * 2} hex digits "
                               f"nor base64 of {size} bytes")
    return raw.hex()


def decode_value(value: Mapping[str, Any] | None) -> Any:
    """The Python value of an OTLP ``AnyValue`` (``{"intValue": "3"}`` is ``3``)."""
    if not isinstance(value, Mapping) or not value:
        return None
    key, inner = next(iter(value.items()))
    if key == "intValue":
        return int(inner)
    if key == "doubleValue":
        return float(inner)
    if key == "boolValue":
        return bool(inner)
    if key == "arrayValue":
        return tuple(decode_value(v) for v in (inner or {}).get("values", []))
    if key == "kvlistValue":
        return decode_attributes((inner or {}).get("values"))
    return inner  # stringValue, bytesValue (base64 text)


def decode_attributes(items: Iterable[Mapping[str, Any]] | None) -> dict[str, Any]:
    """``[{"key": k, "value": AnyValue}, ...]`` as a dict."""
    return {item["key"]: decode_value(item.get("value")) for item in items or ()}


def encode_value(value: Any) -> dict:
    """The OTLP JSON ``AnyValue`` of a Python value (the inverse of :func:`decode_value`)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [encode_value(v) for v in value]}}
    if isinstance(value, Mapping):
        return {"kvlistValue": {"values": encode_attributes(value)}}
    return {"stringValue": str(value)}


def encode_attributes(attributes: Mapping[str, Any]) -> list[dict]:
    return [{"key": key, "value": encode_value(value)} for key, value in attributes.items()]


def _kind(value: Any) -> str:
    if isinstance(value, int):
        return KINDS[value - 1] if 1 <= value <= len(KINDS) else "INTERNAL"
    if isinstance(value, str):
        word = value.removeprefix("SPAN_KIND_")
        return word if word in KINDS else "INTERNAL"
    return "INTERNAL"


def _span(raw: Mapping[str, Any], resource: Mapping[str, Any], scope: str, here: str) -> Span:
    parent = raw.get("parentSpanId")
    status = raw.get("status") or {}
    return Span(
        trace_id=hex_id(raw.get("traceId"), 16, here + " traceId"),
        span_id=hex_id(raw.get("spanId"), 8, here + " spanId"),
        parent_id=hex_id(parent, 8, here + " parentSpanId") if parent else None,
        name=str(raw.get("name", "")),
        kind=_kind(raw.get("kind")),
        service=str(resource.get("service.name", "unknown_service")),
        host=resource.get("host.name"),
        start_ns=int(raw["startTimeUnixNano"]),
        end_ns=int(raw.get("endTimeUnixNano") or raw["startTimeUnixNano"]),
        attributes=frozen(decode_attributes(raw.get("attributes"))),
        events=tuple(Event(e.get("name", ""), int(e.get("timeUnixNano", 0)),
                           frozen(decode_attributes(e.get("attributes"))))
                     for e in raw.get("events") or ()),
        links=tuple(Link(hex_id(ln.get("traceId"), 16, here + " link"),
                         hex_id(ln.get("spanId"), 8, here + " link"),
                         frozen(decode_attributes(ln.get("attributes"))))
                    for ln in raw.get("links") or ()),
        status=_STATUS.get(status.get("code", 0), "UNSET"),
        status_message=status.get("message", ""),
        resource=frozen(resource), scope=scope)


def spans_from_otlp(doc: Mapping[str, Any], where: str = "OTLP document",
                    trace_ids: set[str] | None = None) -> list[Span]:
    """The spans of one ``{"resourceSpans": [...]}`` document (of ``trace_ids`` only, if given).

    Raises :class:`TraceFormatError` naming the span that could not be read.
    """
    spans: list[Span] = []
    for r_index, resource_spans in enumerate(doc.get("resourceSpans") or ()):
        resource = decode_attributes((resource_spans.get("resource") or {}).get("attributes"))
        for scope_spans in resource_spans.get("scopeSpans") or ():
            scope = (scope_spans.get("scope") or {}).get("name", "")
            for s_index, raw in enumerate(scope_spans.get("spans") or ()):
                if trace_ids is not None and str(raw.get("traceId", "")).lower() not in trace_ids:
                    continue
                here = f"{where}: resourceSpans[{r_index}] span {s_index}"
                try:
                    spans.append(_span(raw, resource, scope, here))
                except TraceFormatError:
                    raise
                except (KeyError, TypeError, ValueError, AttributeError) as exc:
                    raise TraceFormatError(f"{here}: malformed span ({exc!r})") from exc
    return spans


def spans_from_lines(lines: Iterable[str], where: str = "trace store",
                     trace_ids: set[str] | None = None) -> list[Span]:
    """The spans of OTLP JSON lines, one document a line, as the store's files hold them.

    A line that does not parse (a process is writing it right now) is skipped;
    with ``trace_ids``, lines naming none of them are skipped before parsing.
    """
    spans: list[Span] = []
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or (trace_ids is not None and not any(t in line for t in trace_ids)):
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            continue
        spans.extend(spans_from_otlp(doc, f"{where} line {number}", trace_ids))
    return spans


# -- writing: span records back to OTLP JSON ----------------------------------------------------

def _encode_span(span: Span) -> dict:
    out: dict[str, Any] = {
        "traceId": span.trace_id, "spanId": span.span_id, "name": span.name,
        "kind": KINDS.index(span.kind) + 1 if span.kind in KINDS else 1,
        "startTimeUnixNano": str(span.start_ns), "endTimeUnixNano": str(span.end_ns),
        "attributes": encode_attributes(span.attributes),
        "status": ({"code": _STATUS_CODE[span.status]} if span.status != "UNSET" else {}),
    }
    if span.status_message:
        out["status"]["message"] = span.status_message
    if span.parent_id:
        out["parentSpanId"] = span.parent_id
    if span.events:
        out["events"] = [{"name": e.name, "timeUnixNano": str(e.time_ns),
                          "attributes": encode_attributes(e.attributes)} for e in span.events]
    if span.links:
        out["links"] = [{"traceId": ln.trace_id, "spanId": ln.span_id,
                         "attributes": encode_attributes(ln.attributes)} for ln in span.links]
    return out


def spans_to_otlp(spans: Iterable[Span]) -> dict:
    """``{"resourceSpans": [...]}`` of ``spans``: grouped by resource, then scope, by start.

    A span seen twice (an exporter retried a batch) is written once.
    """
    grouped: dict[Any, tuple[Mapping[str, Any], dict[str, list[dict]]]] = {}
    seen: set[tuple[str, str]] = set()
    for span in sorted(spans, key=lambda s: (s.start_ns, s.span_id)):
        if (span.trace_id, span.span_id) in seen:
            continue
        seen.add((span.trace_id, span.span_id))
        key = json.dumps(dict(span.resource), sort_keys=True, default=str)
        resource, scopes = grouped.setdefault(key, (span.resource, {}))
        scopes.setdefault(span.scope, []).append(_encode_span(span))
    return {"resourceSpans": [
        {"resource": {"attributes": encode_attributes(resource)},
         "scopeSpans": [{"scope": {"name": scope}, "spans": items}
                        for scope, items in scopes.items()]}
        for resource, scopes in grouped.values()]}


# -- the SDK's in-memory spans ------------------------------------------------------------------

def from_readable_spans(spans: Iterable[Any]) -> list[Span]:
    """The SDK's ``ReadableSpan`` objects as span records (no JSON round trip)."""
    out: list[Span] = []
    for span in spans:
        ctx = span.context
        resource = dict(span.resource.attributes) if span.resource else {}
        status = span.status
        out.append(Span(
            trace_id=format(ctx.trace_id, "032x"),
            span_id=format(ctx.span_id, "016x"),
            parent_id=format(span.parent.span_id, "016x") if span.parent else None,
            name=span.name,
            kind=span.kind.name,
            service=str(resource.get("service.name", "unknown_service")),
            host=resource.get("host.name"),
            start_ns=int(span.start_time or 0),
            end_ns=int(span.end_time or span.start_time or 0),
            attributes=frozen(dict(span.attributes or {})),
            events=tuple(Event(e.name, int(e.timestamp), frozen(dict(e.attributes or {})))
                         for e in span.events),
            links=tuple(Link(format(ln.context.trace_id, "032x"),
                             format(ln.context.span_id, "016x"),
                             frozen(dict(ln.attributes or {}))) for ln in span.links),
            status=status.status_code.name if status else "UNSET",
            status_message=(status.description or "") if status else "",
            resource=frozen(resource),
            scope=span.instrumentation_scope.name if span.instrumentation_scope else ""))
    return out
