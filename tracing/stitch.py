"""One server's boot as one trace, even when the client sent no ``traceparent``.

The ``openstack`` CLI is not instrumented. Every request it sends starts a new
trace on the server side: the token request, the flavor and image lookups, the
``POST /servers`` (whose trace does follow the build through RPC down to
libvirt, because the services propagate context among themselves) and every
``GET /servers/{id}`` of ``--wait``. Nothing in those requests says they belong
together, so anything that joins them is an inference. We make it an honest one:

* nothing is rewritten silently. Each span keeps its span id, parent and times;
  its original trace id is kept in ``novalab.original_trace_id``;
* one synthetic span, ``openstack client session (stitched)`` of the resource
  ``service.name = openstack-client (stitched)``, ``novalab.synthetic = true``,
  is the root of a new trace id. It carries a span *link* to each original root
  with the role (``token``, ``discovery``, ``lookup``, ``create``, ``poll``,
  ``read``) and the rule that matched (``novalab.stitch.match``);
* the original roots are re-parented under it, marked
  ``novalab.stitch.parent_inferred = true``, so tools that draw one tree from
  one trace id (ours, Jaeger's file upload) can load the session as one file.

What the matching can use, since the services record no token or user on
their spans: the create trace is the one with a ``POST .../servers`` SERVER
span and ``nova.instance.uuid = ID`` below it; polls are ``GET`` roots whose
``url.path`` ends in ``/servers/ID``; everything else is matched on the same
``user_agent.original`` and ``client.address`` as the create, and on time: the
token request is the last ``POST .../auth/tokens`` before the create; lookups
fall between the token and the create; version documents at most 5 s before
the token are discovery; other ``GET`` requests after the create and up to 5 s
after the last poll are the reads the CLI makes to print the server. Two CLI
sessions of the same user agent from the same address at the same time cannot
be told apart this way, and would be stitched together: the links say what
matched, so check them.

When the client *was* traced (``novalab boot``), the create trace already
starts at the client and is returned as it is.
"""

from __future__ import annotations

import hashlib
import os
import time

from novalab.tracing.collect import (
    SPAN_KIND_SERVER,
    SpanRecord,
    by_trace,
    incomplete,
    kv,
    read_dir,
    roots,
    started_by_request,
)

STITCHED_ROOT = "openstack client session (stitched)"
STITCHED_SERVICE = "openstack-client (stitched)"
ORIGINAL_TRACE_ID = "novalab.original_trace_id"
STITCH_ROLE = "novalab.stitch.role"
STITCH_MATCH = "novalab.stitch.match"
PARENT_INFERRED = "novalab.stitch.parent_inferred"
SYNTHETIC = "novalab.synthetic"
GAP_NS = 5_000_000_000  # 5 s


def _method(span: SpanRecord) -> str:
    return span.attr("http.request.method") or span.attr("http.method") or ""


def _path(span: SpanRecord) -> str:
    return (span.attr("url.path") or span.attr("http.target") or "").split("?")[0].rstrip("/")


def _route(span: SpanRecord) -> str:
    return span.attr("http.route") or _path(span)


def _is_version_document(span: SpanRecord) -> bool:
    path = _path(span)
    return path == "" or path.count("/") == 1 and path[1:2] == "v"


def find_create(traces: dict[str, list[SpanRecord]], server_id: str) -> SpanRecord | None:
    """The ``POST .../servers`` SERVER span of the trace that created ``server_id``."""
    for records in traces.values():
        if not any(r.attr("nova.instance.uuid") == server_id for r in records):
            continue
        for record in records:
            if record.kind == SPAN_KIND_SERVER and _method(record) == "POST" and \
                    _route(record).endswith("/servers"):
                return record
    return None


def session(traces: dict[str, list[SpanRecord]], create: SpanRecord,
            server_id: str) -> list[tuple[SpanRecord, str, str]]:
    """(original root, role, rule) for every trace of the client session around ``create``."""
    agent, address = create.attr("user_agent.original"), create.attr("client.address")
    client = [r for tid, records in traces.items() if tid != create.trace_id
              for r in roots(records)
              if r.kind == SPAN_KIND_SERVER and started_by_request(r)
              and r.attr("user_agent.original") == agent
              and r.attr("client.address") == address]
    client.sort(key=lambda r: r.start)
    same = "same user_agent.original and client.address as the create"
    chosen = [(create, "create", f"a span below has nova.instance.uuid = {server_id}")]
    polls = [r for r in client if _method(r) == "GET" and r.start >= create.start
             and _path(r).endswith(f"/servers/{server_id}")]
    chosen += [(r, "poll", f"GET url.path ends with /servers/{server_id}") for r in polls]
    tokens = [r for r in client if _method(r) == "POST" and _route(r).endswith("/auth/tokens")
              and r.start < create.start]
    token = tokens[-1] if tokens else None
    if token is not None:
        chosen.append((token, "token", f"last POST /auth/tokens before the create; {same}"))
        chosen += [(r, "discovery", f"version document within 5 s before the token; {same}")
                   for r in client if token.start - GAP_NS <= r.start < token.start
                   and _is_version_document(r)]
    begin = token.start if token else create.start
    chosen += [(r, "lookup", f"between the token request and the create; {same}")
               for r in client if begin < r.start < create.start and r is not token]
    end = max((r.end for r in polls), default=create.end)
    picked = {id(r) for r, _, _ in chosen}
    chosen += [(r, "read", f"GET after the create, at most 5 s after the last poll; {same}")
               for r in client if id(r) not in picked and _method(r) == "GET"
               and create.start < r.start <= end + GAP_NS]
    return sorted(chosen, key=lambda item: item[0].start)


def stitch(traces: dict[str, list[SpanRecord]], chosen: list[tuple[SpanRecord, str, str]],
           server_id: str) -> list[SpanRecord]:
    """The chosen traces as one: a synthetic root, links to each original root, provenance."""
    create = next(root for root, role, _ in chosen if role == "create")
    digest = hashlib.sha256(f"novalab-stitch:{server_id}:{create.trace_id}".encode()).hexdigest()
    trace_id, root_id = digest[:32], digest[32:48]
    members = [r for root, _, _ in chosen for r in traces[root.trace_id]]
    root_ids = {root.span_id for root, _, _ in chosen}
    out: list[SpanRecord] = []
    for record in members:
        span = dict(record.span, traceId=trace_id,
                    attributes=[*record.span.get("attributes", []),
                                kv(ORIGINAL_TRACE_ID, record.trace_id)])
        if record.span_id in root_ids and record.parent_span_id is None:
            span["parentSpanId"] = root_id
            span["attributes"].append(kv(PARENT_INFERRED, True))
        out.append(SpanRecord(record.resource, record.scope, span))
    synthetic = {
        "traceId": trace_id, "spanId": root_id, "name": STITCHED_ROOT, "kind": 1,
        "startTimeUnixNano": str(min(r.start for r in members)),
        "endTimeUnixNano": str(max(r.end for r in members)),
        "attributes": [kv("nova.instance.uuid", server_id), kv(SYNTHETIC, True),
                       kv("user_agent.original", create.attr("user_agent.original") or ""),
                       kv("novalab.stitch.traces", len(chosen))],
        "links": [{"traceId": root.trace_id, "spanId": root.span_id,
                   "attributes": [kv(STITCH_ROLE, role), kv(STITCH_MATCH, rule)]}
                  for root, role, rule in chosen],
        "status": {},
    }
    resource = {"attributes": [kv("service.name", STITCHED_SERVICE),
                               kv("service.namespace", "novalab"), kv(SYNTHETIC, True)]}
    return [SpanRecord(resource, {"name": "novalab.tracing.stitch"}, synthetic), *out]


def server_trace(directory: str | os.PathLike, server_id: str, *,
                 timeout: float = 10.0, settle: float = 0.7) -> list[SpanRecord]:
    """The boot of ``server_id`` as one trace, once its spans are all written (bounded)."""
    deadline = time.monotonic() + timeout
    previous = -1
    while True:
        traces = by_trace(read_dir(directory))
        create = find_create(traces, server_id)
        if create is not None:
            if create.parent_span_id is not None:  # a traced client: already one trace
                chosen_ids = [create.trace_id]
            else:
                chosen = session(traces, create, server_id)
                chosen_ids = [root.trace_id for root, _, _ in chosen]
            members = [r for tid in chosen_ids for r in traces[tid]]
            whole = not any(incomplete(r.hop for r in traces[tid]) for tid in chosen_ids)
            if (whole and len(members) == previous) or time.monotonic() > deadline:
                if create.parent_span_id is not None:
                    return traces[create.trace_id]
                return stitch(traces, chosen, server_id)
            previous = len(members)
        elif time.monotonic() > deadline:
            raise LookupError(f"no trace in {directory} created server {server_id}")
        time.sleep(settle)
