"""What the trace page shows, as JSON: the store's rows, and one trace with its flow check.

``diagrams/web.py`` serves these documents; the page's scripts
(``web_static/*.js``) draw them. The trace page asks again every second or so,
and the store gives back what has arrived by then, so a boot that is still
running fills the page step by step:

- :class:`LiveStore` wraps one :class:`~novalab.tracing.store.TraceStore` for
  many concurrent requests (one lock: the store object is not thread-safe) and
  remembers what is costly to recompute (each boot's flow check for the list,
  the last call graph).
- :func:`trace_view` is one trace as the page needs it: every span in tree
  order with its depth (the waterfall), the flow check (``check.to_dict``) and
  the sequence diagram as SVG text, both on the flow table the trace shows
  (``flows.detect``: a modern boot's page draws the modern steps, a classic
  boot's the 58, a shelve session's the shelve table).

Each answer carries a ``version`` (row id and span count): the page sends the
one it has, and an unchanged trace costs one small answer, not a re-render.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from novalab.diagrams import sequence
from novalab.diagrams.check import check, to_dict
from novalab.diagrams.flows import FALLBACK, FLOWS, detect, get_flow
from novalab.diagrams.model import Span, Trace
from novalab.diagrams.semantics import upstream_of
from novalab.tracing import attributes as attr
from novalab.tracing.collect import incomplete
from novalab.tracing.store import NoTrace, Row, TraceStore

LATEST = "latest"  # the row reference of the live view: the newest boot


def plain(value):
    """An attribute value as JSON has it (tuples become lists, anything odd a string)."""
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _attributes(mapping) -> dict:
    return {key: plain(value) for key, value in sorted(mapping.items())}


def version(row: Row) -> str:
    """What changes when the row's trace gains spans (or another row is meant)."""
    return f"{row.id}:{row.spans}"


# -- one trace ----------------------------------------------------------------------------------

def tree_order(trace: Trace) -> list[tuple[Span, int]]:
    """Every span with its depth, parents before children, siblings by start time.

    The order of Jaeger's timeline. A span whose parent has not arrived yet
    (or never will) starts a tree of its own at depth 0.
    """
    ordered: list[tuple[Span, int]] = []
    seen: set[str] = set()
    stack = [(root, 0) for root in reversed(trace.roots)]
    while stack:
        span, depth = stack.pop()
        if span.span_id in seen:
            continue
        seen.add(span.span_id)
        ordered.append((span, depth))
        stack.extend((child, depth + 1) for child in reversed(trace.children(span)))
    return ordered


def span_json(span: Span, depth: int, trace: Trace) -> dict:
    """One bar of the waterfall and everything the details panel shows about it."""
    item = {
        "id": span.span_id, "parent": span.parent_id, "name": span.name, "kind": span.kind,
        "service": span.service, "host": span.host, "depth": depth,
        "start_ms": round(trace.offset_ms(span.start_ns), 3),
        "duration_ms": round(span.duration_ns / 1e6, 3),
        "status": span.status, "status_message": span.status_message, "scope": span.scope,
        "attributes": _attributes(span.attributes),
        "events": [{"name": e.name, "offset_ms": round(trace.offset_ms(e.time_ns), 3),
                    "attributes": _attributes(e.attributes)} for e in span.events],
        "links": [{"trace_id": ln.trace_id, "span_id": ln.span_id,
                   "attributes": _attributes(ln.attributes)} for ln in span.links],
        "resource": _attributes(span.resource),
        "upstream": None,
    }
    code = upstream_of(span, trace)
    if code is not None:
        item["upstream"] = {"url": code.get(attr.UPSTREAM_URL),
                            "function": code.get(attr.CODE_FUNCTION_NAME) or code.name,
                            "span": code.span_id, "own": code is span}
    return item


def trace_view(row: Row, spans: list[Span], flow_name: str | None = None) -> dict:
    """The whole page of one trace: header, waterfall, flow check, sequence diagram.

    ``flow_name`` names the table; None (the page) projects onto the one the
    trace shows, and ``flow`` says which and why.
    """
    trace = Trace.of(spans)
    name, why = (flow_name, "") if flow_name else detect(trace)
    flow = get_flow(name)
    result = check(trace, flow)
    return {
        "version": version(row),
        "row": row.to_dict(),
        "trace_id": trace.trace_id,
        "start_unix_nano": trace.start_ns,
        "duration_ms": round((trace.end_ns - trace.start_ns) / 1e6, 3),
        "complete": not incomplete(spans),
        "services": list(trace.services),
        "spans": [span_json(span, depth, trace) for span, depth in tree_order(trace)],
        "flow": flow_json(name, why),
        "check": to_dict(result, why),
        "sequence_svg": sequence.render(sequence.from_check(result), "svg"),
    }


def flow_json(name: str, why: str = "") -> dict:
    """Which table the page draws: its name, title, number of steps, and why it was picked."""
    flow = get_flow(name)
    return {"name": name, "title": flow.title, "steps": len(flow.steps), "why": why}


def deployment_flow(state_dir: Path) -> str:
    """The table the next boot of the deployment in ``state_dir`` will show: its
    topology, as ``novalab up`` (``state.json``) or ``serve`` (``cloud.json``) recorded
    it, when a flow of that name exists; else the fallback."""
    for name in ("state.json", "cloud.json"):
        try:
            topology = json.loads((Path(state_dir) / name).read_text()).get("topology")
        except (OSError, ValueError, AttributeError):
            continue
        if topology in FLOWS:
            return topology
    return FALLBACK


def waiting_view(state_dir: Path, flow_name: str | None = None) -> dict:
    """The live view before any boot: nothing matched yet, of the table the deployment's
    boots will show (``deployment_flow``) unless ``flow_name`` names one."""
    name = flow_name or deployment_flow(state_dir)
    steps = len(get_flow(name).steps)
    return {"version": "waiting", "waiting": True,
            "message": f"No boot in {state_dir} yet. Boot a server (`openstack server "
                       "create ...`, `novalab boot --cloud running`) and watch its steps "
                       "appear here.",
            "flow": flow_json(name, "" if flow_name else "the deployment's topology"),
            "check": {"summary": {"matched": 0, "total": steps, "expected": steps,
                                  "matched_expected": 0, "missing": steps, "out_of_order": 0,
                                  "ok": False}}}


# -- the store, shared by the page's requests -----------------------------------------------------

class LiveStore:
    """A trace store read on demand by concurrent requests, one at a time."""

    def __init__(self, state_dir: str | Path):
        self.store = TraceStore(state_dir)
        self.lock = threading.Lock()
        # row id -> (version, "matched/expected", flow name)
        self._steps: dict[str, tuple[str, str, str]] = {}
        self._callgraph: tuple[str, str] | None = None  # (version, svg)

    @property
    def state_dir(self) -> Path:
        return self.store.state_dir

    def _refresh(self) -> bool:
        """Read what arrived; False when there is no store there (yet)."""
        if not self.store.traces_dir.is_dir():  # never create a directory by looking
            return False
        self.store.refresh()
        return True

    def rows(self, everything: bool = False) -> list[dict]:
        """The rows of ``novalab trace list``, newest first, each boot with its steps
        (``matched/expected``, as the list prints them) on the flow table it shows
        (``flow``)."""
        with self.lock:
            if not self._refresh():
                return []
            rows = self.store.rows(everything=everything)
            stale = [r for r in rows if r.kind == "boot"
                     and self._steps.get(r.id, ("",))[0] != version(r)]
            if stale:
                loaded = self.store.load_many(stale)
                for row in stale:
                    spans = loaded.get(row.id)
                    steps, name = "?", ""
                    if spans:
                        trace = Trace.of(spans)
                        name = detect(trace)[0]
                        result = check(trace, get_flow(name))
                        steps = f"{result.matched_expected}/{result.expected}"
                    self._steps[row.id] = (version(row), steps, name)
        return [dict(r.to_dict(), steps=self._steps.get(r.id, ("", "", ""))[1],
                     flow=self._steps.get(r.id, ("", "", ""))[2]) for r in rows]

    def find(self, **words) -> Row:
        """The row a user names (``trace_id``, ``server``, ``request_id``), or NoTrace."""
        with self.lock:
            if not self._refresh():
                raise NoTrace(f"no traces in {self.store.traces_dir}")
            row, _note = self.store.find(**words)
            return row

    def load(self, ref: str) -> tuple[Row | None, list[Span]]:
        """The row ``ref`` names (a row id or ``latest``) and its spans so far.

        ``latest`` with no boot in the store gives ``(None, [])``; an unknown id
        raises NoTrace.
        """
        with self.lock:
            if not self._refresh():
                if ref == LATEST:
                    return None, []
                raise NoTrace(f"no traces in {self.store.traces_dir}")
            if ref == LATEST:
                boots = [r for r in self.store.rows() if r.kind == "boot"]
                if not boots:
                    return None, []
                row = boots[0]
            else:
                row, _note = self.store.find(trace_id=ref)
            spans = self.store.load(row)
        if not spans:
            raise NoTrace(f"the spans of trace {row.id} are gone from {self.store.traces_dir}")
        return row, spans

    def callgraph_svg(self, row: Row, spans: list[Span]) -> str:
        """The call graph as SVG (graphviz' ``dot``), kept until the trace changes."""
        from novalab.diagrams import callgraph

        cached = self._callgraph
        if cached is not None and cached[0] == version(row):
            return cached[1]
        svg = callgraph.render(Trace.of(spans), "svg")
        self._callgraph = (version(row), svg)
        return svg
