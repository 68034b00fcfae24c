"""Merge the trace files of many processes into one OTLP JSON document.

In a one-process-per-service deployment each process appends its spans to its
own file, ``traces/<unit>.jsonl``: one line per exported batch, each line an
OTLP JSON ``{"resourceSpans": [...]}`` (what :class:`OtlpJsonLinesExporter` and
the Collector's file exporter write). A trace crosses many of these files. This
module reads them all, keeps the spans of one trace, and regroups them by
resource (one ``resourceSpans`` entry per process and service) and scope,
giving the same shape ``novalab boot`` writes.

Selecting a trace: by id; the *latest* trace a request started (its root is a
SERVER span or a client's root, health probes excluded: heartbeats and other
periodic work start traces too); or the boot of one server (see ``stitch``).
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

SPAN_KIND_SERVER = 2
SPAN_KIND_CLIENT = 3
SPAN_KIND_PRODUCER = 4
SPAN_KIND_CONSUMER = 5
HEALTH_USER_AGENT_PREFIX = "novalab-health"
CLIENT_SERVICE = "novalab-client"


def value(any_value: dict):
    """The Python value of an OTLP JSON ``AnyValue`` (int64 arrives as a string)."""
    if not any_value:
        return None
    (kind, raw), = any_value.items()
    if kind == "intValue":
        return int(raw)
    if kind == "arrayValue":
        return [value(v) for v in raw.get("values", [])]
    if kind == "kvlistValue":
        return {kv["key"]: value(kv.get("value", {})) for kv in raw.get("values", [])}
    return raw


def attributes(node: dict) -> dict:
    return {kv["key"]: value(kv.get("value", {})) for kv in node.get("attributes", [])}


def any_value(python) -> dict:
    """The OTLP JSON ``AnyValue`` of a Python value."""
    if isinstance(python, bool):
        return {"boolValue": python}
    if isinstance(python, int):
        return {"intValue": str(python)}
    if isinstance(python, float):
        return {"doubleValue": python}
    if isinstance(python, list | tuple):
        return {"arrayValue": {"values": [any_value(v) for v in python]}}
    return {"stringValue": str(python)}


def kv(key: str, python) -> dict:
    return {"key": key, "value": any_value(python)}


class Hop(NamedTuple):
    """What trace completeness needs to know of one span."""

    span_id: object
    parent_id: object
    kind: int  # the OTLP number: SERVER 2, CLIENT 3, PRODUCER 4, CONSUMER 5
    links: Iterable[object] = ()
    http: bool = False  # an HTTP request (``http.request.method`` is set)


@dataclass
class SpanRecord:
    """One span with the resource and scope it was exported under."""

    resource: dict
    scope: dict
    span: dict

    @property
    def trace_id(self) -> str:
        return self.span["traceId"]

    @property
    def span_id(self) -> str:
        return self.span["spanId"]

    @property
    def parent_span_id(self) -> str | None:
        return self.span.get("parentSpanId") or None

    @property
    def name(self) -> str:
        return self.span["name"]

    @property
    def kind(self) -> int:
        return int(self.span.get("kind", 0))

    @property
    def links(self) -> list[str]:
        return [link["spanId"] for link in self.span.get("links", [])]

    @property
    def hop(self) -> Hop:
        return Hop(self.span_id, self.parent_span_id, self.kind, self.links,
                   self.attr("http.request.method") is not None)

    @property
    def start(self) -> int:
        return int(self.span["startTimeUnixNano"])

    @property
    def end(self) -> int:
        return int(self.span["endTimeUnixNano"])

    def attr(self, key: str, default=None):
        for item in self.span.get("attributes", []):
            if item["key"] == key:
                return value(item.get("value", {}))
        return default

    def resource_attr(self, key: str, default=None):
        return attributes(self.resource).get(key, default)


def read_lines(lines: Iterable[str], trace_ids: set[str] | None = None) -> Iterator[SpanRecord]:
    for line in lines:
        line = line.strip()
        if not line:
            continue
        if trace_ids is not None and not any(t in line for t in trace_ids):
            continue  # cheap: most lines are other traces
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line being written right now
        for resource_spans in doc.get("resourceSpans", []):
            resource = resource_spans.get("resource", {})
            for scope_spans in resource_spans.get("scopeSpans", []):
                scope = scope_spans.get("scope", {})
                for span in scope_spans.get("spans", []):
                    if trace_ids is None or span["traceId"] in trace_ids:
                        yield SpanRecord(resource, scope, span)


def trace_files(directory: str | os.PathLike) -> list[Path]:
    return sorted(Path(directory).glob("*.jsonl"))


def read_dir(directory: str | os.PathLike,
             trace_ids: set[str] | None = None) -> list[SpanRecord]:
    """Every span in the directory's ``*.jsonl`` files (of ``trace_ids`` only, if given)."""
    records: list[SpanRecord] = []
    for path in trace_files(directory):
        with open(path, encoding="utf-8") as handle:
            records.extend(read_lines(handle, trace_ids))
    return records


def _key(node: dict) -> str:
    return json.dumps(node, sort_keys=True)


def to_document(records: Iterable[SpanRecord]) -> dict:
    """``{"resourceSpans": [...]}`` with spans regrouped by resource, then scope."""
    grouped: dict[str, tuple[dict, dict[str, tuple[dict, list]]]] = {}
    seen: set[tuple[str, str]] = set()
    for record in sorted(records, key=lambda r: r.start):
        if (record.trace_id, record.span_id) in seen:
            continue  # a batch exported twice (an exporter retry) counts once
        seen.add((record.trace_id, record.span_id))
        resource, scopes = grouped.setdefault(_key(record.resource), (record.resource, {}))
        scopes.setdefault(_key(record.scope), (record.scope, []))[1].append(record.span)
    return {"resourceSpans": [
        {"resource": resource,
         "scopeSpans": [{"scope": scope, "spans": spans} for scope, spans in scopes.values()]}
        for resource, scopes in grouped.values()]}


def by_trace(records: Iterable[SpanRecord]) -> dict[str, list[SpanRecord]]:
    traces: dict[str, list[SpanRecord]] = defaultdict(list)
    for record in records:
        traces[record.trace_id].append(record)
    return dict(traces)


def roots(records: Iterable[SpanRecord]) -> list[SpanRecord]:
    """Spans with no parent (the trace's start)."""
    return [r for r in records if r.parent_span_id is None]


def orphans(records: list[SpanRecord]) -> list[SpanRecord]:
    """Spans whose parent is not among ``records`` (not ended or not flushed yet)."""
    ids = {r.span_id for r in records}
    return [r for r in records if r.parent_span_id and r.parent_span_id not in ids]


def unanswered(hops: Iterable[Hop]) -> set:
    """Ids of spans whose other end has not been recorded yet.

    A PRODUCER span waits for a CONSUMER that is its child or links to it (RPC
    replies); an HTTP CLIENT span waits for its SERVER child (every HTTP service
    of novalab is traced). A cast still queued, or a request whose server span
    has not been exported, leaves a whole subtree missing without any span
    missing its parent, so "no orphans" alone cannot tell a trace is whole.
    """
    waiting: set = set()
    answered: set = set()
    for hop in hops:
        if hop.kind == SPAN_KIND_PRODUCER or (hop.kind == SPAN_KIND_CLIENT and hop.http):
            waiting.add(hop.span_id)
        elif hop.kind == SPAN_KIND_CONSUMER:
            answered.add(hop.parent_id)
            answered.update(hop.links)
        elif hop.kind == SPAN_KIND_SERVER:
            answered.add(hop.parent_id)
    return waiting - answered


def incomplete(hops: Iterable[Hop]) -> bool:
    """True while some span misses its parent, or some hop has no recorded other end.

    The one test of "is this trace whole yet" for every reader: spans from files
    (``SpanRecord.hop``) and spans still in memory (``novalab boot``).
    """
    hops = list(hops)
    ids = {hop.span_id for hop in hops}
    return (any(hop.parent_id is not None and hop.parent_id not in ids for hop in hops)
            or bool(unanswered(hops)))


def started_by_request(root: SpanRecord) -> bool:
    """A user's request: a SERVER span nobody traced before us, or a traced client's root."""
    if root.resource_attr("service.name") == CLIENT_SERVICE:
        return True
    agent = root.attr("user_agent.original") or ""
    return root.kind == SPAN_KIND_SERVER and not agent.startswith(HEALTH_USER_AGENT_PREFIX)


def latest_trace_id(records: Iterable[SpanRecord]) -> str | None:
    candidates = [r for r in roots(records) if started_by_request(r)]
    return max(candidates, key=lambda r: r.start).trace_id if candidates else None


def wait_for_trace(directory: str | os.PathLike, trace_id: str, *, timeout: float = 10.0,
                   settle: float = 0.7) -> list[SpanRecord]:
    """The trace once it looks whole (``incomplete`` says no) and nothing new for ``settle``.

    Each process exports in batches (every 0.5 s), and a span is exported only
    when it ends, so a trace read too early misses parents or whole subtrees.
    Bounded by ``timeout``: what is there by then is returned.
    """
    deadline = time.monotonic() + timeout
    previous = -1
    while True:
        records = read_dir(directory, {trace_id})
        count = len({r.span_id for r in records})
        if records and not incomplete(r.hop for r in records) and count == previous:
            return records
        if time.monotonic() > deadline:
            return records
        previous = count
        time.sleep(settle)


def collect(directory: str | os.PathLike, *, trace_id: str | None = None,
            latest: bool = False, server_id: str | None = None,
            timeout: float = 10.0) -> dict:
    """One OTLP JSON document of the chosen trace; raises LookupError if there is none."""
    if server_id:
        from novalab.tracing import stitch

        return to_document(stitch.server_trace(directory, server_id, timeout=timeout))
    if latest:
        trace_id = latest_trace_id(read_dir(directory))
        if trace_id is None:
            raise LookupError(f"no trace started by a request in {directory}")
    if not trace_id:
        raise LookupError("choose a trace: a trace id, --latest or --server")
    trace_id = trace_id.lower()
    records = wait_for_trace(directory, trace_id, timeout=timeout)
    if not records:
        raise LookupError(f"no span of trace {trace_id} in {directory}")
    return to_document(records)


def write(document: dict, path: str | os.PathLike) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(document, indent=1))
    tmp.replace(path)
    return path


def summary(document: dict) -> dict:
    """Spans per service, processes and trace ids of a document (for printing and tests)."""
    services: dict[str, int] = defaultdict(int)
    pids, trace_ids = set(), set()
    for resource_spans in document["resourceSpans"]:
        resource = attributes(resource_spans.get("resource", {}))
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                services[resource.get("service.name", "?")] += 1
                trace_ids.add(span["traceId"])
                if "process.pid" in resource:
                    pids.add(resource["process.pid"])
    return {"services": dict(services), "pids": pids, "trace_ids": trace_ids,
            "spans": sum(services.values())}
