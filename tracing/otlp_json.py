"""OTLP JSON: the file format of ``trace.json``.

We encode with the OTLP exporter's own protobuf encoder and protobuf's JSON
mapping, then apply the two rules where OTLP/JSON departs from the generic
protobuf mapping (OTLP specification, "JSON Protobuf Encoding"): trace and span
ids are hex strings, not base64, and enums are integers. The result is what the
OpenTelemetry Collector's file exporter writes, and what Jaeger and our diagram
tools read.
"""

from __future__ import annotations

import base64
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

_ID_KEYS = ("traceId", "spanId", "parentSpanId")


def _hex_ids(node):
    """Rewrite base64 id fields to lowercase hex, in place, everywhere below ``node``."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_KEYS and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            else:
                _hex_ids(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids(item)
    return node


def to_otlp_dict(spans: Sequence[ReadableSpan]) -> dict:
    """``{"resourceSpans": [...]}`` for ``spans``, grouped by resource and scope."""
    request = encode_spans(spans)
    doc = MessageToDict(request, use_integers_for_enums=True)
    doc.setdefault("resourceSpans", [])
    return _hex_ids(doc)


def write_trace_file(path: str | os.PathLike, spans: Sequence[ReadableSpan]) -> Path:
    """Write ``spans`` as one OTLP JSON document; returns the path written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(to_otlp_dict(spans), indent=1))
    tmp.replace(path)
    return path


class OtlpJsonLinesExporter(SpanExporter):
    """Append each exported batch as one OTLP JSON line, like the Collector's file exporter."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in shutdown

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        line = json.dumps(to_otlp_dict(spans), separators=(",", ":"))
        with self._lock:
            if self._file.closed:
                return SpanExportResult.FAILURE
            self._file.write(line + "\n")
            self._file.flush()
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with self._lock:
            self._file.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
