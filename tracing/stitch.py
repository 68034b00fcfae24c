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
token request is the last ``POST .../auth/tokens`` in the minute before the
create; lookups fall between the token and the create, at most 5 s before it
(another create is never a lookup); version documents at most 5 s before the
token are discovery; other ``GET`` requests after the create and up to 5 s
after the last poll are the reads the CLI makes to print the server. Two CLI
sessions of the same user agent from the same address at the same time cannot
be told apart this way, and would be stitched together: the links say what
matched, so check them.

When the client *was* traced (``novalab boot``), the create trace already
starts at the client and is returned as it is.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import time

from novalab.tracing import attributes as attr
from novalab.tracing.collect import by_trace, incomplete, read_dir, roots, started_by_request
from novalab.tracing.model import Link, Span, frozen

STITCHED_ROOT = "openstack client session (stitched)"
STITCHED_SERVICE = "openstack-client (stitched)"
STITCH_SCOPE = "novalab.tracing.stitch"
# Re-exported names of the provenance attributes (the vocabulary is attributes.py).
ORIGINAL_TRACE_ID = attr.NOVALAB_ORIGINAL_TRACE_ID
STITCH_ROLE = attr.NOVALAB_STITCH_ROLE
STITCH_MATCH = attr.NOVALAB_STITCH_MATCH
PARENT_INFERRED = attr.NOVALAB_STITCH_PARENT_INFERRED
SYNTHETIC = attr.NOVALAB_SYNTHETIC
GAP_NS = 5_000_000_000  # 5 s
TOKEN_WINDOW_NS = 60_000_000_000  # the CLI asks for its token seconds before the create


def _method(span: Span) -> str:
    return str(span.get(attr.HTTP_REQUEST_METHOD) or span.get("http.method") or "")


def _path(span: Span) -> str:
    return str(span.get(attr.URL_PATH) or span.get("http.target") or "").split("?")[0] \
        .rstrip("/")


def _route(span: Span) -> str:
    return str(span.get(attr.HTTP_ROUTE) or _path(span))


def _is_version_document(span: Span) -> bool:
    path = _path(span)
    return path == "" or path.count("/") == 1 and path[1:2] == "v"


_SERVER_PATH = re.compile(r"/servers/([0-9a-fA-F-]{36})$")


def _of_another_server(span: Span, server_id: str) -> bool:
    """A GET of a different server: another boot's poll, never this session's read."""
    found = _SERVER_PATH.search(_path(span))
    return found is not None and found.group(1) != server_id


def is_create(span: Span) -> bool:
    """nova-api's SERVER span of ``POST .../servers``."""
    return span.kind == "SERVER" and _method(span) == "POST" and _route(span).endswith("/servers")


def find_create(traces: dict[str, list[Span]], server_id: str) -> Span | None:
    """The ``POST .../servers`` SERVER span of the trace that created ``server_id``."""
    for spans in traces.values():
        if not any(s.get(attr.NOVA_INSTANCE_UUID) == server_id for s in spans):
            continue
        for span in spans:
            if is_create(span):
                return span
    return None


def session(client_roots: list[Span], create: Span,
            server_id: str) -> list[tuple[Span, str, str]]:
    """(original root, role, rule) for every trace of the client session around ``create``.

    ``client_roots`` are the roots of the other traces (the store's index
    keeps them, so a listing needs no span but the roots).
    """
    agent, address = create.get(attr.USER_AGENT_ORIGINAL), create.get(attr.CLIENT_ADDRESS)
    client = [r for r in client_roots if r.trace_id != create.trace_id
              and r.kind == "SERVER" and started_by_request(r)
              and r.get(attr.USER_AGENT_ORIGINAL) == agent
              and r.get(attr.CLIENT_ADDRESS) == address]
    client.sort(key=lambda r: r.start_ns)
    same = "same user_agent.original and client.address as the create"
    chosen = [(create, "create", f"a span below has nova.instance.uuid = {server_id}")]
    polls = [r for r in client if _method(r) == "GET" and r.start_ns >= create.start_ns
             and _path(r).endswith(f"/servers/{server_id}")]
    chosen += [(r, "poll", f"GET url.path ends with /servers/{server_id}") for r in polls]
    tokens = [r for r in client if _method(r) == "POST" and _route(r).endswith("/auth/tokens")
              and create.start_ns - TOKEN_WINDOW_NS <= r.start_ns < create.start_ns]
    token = tokens[-1] if tokens else None
    if token is not None:
        chosen.append((token, "token", f"last POST /auth/tokens before the create; {same}"))
        chosen += [(r, "discovery", f"version document within 5 s before the token; {same}")
                   for r in client if token.start_ns - GAP_NS <= r.start_ns < token.start_ns
                   and _is_version_document(r)]
    begin = max(token.start_ns if token else 0, create.start_ns - GAP_NS)
    chosen += [(r, "lookup", f"at most 5 s before the create, after the token; {same}")
               for r in client if begin < r.start_ns < create.start_ns and r is not token
               and not is_create(r)]
    end = max((r.end_ns for r in polls), default=create.end_ns)
    picked = {id(r) for r, _, _ in chosen}
    chosen += [(r, "read", f"GET after the create, at most 5 s after the last poll; {same}")
               for r in client if id(r) not in picked and _method(r) == "GET"
               and create.start_ns < r.start_ns <= end + GAP_NS
               and not _of_another_server(r, server_id)]
    return sorted(chosen, key=lambda item: item[0].start_ns)


def stitched_ids(server_id: str, create: Span) -> tuple[str, str]:
    """The stitched trace's id and its root's span id: stable for one server's create, so
    the same session is found under the same id every time it is stitched."""
    digest = hashlib.sha256(f"novalab-stitch:{server_id}:{create.trace_id}".encode()).hexdigest()
    return digest[:32], digest[32:48]


def stitch(traces: dict[str, list[Span]], chosen: list[tuple[Span, str, str]],
           server_id: str) -> list[Span]:
    """The chosen traces as one: a synthetic root, links to each original root, provenance."""
    create = next(root for root, role, _ in chosen if role == "create")
    trace_id, root_id = stitched_ids(server_id, create)
    members = [s for root, _, _ in chosen for s in traces[root.trace_id]]
    root_ids = {root.span_id for root, _, _ in chosen}
    out: list[Span] = []
    for span in members:
        attributes = {**span.attributes, ORIGINAL_TRACE_ID: span.trace_id}
        parent = span.parent_id
        if span.span_id in root_ids and parent is None:
            parent = root_id
            attributes[PARENT_INFERRED] = True
        out.append(dataclasses.replace(span, trace_id=trace_id, parent_id=parent,
                                       attributes=frozen(attributes)))
    resource = frozen({attr.SERVICE_NAME: STITCHED_SERVICE, attr.SERVICE_NAMESPACE: "novalab",
                       SYNTHETIC: True})
    synthetic = Span(
        trace_id=trace_id, span_id=root_id, parent_id=None, name=STITCHED_ROOT,
        kind="INTERNAL", service=STITCHED_SERVICE,
        start_ns=min(s.start_ns for s in members), end_ns=max(s.end_ns for s in members),
        attributes=frozen({attr.NOVA_INSTANCE_UUID: server_id, SYNTHETIC: True,
                           attr.USER_AGENT_ORIGINAL: create.get(attr.USER_AGENT_ORIGINAL) or "",
                           attr.NOVALAB_STITCH_TRACES: len(chosen)}),
        links=tuple(_link(root, role, rule) for root, role, rule in chosen),
        resource=resource, scope=STITCH_SCOPE)
    return [synthetic, *out]


def _link(root: Span, role: str, rule: str) -> Link:
    return Link(root.trace_id, root.span_id, frozen({STITCH_ROLE: role, STITCH_MATCH: rule}))


def server_session(traces: dict[str, list[Span]], server_id: str) -> list[Span] | None:
    """The boot of ``server_id`` among ``traces``: one trace, stitched when the client was
    not traced; None when no trace created that server."""
    create = find_create(traces, server_id)
    if create is None:
        return None
    if create.parent_id is not None:  # a traced client: already one trace
        return traces[create.trace_id]
    others = [r for tid, spans in traces.items() if tid != create.trace_id for r in roots(spans)]
    return stitch(traces, session(others, create, server_id), server_id)


def server_trace(directory: str | os.PathLike, server_id: str, *,
                 timeout: float = 10.0, settle: float = 0.7) -> list[Span]:
    """The boot of ``server_id`` as one trace, once its spans are all written (bounded)."""
    deadline = time.monotonic() + timeout
    previous = -1
    while True:
        traces = by_trace(read_dir(directory))
        spans = server_session(traces, server_id)
        if spans is not None:
            whole = not incomplete(spans)
            if (whole and len(spans) == previous) or time.monotonic() > deadline:
                return spans
            previous = len(spans)
        elif time.monotonic() > deadline:
            raise LookupError(f"no trace in {directory} created server {server_id}")
        time.sleep(settle)
