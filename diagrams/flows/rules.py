"""The small vocabulary step rules are written in.

A rule is a function ``rule(q) -> Found | None``. ``q`` is a ``Query`` over one
trace that knows the flow's lifelines and the steps matched so far (rules run
in step order, so step 8 can ask for the message step 6 sent). Everything is
matched by what a span *is*: its service, kind, name, HTTP method and route,
SQL operation and table, messaging attributes, ``rpc.*`` and ``peer.service``.
Spans carry no step numbers and never will.

Two ideas recur:

- ``q.request(caller, callee, ...)`` finds a call between two lifelines. When
  the callee is a traced service its SERVER span stands for the step (it
  proves the call arrived); when it is infrastructure without spans of its own
  (dnsmasq, libvirt, a Ceph daemon not yet traced) the caller's CLIENT span
  does.
- ``q.consumers_of(producer)`` finds the spans that took a message off the
  broker: CONSUMER spans linked to the PRODUCER span, parented on it, or
  carrying the same ``messaging.message.id``.

A rule says first what the step *is* and then, sometimes, what may stand in
for it when that is not in the trace (the callee's SERVER span is missing, so
the caller's CLIENT span; the step it follows is missing, so anywhere in the
trace). A span found that second way is marked with ``q.fallback(span, why)``
(``request``, ``consumer`` and ``first_under`` mark their own), and the flow
check warns about it: a step matched only through a fallback is a hint that a
service left no spans, not proof that the step happened as drawn.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from novalab.diagrams.flows.model import Flow, Lifeline
from novalab.diagrams.model import Span, Trace
from novalab.diagrams.semantics import (  # noqa: F401 - re-exported for rules
    destination,
    http_method,
    http_route,
    is_messaging,
    peer,
    rpc_style,
    sql_statement,
)
from novalab.tracing import attributes as attr

Pred = Callable[[Span], bool]


@dataclass(frozen=True)
class Found:
    """The span that stands for a step and which of its ends is the step's moment."""

    span: Span
    edge: str = "start"  # "start", or "end" for an answer
    drawn: tuple[str, str] | None = None  # lifelines really involved, when not the table's
    note: str = ""
    fallback: str = ""  # why only a stand-in was found ("" = the rule's own form matched)


def http_server(method: str | None = None, route: str | None = None) -> Pred:
    """SERVER spans of an HTTP request, by method and a regular expression on the route."""
    pattern = re.compile(route) if route else None

    def pred(span: Span) -> bool:
        return (span.kind == "SERVER" and bool(http_method(span))
                and (method is None or http_method(span) == method)
                and (pattern is None or bool(pattern.search(http_route(span)))))
    return pred


def http_client(url: str) -> Pred:
    """CLIENT spans of HTTP requests whose URL matches the regular expression ``url``."""
    pattern = re.compile(url)
    return lambda s: (s.kind == "CLIENT" and bool(http_method(s))
                      and bool(pattern.search(str(s.get(attr.URL_FULL) or ""))))


def sql(operation: str | None = None, table: str | None = None) -> Pred:
    def pred(span: Span) -> bool:
        statement = sql_statement(span)
        return statement is not None and (operation is None or statement[0] == operation) and \
            (table is None or statement[1] == table)
    return pred


def send(style: str | None = None, method: str | Iterable[str] | None = None,
         to: str | None = None, service: str | None = None) -> Pred:
    """PRODUCER messaging spans: by rpc style, ``rpc.method``, destination prefix, rpc.service."""
    methods = {method} if isinstance(method, str) else set(method or ())

    def pred(span: Span) -> bool:
        return (span.kind == "PRODUCER" and is_messaging(span)
                and (style is None or rpc_style(span) == style)
                and (style is not None or rpc_style(span) != "reply")
                and (not methods or span.get(attr.RPC_METHOD) in methods)
                and (to is None or destination(span).startswith(to))
                and (service is None or span.get(attr.RPC_SERVICE) == service))
    return pred


def consume(operation: str = "process", method: str | Iterable[str] | None = None,
            style: str | None = None, source: str | None = None) -> Pred:
    """CONSUMER messaging spans (``process`` for a request, ``receive`` for a reply)."""
    methods = {method} if isinstance(method, str) else set(method or ())

    def pred(span: Span) -> bool:
        op = span.get(attr.MESSAGING_OPERATION_TYPE) or span.get(attr.MESSAGING_OPERATION_NAME) or \
            span.name.split(" ", 1)[0]
        return (span.kind == "CONSUMER" and is_messaging(span) and op == operation
                and (not methods or span.get(attr.RPC_METHOD) in methods)
                and (style is None or rpc_style(span) == style)
                and (source is None or destination(span).startswith(source)))
    return pred


def client_to(peer_service: str, *, rpc_system: str | None = None,
              rpc_service: str | None = None, methods: Iterable[str] = ()) -> Pred:
    """CLIENT spans to infrastructure: ``peer.service``, or ``rpc.system`` + ``rpc.service``."""
    wanted = set(methods)

    def pred(span: Span) -> bool:
        if span.kind != "CLIENT":
            return False
        by_peer = span.get(attr.PEER_SERVICE) == peer_service
        by_rpc = rpc_system is not None and span.get(attr.RPC_SYSTEM) == rpc_system and \
            (rpc_service is None or span.get(attr.RPC_SERVICE) == rpc_service)
        return (by_peer or by_rpc) and (not wanted or span.get(attr.RPC_METHOD) in wanted)
    return pred


def server_of(rpc_system: str, methods: Iterable[str] = ()) -> Pred:
    """SERVER spans of a non-HTTP protocol (e.g. Ceph's), optionally by ``rpc.method``."""
    wanted = set(methods)
    return lambda s: (s.kind == "SERVER" and s.get(attr.RPC_SYSTEM) == rpc_system
                      and (not wanted or s.get(attr.RPC_METHOD) in wanted))


def any_of(*preds: Pred) -> Pred:
    return lambda s: any(p(s) for p in preds)


def name_matches(pattern: str) -> Pred:
    regex = re.compile(pattern)
    return lambda s: bool(regex.search(s.name))


def function(qualname: str) -> Pred:
    """Spans standing for the upstream function ``qualname`` (``Class.method``): by
    ``code.function.name``, else by the span's name."""
    suffix = "." + qualname

    def pred(span: Span) -> bool:
        code = str(span.get(attr.CODE_FUNCTION_NAME) or "")
        return code.endswith(suffix) or code == qualname or span.name == qualname
    return pred


# -- the query a rule receives -------------------------------------------------------------

class Query:
    """One trace seen through one flow, with the steps matched so far."""

    def __init__(self, trace: Trace, flow: Flow, matched: Mapping[int, Found]):
        self.trace = trace
        self.flow = flow
        self.matched = matched
        self._lines = {line.name: line for line in flow.lifelines}
        self.fallbacks: dict[str, str] = {}  # span id -> why it only stands in

    def fallback(self, span: Span | None, why: str) -> Span | None:
        """Mark ``span`` as found only through a fallback (the check warns); returns it."""
        if span is not None:
            self.fallbacks.setdefault(span.span_id, why)
        return span

    def found(self, span: Span | None, **kw) -> Found | None:
        """The ``Found`` for ``span``, carrying its fallback reason if it was marked."""
        if span is None:
            return None
        return Found(span, **{"fallback": self.fallbacks.get(span.span_id, ""), **kw})

    # steps matched so far
    def step(self, number: int) -> Span | None:
        found = self.matched.get(number)
        return found.span if found else None

    def lifeline(self, name: str) -> Lifeline:
        return self._lines[name]

    # selecting spans
    def spans(self, lifeline: str | None = None, where: Pred | None = None,
              under: Span | None = None) -> list[Span]:
        """Spans of ``lifeline``'s services matching ``where``, below ``under``, by start."""
        services = set(self._lines[lifeline].services) if lifeline else None
        pool = self.trace.descendants(under) if under is not None else self.trace.spans
        return [s for s in pool
                if (services is None or s.service in services) and (where is None or where(s))]

    def first(self, lifeline: str | None = None, where: Pred | None = None,
              under: Span | None = None) -> Span | None:
        found = self.spans(lifeline, where, under)
        return found[0] if found else None

    def last(self, lifeline: str | None = None, where: Pred | None = None,
             under: Span | None = None) -> Span | None:
        found = self.spans(lifeline, where, under)
        return found[-1] if found else None

    def first_under(self, anchors: Iterable[Span | None], lifeline: str | None,
                    where: Pred) -> Span | None:
        """The first match below the first anchor that has one; then anywhere in the trace
        (a fallback)."""
        for anchor in anchors:
            if anchor is not None:
                found = self.first(lifeline, where, under=anchor)
                if found is not None:
                    return found
        return self.fallback(self.first(lifeline, where),
                             "not found below the step it follows; taken from anywhere in "
                             "the trace")

    def below_step(self, number: int, find: Callable[[Span | None], Span | None]) -> Span | None:
        """``find(under=step number's span)``; without a match there, ``find(None)`` over the
        whole trace (a fallback)."""
        anchor = self.step(number)
        if anchor is not None:
            found = find(anchor)
            if found is not None:
                return found
        return self.fallback(find(None), f"not found below step {number}; taken from "
                                         "anywhere in the trace")

    # who called whom
    def caller(self, span: Span) -> Span | None:
        """The nearest ancestor made by another service (the CLIENT span of an HTTP call)."""
        for ancestor in self.trace.ancestors(span):
            if ancestor.service != span.service:
                return ancestor
        return None

    def called_by(self, span: Span, lifeline: str) -> bool:
        """Was ``span`` (a SERVER span) called from ``lifeline``?

        For an ``actor`` lifeline (the client, the guest) a span with no caller
        in the trace also counts: the caller's own spans may simply be absent.
        """
        line = self._lines[lifeline]
        caller = self.caller(span)
        if caller is None:
            return line.kind == "actor"
        if caller.service in line.services:
            return True
        return line.kind == "actor" and self.flow.lifeline_of_service(caller.service) is None

    def under_libvirt(self, span: Span) -> bool:
        """Is a libvirt call among ``span``'s ancestors (the hypervisor acting)?"""
        return any(a.kind == "CLIENT" and (a.get(attr.RPC_SYSTEM) == "libvirt"
                                          or a.get(attr.PEER_SERVICE) == "libvirt")
                   for a in self.trace.ancestors(span))

    def consumers_of(self, producer: Span | None, lifeline: str | None = None,
                     where: Pred | None = None) -> list[Span]:
        """CONSUMER spans that took ``producer``'s message off the broker."""
        if producer is None:
            return []
        message_id = producer.get(attr.MESSAGING_MESSAGE_ID)

        def took_it(span: Span) -> bool:
            return span.kind == "CONSUMER" and (
                span.parent_id == producer.span_id
                or any(link.span_id == producer.span_id for link in span.links)
                or (message_id is not None and span.get(attr.MESSAGING_MESSAGE_ID) == message_id))
        return self.spans(lifeline, lambda s: took_it(s) and (where is None or where(s)))

    def consumer(self, producer: Span | None, lifeline: str, fallback: Pred) -> Span | None:
        """The consumer of ``producer``'s message in ``lifeline``; else the first ``fallback``
        (marked as one)."""
        taken = self.consumers_of(producer, lifeline)
        if taken:
            return taken[0]
        return self.fallback(self.first(lifeline, fallback),
                             "no consumer of the step's own message; the first message of "
                             "its kind stands in")

    def request(self, caller: str, callee: str, *, server: Pred | None = None,
                client: Pred | None = None, under: Span | None = None,
                last: bool = False) -> Span | None:
        """A call from ``caller`` to ``callee`` (see the module docstring).

        When ``callee`` is a traced service, its SERVER span is the call; the
        caller's CLIENT span is then only a fallback (the callee left no span).
        """
        pick = self.last if last else self.first
        traced = bool(self._lines[callee].services)
        if server is not None and traced:
            found = pick(callee, lambda s: server(s) and self.called_by(s, caller), under)
            if found is not None:
                return found
        if client is not None:
            found = pick(caller, client, under)
            if traced:
                services = ", ".join(self._lines[callee].services)
                self.fallback(found, f"{services} left no span of this call; the caller's "
                                     "CLIENT span stands in")
            return found
        return None
