"""Load traces from files or memory into the model of ``novalab.diagrams.model``.

Three file formats are recognised by their shape, not their name:

- OTLP JSON, one document ``{"resourceSpans": [...]}`` (what ``novalab boot``
  writes, and the OpenTelemetry Collector's file exporter);
- OTLP JSON lines, one such document per line (``novalab serve``'s
  ``traces.jsonl``);
- Jaeger JSON, ``{"data": [{"traceID", "spans", "processes"}]}`` (Jaeger's
  query API and its UI's "JSON File" upload).

OTLP is decoded by the one codec, ``novalab.tracing.otlp_json`` (which also
takes the SDK's ``ReadableSpan`` objects directly); this module adds Jaeger's
format and tells the formats apart. OTLP ids may be hex (as the
specification's JSON encoding says) or base64 (as a plain protobuf JSON
mapping writes them); both load.

Jaeger has no parent field: the first ``CHILD_OF`` reference is the parent, or,
without one, the first reference of any type (as Jaeger's UI does), and every
``FOLLOWS_FROM`` reference is also kept as a link. ``jaeger.py`` writes
references so that this reads back the spans it exported.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from novalab.tracing.model import KINDS, Event, Link, Span, Trace, frozen
from novalab.tracing.otlp_json import (  # noqa: F401 - the codec, re-exported for callers
    TraceFormatError,
    from_readable_spans,
    hex_id,
    spans_from_otlp,
)

# -- Jaeger JSON --------------------------------------------------------------------------

def _jaeger_tags(tags: Iterable[Mapping[str, Any]] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for tag in tags or ():
        value = tag.get("value")
        kind = str(tag.get("type", "string")).lower()
        if kind in ("int64", "int"):
            value = int(value)
        elif kind in ("float64", "float"):
            value = float(value)
        elif kind == "bool" and isinstance(value, str):
            value = value.lower() == "true"
        out[tag["key"]] = value
    return out


def spans_from_jaeger(doc: Mapping[str, Any], where: str = "Jaeger document") -> list[Span]:
    """The spans of a ``{"data": [{"traceID", "spans", "processes"}]}`` document."""
    spans: list[Span] = []
    for t_index, trace in enumerate(doc.get("data") or ()):
        processes = trace.get("processes") or {}
        for s_index, raw in enumerate(trace.get("spans") or ()):
            here = f"{where}: data[{t_index}] span {s_index}"
            try:
                process = processes.get(raw.get("processID")) or raw.get("process") or {}
                resource = _jaeger_tags(process.get("tags"))
                resource.setdefault("service.name", process.get("serviceName", "unknown_service"))
                tags = _jaeger_tags(raw.get("tags"))
                kind = str(tags.pop("span.kind", "internal")).upper()
                code = tags.pop("otel.status_code", None)
                message = tags.pop("otel.status_description", "")
                if code is None:
                    code = "ERROR" if tags.get("error") is True else "UNSET"
                if tags.get("error") is True:
                    tags.pop("error")
                scope = tags.pop("otel.scope.name", "") or tags.pop("otel.library.name", "")
                tags.pop("otel.scope.version", None)
                refs = raw.get("references") or []
                parent = next((r for r in refs if r.get("refType") == "CHILD_OF"),
                              refs[0] if refs else None)
                links = [r for r in refs if r.get("refType") == "FOLLOWS_FROM"]
                start_ns = int(raw["startTime"]) * 1000
                logs = []
                for log in raw.get("logs") or ():
                    fields = _jaeger_tags(log.get("fields"))
                    name = str(fields.pop("event", "log"))
                    logs.append(Event(name, int(log.get("timestamp", 0)) * 1000, frozen(fields)))
                spans.append(Span(
                    trace_id=hex_id(raw.get("traceID", trace.get("traceID")).rjust(32, "0"),
                                     16, here + " traceID"),
                    span_id=hex_id(str(raw.get("spanID", "")).rjust(16, "0"), 8,
                                    here + " spanID"),
                    parent_id=hex_id(parent["spanID"].rjust(16, "0"), 8, here + " reference")
                    if parent else None,
                    name=str(raw.get("operationName", "")),
                    kind=kind if kind in KINDS else "INTERNAL",
                    service=str(resource["service.name"]),
                    host=resource.get("host.name") or resource.get("hostname"),
                    start_ns=start_ns,
                    end_ns=start_ns + int(raw.get("duration", 0)) * 1000,
                    attributes=frozen(tags),
                    events=tuple(logs),
                    links=tuple(Link(hex_id(r["traceID"].rjust(32, "0"), 16, here + " ref"),
                                     hex_id(r["spanID"].rjust(16, "0"), 8, here + " ref"))
                                for r in links),
                    status=str(code).upper() if str(code).upper() in ("OK", "ERROR") else "UNSET",
                    status_message=str(message),
                    resource=frozen(resource), scope=str(scope)))
            except TraceFormatError:
                raise
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise TraceFormatError(f"{here}: malformed span ({exc!r})") from exc
    return spans


# -- files ----------------------------------------------------------------------------------

def detect_format(doc: Any) -> str:
    """``"otlp"`` or ``"jaeger"`` for a parsed JSON document, else ``""``."""
    if isinstance(doc, Mapping):
        if "resourceSpans" in doc:
            return "otlp"
        data = doc.get("data")
        if isinstance(data, list) and all(isinstance(t, Mapping) and "spans" in t for t in data):
            return "jaeger"
    return ""


def _spans_from_doc(doc: Any, where: str) -> list[Span]:
    kind = detect_format(doc)
    if kind == "otlp":
        return spans_from_otlp(doc, where)
    if kind == "jaeger":
        return spans_from_jaeger(doc, where)
    shape = type(doc).__name__ if not isinstance(doc, Mapping) else \
        "an object with keys " + ", ".join(sorted(map(str, doc))[:5])
    raise TraceFormatError(f"{where}: JSON, but neither OTLP ({{\"resourceSpans\": [...]}}) "
                           f"nor Jaeger ({{\"data\": [{{\"spans\": ...}}]}}); found {shape}")


def spans_from_text(text: str, where: str = "trace") -> list[Span]:
    """Parse a whole file's text in whichever of the three formats it is."""
    if not text.strip():
        raise TraceFormatError(f"{where}: empty file, no spans")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as whole_error:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        if len(lines) < 2:
            raise TraceFormatError(f"{where}: not JSON ({whole_error})") from whole_error
        spans: list[Span] = []
        for number, line in lines:
            try:
                line_doc = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TraceFormatError(f"{where}: line {number} is not JSON ({exc}); "
                                       "expected one OTLP JSON document per line") from exc
            spans.extend(_spans_from_doc(line_doc, f"{where} line {number}"))
        return spans
    return _spans_from_doc(doc, where)


def load_spans(source: str | os.PathLike | Sequence[Any]) -> list[Span]:
    """Spans from a file path, or from a sequence of ``Span``/``ReadableSpan`` objects."""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError as exc:
            raise TraceFormatError(f"{path}: no such file") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise TraceFormatError(f"{path}: cannot read ({exc})") from exc
        return spans_from_text(text, str(path))
    items = list(source)
    if all(isinstance(s, Span) for s in items):
        return items
    return from_readable_spans(items)


def load_traces(source: str | os.PathLike | Sequence[Any]) -> list[Trace]:
    """One ``Trace`` per trace id, the largest first (ties: by trace id)."""
    by_trace: dict[str, dict[str, Span]] = {}
    for span in load_spans(source):
        by_trace.setdefault(span.trace_id, {})[span.span_id] = span  # duplicates: last wins
    traces = [Trace.of(spans.values()) for spans in by_trace.values()]
    if not traces:
        raise TraceFormatError(f"{source if isinstance(source, (str, os.PathLike)) else 'input'}"
                               ": no spans")
    return sorted(traces, key=lambda t: (-len(t), t.trace_id))


def load_trace(source: str | os.PathLike | Sequence[Any], trace_id: str | None = None) -> Trace:
    """The trace ``trace_id``, or the largest trace in ``source``."""
    traces = load_traces(source)
    if trace_id is None:
        return traces[0]
    for trace in traces:
        if trace.trace_id == trace_id.lower():
            return trace
    known = ", ".join(t.trace_id for t in traces[:5])
    raise TraceFormatError(f"trace {trace_id} not found; the file has {len(traces)} "
                           f"trace(s): {known}")
