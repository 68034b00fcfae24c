"""The small, read-only span record every reader of traces shares.

Whatever a trace came from (an OTLP JSON file, the trace store, Jaeger's JSON,
spans still in memory), it becomes ``Span`` objects: ids as lowercase hex, times in
nanoseconds since the epoch, the span kind as a word (``SERVER``), the
service and host from the span's resource, and attributes in a read-only
mapping. ``Trace`` groups the spans of one trace id and answers the questions
the flow rules and the trace store ask: parent, children, ancestors,
descendants, which services.

Spans compare by identity: two loads of one file give equal ids, not equal
objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

KINDS = ("INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
EMPTY: Mapping[str, Any] = MappingProxyType({})


def frozen(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """A read-only copy of ``mapping`` with lists turned into tuples."""
    if not mapping:
        return EMPTY
    return MappingProxyType({k: tuple(v) if isinstance(v, list) else v
                             for k, v in mapping.items()})


@dataclass(frozen=True, eq=False)
class Event:
    """A timestamped annotation inside a span (an exception, a filter result)."""

    name: str
    time_ns: int
    attributes: Mapping[str, Any] = field(default_factory=lambda: EMPTY)


@dataclass(frozen=True, eq=False)
class Link:
    """A pointer to another span, e.g. a consumer's link to the message's producer."""

    trace_id: str
    span_id: str
    attributes: Mapping[str, Any] = field(default_factory=lambda: EMPTY)


@dataclass(frozen=True, eq=False)
class Span:
    """One span, as every loader returns it."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str
    service: str
    start_ns: int
    end_ns: int
    host: str | None = None
    attributes: Mapping[str, Any] = field(default_factory=lambda: EMPTY)
    events: tuple[Event, ...] = ()
    links: tuple[Link, ...] = ()
    status: str = "UNSET"  # UNSET, OK or ERROR
    status_message: str = ""
    resource: Mapping[str, Any] = field(default_factory=lambda: EMPTY)
    scope: str = ""

    @property
    def duration_ns(self) -> int:
        return max(0, self.end_ns - self.start_ns)

    def get(self, key: str, default: Any = None) -> Any:
        return self.attributes.get(key, default)

    def __repr__(self) -> str:
        return f"<Span {self.span_id[:8]} {self.service} {self.kind} {self.name!r}>"


@dataclass(frozen=True, eq=False)
class Trace:
    """The spans of one trace id, ordered by start time (then span id)."""

    trace_id: str
    spans: tuple[Span, ...]
    _by_id: Mapping[str, Span] = field(repr=False, default_factory=lambda: EMPTY)
    _children: Mapping[str, tuple[Span, ...]] = field(repr=False, default_factory=lambda: EMPTY)

    @classmethod
    def of(cls, spans: Iterable[Span]) -> Trace:
        ordered = tuple(sorted(spans, key=lambda s: (s.start_ns, s.span_id)))
        if not ordered:
            raise ValueError("a trace needs at least one span")
        ids = {s.trace_id for s in ordered}
        if len(ids) != 1:
            raise ValueError(f"spans of {len(ids)} traces given to one Trace: {sorted(ids)}")
        by_id = {s.span_id: s for s in ordered}
        children: dict[str, list[Span]] = {}
        for span in ordered:
            if span.parent_id in by_id:
                children.setdefault(span.parent_id, []).append(span)
        return cls(ordered[0].trace_id, ordered, MappingProxyType(by_id),
                   MappingProxyType({k: tuple(v) for k, v in children.items()}))

    def __iter__(self) -> Iterator[Span]:
        return iter(self.spans)

    def __len__(self) -> int:
        return len(self.spans)

    def span(self, span_id: str | None) -> Span | None:
        return self._by_id.get(span_id) if span_id else None

    def parent(self, span: Span) -> Span | None:
        return self._by_id.get(span.parent_id) if span.parent_id else None

    def children(self, span: Span) -> tuple[Span, ...]:
        return self._children.get(span.span_id, ())

    def ancestors(self, span: Span) -> Iterator[Span]:
        """Parent, grandparent, ... up to the first span whose parent is not in the trace."""
        seen = {span.span_id}
        parent = self.parent(span)
        while parent is not None and parent.span_id not in seen:
            seen.add(parent.span_id)
            yield parent
            parent = self.parent(parent)

    def descendants(self, span: Span) -> list[Span]:
        """Every span below ``span``, ordered by start time."""
        found: list[Span] = []
        stack = list(self.children(span))
        seen = {span.span_id}
        while stack:
            child = stack.pop()
            if child.span_id in seen:
                continue
            seen.add(child.span_id)
            found.append(child)
            stack.extend(self.children(child))
        return sorted(found, key=lambda s: (s.start_ns, s.span_id))

    def is_under(self, span: Span, ancestor: Span) -> bool:
        return span is ancestor or any(a is ancestor for a in self.ancestors(span))

    @property
    def roots(self) -> tuple[Span, ...]:
        """Spans whose parent is not in the trace (normally one: the client's)."""
        return tuple(s for s in self.spans if self.parent(s) is None)

    @property
    def root(self) -> Span:
        return self.roots[0]

    @property
    def start_ns(self) -> int:
        return self.spans[0].start_ns

    @property
    def end_ns(self) -> int:
        return max(s.end_ns for s in self.spans)

    @property
    def services(self) -> tuple[str, ...]:
        """Service names in order of their first span."""
        return tuple(dict.fromkeys(s.service for s in self.spans))

    def offset_ms(self, time_ns: int) -> float:
        return (time_ns - self.start_ns) / 1e6
