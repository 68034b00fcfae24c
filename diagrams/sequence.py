"""Sequence diagrams: a neutral model, built from a flow check or from every span.

Two views of one trace:

- ``from_check(result)``: the flow's view. One lifeline per participant of
  the table (all 22 for the classic flow, whether or not the trace reached
  them) and one numbered arrow per *matched* step, in step order, drawn
  between the lifelines the trace really shows. Missing steps are listed, not
  drawn.
- ``from_trace(trace)`` (``--full``): everything. One lifeline per service
  plus one per piece of infrastructure the spans reach (database, broker,
  libvirt, ...), and an arrow for every hop between them, in time order:
  HTTP requests and their answers, SQL statements, messages in and out of the
  broker, libvirt calls.

Arrow styles follow UML: ``sync`` (a call, filled head), ``return`` (dashed,
open head), ``async`` (a message, open head). The renderers (``render``) turn
the model into SVG, HTML, Mermaid or PlantUML; see ``sequence_svg.py`` and
``sequence_text.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from novalab.diagrams.check import CheckResult
from novalab.diagrams.flows.model import ASYNC, RETURN, SYNC, Flow
from novalab.diagrams.hosts import by_service as hosts_by_service
from novalab.diagrams.model import Span, Trace
from novalab.diagrams.semantics import (
    describe,
    destination,
    http_method,
    is_messaging,
    messaging_operation,
    upstream_of,
)
from novalab.tracing import attributes as attr

FORMATS = ("svg", "html", "mermaid", "plantuml")


@dataclass(frozen=True)
class Participant:
    name: str  # unique; what arrows refer to
    kind: str  # "actor", "service" or "infra"
    how: str = ""
    # host.name of its spans, when the trace crosses hosts (diagrams/hosts.py); else ()
    hosts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Arrow:
    number: int  # the step number (flow view) or the running number (full view)
    source: str
    target: str
    text: str
    style: str  # SYNC, ASYNC or RETURN
    offset_ms: float
    span: Span | None = None
    edge: str = "start"
    out_of_order: bool = False
    notes: tuple[str, ...] = ()
    rule: str = ""
    request: str = ""  # the table's own "A -> B", when drawn differently


@dataclass(frozen=True)
class Activation:
    participant: str
    first: int  # row indexes (arrow positions), inclusive
    last: int


@dataclass(frozen=True)
class SequenceDiagram:
    title: str
    subtitle: str
    mode: str  # "flow" or "full"
    trace: Trace
    participants: tuple[Participant, ...]
    arrows: tuple[Arrow, ...]
    activations: tuple[Activation, ...] = ()
    missing: tuple[tuple[int, str], ...] = ()  # (step number, "A -> B: text")
    not_expected: tuple[tuple[int, str, str], ...] = ()  # (number, "A -> B: text", why)
    notes: tuple[str, ...] = field(default=())

    def index(self, participant: str) -> int:
        for i, item in enumerate(self.participants):
            if item.name == participant:
                return i
        raise KeyError(participant)


# -- the flow's view ------------------------------------------------------------------------

def from_check(result: CheckResult) -> SequenceDiagram:
    flow, trace = result.flow, result.trace
    on = hosts_by_service(trace)
    lifeline_hosts: dict[str, set[str]] = {}
    for service, names in on.items():
        line = flow.lifeline_of_service(service)
        if line is not None:
            lifeline_hosts.setdefault(line, set()).update(names)
    participants = tuple(Participant(line.name, line.kind, line.how,
                                     tuple(sorted(lifeline_hosts.get(line.name, ()))))
                         for line in flow.lifelines)
    arrows, rows = [], {}
    for r in result.results:
        if not r.matched:
            continue
        rows[r.step.number] = len(arrows)
        table = (r.step.source, r.step.target)
        arrows.append(Arrow(
            number=r.step.number, source=r.drawn[0], target=r.drawn[1], text=r.step.text,
            style=r.step.kind, offset_ms=round(result.offset_ms(r), 3), span=r.span,
            edge=r.found.edge, out_of_order=r.out_of_order, notes=r.notes, rule=r.step.rule_doc,
            request=r.step.request if r.drawn != table else ""))
    missing = tuple((r.step.number, f"{r.step.request}: {r.step.text}")
                    for r in result.results if r.missing)
    not_expected = tuple((r.step.number, f"{r.step.request}: {r.step.text}", r.excused)
                         for r in result.results if not r.matched and r.excused)
    return SequenceDiagram(
        title=f"{flow.title}",
        subtitle=f"trace {trace.trace_id} · {result.summary}",
        mode="flow", trace=trace, participants=participants, arrows=tuple(arrows),
        activations=_flow_activations(result, flow, rows), missing=missing,
        not_expected=not_expected, notes=result.notes)


def _flow_activations(result: CheckResult, flow: Flow, rows: dict[int, int]):
    """Bars: a called lifeline from the call to its answer; a consumer while it works."""
    bars: list[Activation] = []
    answered = {s.returns: s.number for s in flow.steps if s.kind == RETURN}
    for r in result.results:
        if not r.matched or r.step.number not in rows:
            continue
        row = rows[r.step.number]
        if r.step.kind == SYNC:
            answer = answered.get(r.step.number)
            last = rows.get(answer, row) if answer else row
            bars.append(Activation(r.drawn[1], row, last))
        elif r.span.kind == "CONSUMER" and messaging_operation(r.span) == "process":
            inside = [rows[o.step.number] for o in result.results
                      if o.matched and o.step.number in rows and o.drawn[0] == r.drawn[0]
                      and result.trace.is_under(o.span, r.span)]
            bars.append(Activation(r.drawn[0], row, max(inside)))
    return tuple(sorted(bars, key=lambda b: (b.first, b.last, b.participant)))


# -- the full view --------------------------------------------------------------------------

def _infra(span: Span) -> tuple[str, str] | None:
    """(participant name, how) for the infrastructure a span reaches, if any."""
    if is_messaging(span):
        system = span.get(attr.MESSAGING_SYSTEM)
        return f"broker ({system})", "messaging spans"
    if span.kind != "CLIENT":
        return None
    system = span.get(attr.DB_SYSTEM_NAME) or span.get(attr.DB_SYSTEM)
    if system:
        return f"database ({system})", "SQL CLIENT spans"
    if span.get(attr.PEER_SERVICE):
        return str(span.get(attr.PEER_SERVICE)), "CLIENT spans with peer.service"
    if span.get(attr.SERVER_ADDRESS):
        return str(span.get(attr.SERVER_ADDRESS)), "CLIENT spans with server.address"
    return None


def _full_order(flow: Flow | None, name: str, kind: str, first_seen: int) -> tuple:
    if flow is not None:
        names = [line.name for line in flow.lifelines]
        mapped = flow.lifeline_of_service(name)
        if mapped is None and kind == "infra":
            key = name.split(" ", 1)[0]
            mapped = {"database": "Database", "broker": "RabbitMQ", "libvirt": "Libvirt",
                      "dnsmasq": "Dnsmasq", "ceph-mon": "Ceph_mon", "ceph-osd": "Ceph_osd",
                      "ceph-rgw": "Ceph_rgw"}.get(key)
        if mapped in names:
            return (0, names.index(mapped), first_seen)
    return (1, first_seen, 0)


def from_trace(trace: Trace, flow: Flow | None = None) -> SequenceDiagram:
    """Every hop between services and infrastructure, in time order."""
    events = []  # (time, order, source, target, text, style, span, edge)
    for seq, span in enumerate(trace):
        parent = trace.parent(span)
        if span.kind == "SERVER" and parent is not None and parent.service != span.service:
            status = span.get(attr.HTTP_RESPONSE_STATUS_CODE)
            events.append((span.start_ns, seq, 0, parent.service, span.service, describe(span),
                           SYNC, span, "start"))
            events.append((span.end_ns, seq, 1, span.service, parent.service,
                           str(status) if status is not None else "return", RETURN, span,
                           "end"))
            continue
        infra = _infra(span)
        if infra is None:
            continue
        peer = infra[0]
        if span.kind == "CLIENT":
            served = any(c.kind == "SERVER" and c.service != span.service
                         for c in trace.children(span))
            if served:
                continue  # drawn by the SERVER span below it
            events.append((span.start_ns, seq, 0, span.service, peer, describe(span), SYNC,
                           span, "start"))
            events.append((span.end_ns, seq, 1, peer, span.service,
                           "error" if span.status == "ERROR" else "done", RETURN, span, "end"))
        elif span.kind == "PRODUCER":
            where = destination(span)
            text = f"{describe(span)} → {where}" if where else describe(span)
            events.append((span.start_ns, seq, 0, span.service, peer, text, ASYNC, span,
                           "start"))
        elif span.kind == "CONSUMER":
            waits = messaging_operation(span) == "receive"
            events.append((span.end_ns if waits else span.start_ns, seq, 0, peer, span.service,
                           describe(span), ASYNC, span, "end" if waits else "start"))
    events.sort(key=lambda e: (e[0], e[1], e[2]))

    first_seen: dict[str, tuple[str, str, int]] = {}
    for span in trace:
        first_seen.setdefault(span.service, ("service", "", len(first_seen)))
        infra = _infra(span)
        if infra is not None and infra[0] not in trace.services:  # a traced peer is a service
            first_seen.setdefault(infra[0], ("infra", infra[1], len(first_seen)))
    used = {e[3] for e in events} | {e[4] for e in events}
    roots = {s.service for s in trace.roots}
    names = sorted((n for n in first_seen if n in used),
                   key=lambda n: _full_order(flow, n, first_seen[n][0], first_seen[n][2]))
    on = hosts_by_service(trace)
    participants = tuple(Participant(n, "actor" if n in roots and first_seen[n][0] == "service"
                                     else first_seen[n][0], first_seen[n][1], on.get(n, ()))
                         for n in names)
    arrows = []
    open_calls: dict[str, int] = {}
    bars = []
    for number, (time_ns, _seq, _end, source, target, text, style, span, edge) in \
            enumerate(events, 1):
        row = number - 1
        arrows.append(Arrow(number, source, target, text, style,
                            round(trace.offset_ms(time_ns), 3), span, edge))
        if style == SYNC:
            open_calls[span.span_id] = row
        elif style == RETURN and span.span_id in open_calls:
            bars.append(Activation(source, open_calls.pop(span.span_id), row))
    return SequenceDiagram(
        title=f"All hops of trace {trace.trace_id}",
        subtitle=f"{len(trace)} spans · {len(trace.services)} services · {len(arrows)} arrows",
        mode="full", trace=trace, participants=participants, arrows=tuple(arrows),
        activations=tuple(sorted(bars, key=lambda b: (b.first, b.last, b.participant))))


# -- details for the HTML view --------------------------------------------------------------

def arrow_details(diagram: SequenceDiagram, arrow: Arrow) -> dict:
    """What the HTML page shows for one arrow: the span, its attributes, the upstream link."""
    item = {"number": arrow.number, "text": arrow.text, "from": arrow.source,
            "to": arrow.target, "style": arrow.style, "offset_ms": arrow.offset_ms,
            "notes": list(arrow.notes), "rule": arrow.rule, "request": arrow.request,
            "out_of_order": arrow.out_of_order}
    span = arrow.span
    if span is None:
        return item
    code = upstream_of(span, diagram.trace)
    item["span"] = {
        "span_id": span.span_id, "name": span.name, "service": span.service, "host": span.host,
        "kind": span.kind, "moment": arrow.edge, "status": span.status,
        "start_ms": round(diagram.trace.offset_ms(span.start_ns), 3),
        "duration_ms": round(span.duration_ns / 1e6, 3),
        "attributes": {k: _plain(v) for k, v in sorted(span.attributes.items())},
        "events": [e.name for e in span.events],
    }
    if code is not None:
        item["upstream"] = {"url": code.get(attr.UPSTREAM_URL), "span": code.name,
                            "function": code.get(attr.CODE_FUNCTION_NAME) or code.name}
    if http_method(span) and span.kind == "SERVER":
        item["span"]["route"] = span.get(attr.HTTP_ROUTE)
    return item


def _plain(value):
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def render(diagram: SequenceDiagram, fmt: str) -> str:
    """The diagram as ``svg``, ``html``, ``mermaid`` or ``plantuml`` text."""
    from novalab.diagrams import sequence_svg, sequence_text

    renderers = {"svg": sequence_svg.render_svg, "html": sequence_svg.render_html,
                 "mermaid": sequence_text.render_mermaid,
                 "plantuml": sequence_text.render_plantuml}
    try:
        return renderers[fmt](diagram)
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}") from None
