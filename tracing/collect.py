"""Read spans back from the trace store's files and tell when a trace is whole.

Every process of a deployment appends its spans to its own file in the state
directory, ``traces/<unit>.jsonl``: one line per exported batch, each line an
OTLP JSON ``{"resourceSpans": [...]}`` (what :class:`OtlpJsonLinesExporter` and
the Collector's file exporter write). A trace crosses many of these files.
This module reads them (through the one codec, ``otlp_json``), keeps the spans
of the traces asked for, and decides whether a trace is complete yet: spans
are exported only when they end, in batches, by many processes, so a trace
read too early misses parents or whole subtrees.

Choosing *which* trace a user means (by server, request id, the latest) is
``store.py``'s job; joining an untraced client's requests is ``stitch.py``'s.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from novalab.tracing import attributes as attr
from novalab.tracing.model import Span
from novalab.tracing.otlp_json import decode_attributes, spans_from_lines, spans_to_otlp
from novalab.tracing.private import private_dir, write_private

HEALTH_USER_AGENT_PREFIX = "novalab-health"
CLIENT_SERVICE = "novalab-client"


def trace_files(directory: str | os.PathLike) -> list[Path]:
    """The store's span files (``*.jsonl``), rotated segments included."""
    return sorted(Path(directory).glob("*.jsonl"))


def read_dir(directory: str | os.PathLike, trace_ids: set[str] | None = None) -> list[Span]:
    """Every span in the directory's files (of ``trace_ids`` only, if given)."""
    spans: list[Span] = []
    for path in trace_files(directory):
        try:
            with open(path, encoding="utf-8") as handle:
                spans.extend(spans_from_lines(handle, str(path), trace_ids))
        except FileNotFoundError:
            continue  # a segment pruned while we listed the folder
    return spans


def to_document(spans: Iterable[Span]) -> dict:
    """``{"resourceSpans": [...]}`` with spans regrouped by resource, then scope."""
    return spans_to_otlp(spans)


def by_trace(spans: Iterable[Span]) -> dict[str, list[Span]]:
    traces: dict[str, list[Span]] = defaultdict(list)
    for span in spans:
        traces[span.trace_id].append(span)
    return dict(traces)


def roots(spans: Iterable[Span]) -> list[Span]:
    """Spans with no parent (the trace's start)."""
    return [s for s in spans if s.parent_id is None]


def orphans(spans: list[Span]) -> list[Span]:
    """Spans whose parent is not among ``spans`` (not ended or not flushed yet)."""
    ids = {s.span_id for s in spans}
    return [s for s in spans if s.parent_id and s.parent_id not in ids]


def _is_http(span: Span) -> bool:
    return span.get(attr.HTTP_REQUEST_METHOD) is not None


def unanswered(spans: Iterable[Span]) -> set[str]:
    """Ids of spans whose other end has not been recorded yet.

    A PRODUCER span waits for a CONSUMER that is its child or links to it (RPC
    replies); an HTTP CLIENT span waits for its SERVER child (every HTTP service
    of novalab is traced). A cast still queued, or a request whose server span
    has not been exported, leaves a whole subtree missing without any span
    missing its parent, so "no orphans" alone cannot tell a trace is whole.
    """
    waiting: set[str] = set()
    answered: set[str] = set()
    for span in spans:
        if span.kind == "PRODUCER" or (span.kind == "CLIENT" and _is_http(span)):
            waiting.add(span.span_id)
        elif span.kind == "CONSUMER":
            answered.add(span.parent_id)
            answered.update(link.span_id for link in span.links)
        elif span.kind == "SERVER":
            answered.add(span.parent_id)
    return waiting - answered


def incomplete(spans: Iterable[Span]) -> bool:
    """True while some span misses its parent, or some hop has no recorded other end.

    The one test of "is this trace whole yet" for every reader: spans from the
    store's files and spans still in memory (``novalab boot``) alike.
    """
    spans = list(spans)
    return bool(orphans(spans)) or bool(unanswered(spans))


def started_by_request(root: Span) -> bool:
    """A user's request: a SERVER span nobody traced before us, or a traced client's root."""
    if root.service == CLIENT_SERVICE:
        return True
    agent = str(root.get(attr.USER_AGENT_ORIGINAL) or "")
    return root.kind == "SERVER" and not agent.startswith(HEALTH_USER_AGENT_PREFIX)


def latest_trace_id(spans: Iterable[Span]) -> str | None:
    candidates = [s for s in roots(spans) if started_by_request(s)]
    return max(candidates, key=lambda s: s.start_ns).trace_id if candidates else None


def wait_for_trace(directory: str | os.PathLike, trace_id: str, *, timeout: float = 10.0,
                   settle: float = 0.7) -> list[Span]:
    """The trace once it looks whole (``incomplete`` says no) and nothing new for ``settle``.

    Each process exports in batches (every 0.5 s), and a span is exported only
    when it ends. Bounded by ``timeout``: what is there by then is returned.
    """
    deadline = time.monotonic() + timeout
    previous = -1
    while True:
        spans = read_dir(directory, {trace_id})
        count = len({s.span_id for s in spans})
        if spans and not incomplete(spans) and count == previous:
            return spans
        if time.monotonic() > deadline:
            return spans
        previous = count
        time.sleep(settle)


@dataclass
class Merged:
    root: Path                 # the merged store's state directory
    files: int                 # span files copied
    hosts: list[str]           # host.name of the resources found, sorted


def merge_stores(state_dirs: Iterable[str | os.PathLike], into: str | os.PathLike) -> Merged:
    """Copy the span files of several state directories into ``into``'s trace store.

    Services on several hosts write to a state directory each (a controller's,
    one per compute host); a boot's spans are spread over them. Copied side by
    side, prefixed with the source's position and name (two hosts may both have
    a ``novalab-web.jsonl``), they are one store that every reader (``trace
    list``, ``collect``, ``diagram``, the web page) reads as it reads one host's.
    The span timestamps are each host's clock: keep them in sync (NTP, chrony).
    """
    root = Path(into).absolute()
    target = private_dir(root / "traces")
    files, hosts = 0, set()
    for index, state_dir in enumerate(state_dirs, 1):
        source = Path(state_dir)
        source = source / "traces" if (source / "traces").is_dir() else source
        for path in trace_files(source):
            copy = target / f"{index}-{source.parent.name or 'host'}-{path.name}"
            shutil.copyfile(path, copy)
            copy.chmod(0o600)
            files += 1
            with open(copy, encoding="utf-8") as handle:
                hosts.update(s.host for s in spans_from_lines(handle, str(copy)) if s.host)
    return Merged(root, files, sorted(hosts))


def write(document: dict, path: str | os.PathLike) -> Path:
    """Write an OTLP JSON document atomically (readers never see half a file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_private(path, json.dumps(document, indent=1))


def summary(document: dict) -> dict:
    """Spans per service, processes, hosts and trace ids of a document (for printing and
    tests)."""
    services: dict[str, int] = defaultdict(int)
    pids, trace_ids, hosts = set(), set(), set()
    for resource_spans in document["resourceSpans"]:
        resource = decode_attributes(resource_spans.get("resource", {}).get("attributes"))
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                services[resource.get(attr.SERVICE_NAME, "?")] += 1
                trace_ids.add(span["traceId"])
                if attr.PROCESS_PID in resource:
                    pids.add(resource[attr.PROCESS_PID])
                if attr.HOST_NAME in resource:
                    hosts.add(resource[attr.HOST_NAME])
    return {"services": dict(services), "pids": pids, "trace_ids": trace_ids,
            "hosts": sorted(hosts), "spans": sum(services.values())}
