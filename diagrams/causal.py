"""Happens-before between span starts and ends, from the trace's own structure.

Clocks on different hosts disagree, and even on one host the order of two
start times says nothing about whether one caused the other. So the flow
check orders steps by causality, using only what the trace records:

- a span starts before it ends;
- a parent starts before its children; a parent that called a child was
  still running when the child started, and ends after a child it waited for
  (not for a message's consumer, which may start and end after the PRODUCER
  span that sent it, nor for detached work that outlives its parent);
- siblings in one service under one parent run in program order: one that
  ended before the next began came first (same process, same clock);
- a message is sent before it is processed: a PRODUCER span starts before
  the CONSUMER span that processed it starts (linked to it, parented on it, or
  sharing its ``messaging.message.id``); a ``receive`` span that waited for a
  reply ends after the reply was sent;
- any other link: the linked span started before the linking span ended.

Two events with no path between them are concurrent: neither is out of order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from novalab.diagrams.model import Span, Trace

START, END = "start", "end"
Event = tuple[str, str]  # (span id, START or END)


def _operation(span: Span) -> str:
    return str(span.get("messaging.operation.type") or span.get("messaging.operation.name")
               or span.name.split(" ", 1)[0])


class Causality:
    """The happens-before graph of one trace; ``precedes(a, b)`` asks for a path a -> b."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self._edges: dict[Event, set[Event]] = defaultdict(set)
        self._reach: dict[Event, frozenset[Event]] = {}
        self._build()

    def _edge(self, a: Event, b: Event) -> None:
        if a != b:
            self._edges[a].add(b)

    def _build(self) -> None:
        trace = self.trace
        producers_by_message: dict[str, list[Span]] = defaultdict(list)
        for span in trace:
            if span.kind == "PRODUCER" and span.get("messaging.message.id") is not None:
                producers_by_message[str(span.get("messaging.message.id"))].append(span)
        for span in trace:
            self._edge((span.span_id, START), (span.span_id, END))
            parent = trace.parent(span)
            if parent is not None:
                self._edge((parent.span_id, START), (span.span_id, START))
                message = span.kind == "CONSUMER" and parent.kind == "PRODUCER"
                if not message and span.start_ns <= parent.end_ns:
                    self._edge((span.span_id, START), (parent.span_id, END))
                if not message and span.end_ns <= parent.end_ns:
                    self._edge((span.span_id, END), (parent.span_id, END))
            self._program_order(trace.children(span))
            self._messages(span, producers_by_message)
        self._program_order(trace.roots)

    def _program_order(self, siblings: Iterable[Span]) -> None:
        by_service: dict[str, list[Span]] = defaultdict(list)
        for span in siblings:
            by_service[span.service].append(span)
        for spans in by_service.values():
            spans.sort(key=lambda s: (s.start_ns, s.span_id))
            for i, later in enumerate(spans):
                for earlier in spans[:i]:
                    if earlier.end_ns <= later.start_ns:
                        self._edge((earlier.span_id, END), (later.span_id, START))

    def _messages(self, span: Span, producers_by_message) -> None:
        senders: dict[str, Span] = {}
        if span.kind == "CONSUMER":
            parent = self.trace.parent(span)
            if parent is not None and parent.kind == "PRODUCER":
                senders[parent.span_id] = parent
            message_id = span.get("messaging.message.id")
            for producer in producers_by_message.get(str(message_id), ()):
                senders[producer.span_id] = producer
        for link in span.links:
            linked = self.trace.span(link.span_id)
            if linked is not None:
                senders.setdefault(linked.span_id, linked)
        for sender in senders.values():
            waits = span.kind != "CONSUMER" or sender.kind != "PRODUCER" or \
                _operation(span) == "receive"
            self._edge((sender.span_id, START), (span.span_id, END if waits else START))

    def reachable(self, event: Event) -> frozenset[Event]:
        """Every event ``event`` happens before (not itself, unless on a cycle)."""
        if event not in self._reach:
            seen: set[Event] = set()
            stack = list(self._edges.get(event, ()))
            while stack:
                node = stack.pop()
                if node in seen:
                    continue
                seen.add(node)
                stack.extend(self._edges.get(node, ()))
            self._reach[event] = frozenset(seen)
        return self._reach[event]

    def precedes(self, a: Event, b: Event) -> bool:
        return b in self.reachable(a)
