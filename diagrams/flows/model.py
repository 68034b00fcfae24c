"""What a flow is: lifelines, numbered steps, a rule per step, and notes.

A ``Flow`` is data. Each ``Step`` keeps the table's own words (``request``
and ``text``) next to the lifelines they name, whether the arrow is a call
(``sync``), a message (``async``) or an answer (``return``), and the notes a
learner should read where the table and a real cloud differ. ``Flow.rules``
maps a step number to a function that finds the span standing for that step;
see ``novalab.diagrams.flows.rules``. ``Flow.recognise`` says how a trace shows
that this flow's chain ran (``span_named``), so ``flow check`` can pick the
table from the trace (``novalab.diagrams.flows.detect``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from novalab.diagrams.flows.rules import Found, Query
    from novalab.tracing.model import Trace

SYNC, ASYNC, RETURN = "sync", "async", "return"


@dataclass(frozen=True)
class Lifeline:
    """A participant of the diagram and how spans are attributed to it.

    ``services`` are the ``service.name`` values whose spans belong to it; an
    infrastructure lifeline (the database, the broker, libvirt) has none and
    is reached through ``how``: the CLIENT/PRODUCER spans that point at it.
    """

    name: str
    kind: str  # "actor", "service" or "infra"
    services: tuple[str, ...] = ()
    how: str = ""


@dataclass(frozen=True)
class Step:
    number: int
    source: str  # lifeline names, as in Flow.lifelines
    target: str
    request: str  # the table's "Request" column, spelled as the table spells it
    text: str  # the table's "Description" column
    kind: str  # SYNC, ASYNC or RETURN
    returns: int | None = None  # for RETURN steps: the step being answered
    drawn: tuple[str, str] | None = None  # (source, target) the trace really shows
    notes: tuple[str, ...] = ()
    rule_doc: str = ""


Rule = Callable[["Query"], "Found | None"]


@dataclass(frozen=True)
class Interleave:
    """Steps ``later`` may causally come before steps ``earlier``, for ``reason``."""

    later: tuple[int, ...]
    earlier: tuple[int, ...]
    reason: str

    def allows(self, later: int, earlier: int) -> bool:
        return later in self.later and earlier in self.earlier


@dataclass(frozen=True)
class Condition:
    """Steps a boot implies only when it asked for what they do.

    ``unless(trace)`` reads what the build recorded about its own request (no
    volume mapped, no network asked for, the image already cached on the host)
    and returns why ``steps`` are *not expected* in this trace, or None when
    they are. A trace that records nothing about it expects every step: a step
    is only excused by evidence, never by its absence.
    """

    name: str
    steps: tuple[int, ...]
    unless: Callable[[Trace], str | None]


# What a trace shows that only this flow's chain makes ("span 'X' of nova-conductor"),
# or None when it shows nothing of the kind.
Recogniser = Callable[["Trace"], "str | None"]


def span_named(name: str, service: str | None = None) -> Recogniser:
    """A recogniser: the trace has a span called ``name`` (of ``service``, if given).

    Pick a span only this flow's chain produces, named after the upstream
    function that really ran (``ComputeTaskManager.schedule_and_build_instances``
    for today's boot, ``ComputeManager.shelve_instance`` for shelve): the trace
    then says which flow it is, with no flag to remember.
    """

    def recognise(trace: Trace) -> str | None:
        for span in trace:
            if span.name == name and (service is None or span.service == service):
                return f"span {name!r} of {span.service} ({span.span_id})"
        return None

    recognise.__doc__ = f"A span {name!r}" + (f" of {service}" if service else "") + "."
    return recognise


@dataclass(frozen=True)
class Flow:
    name: str
    title: str
    lifelines: tuple[Lifeline, ...]
    steps: tuple[Step, ...]
    rules: Mapping[int, Rule]
    interleave: tuple[Interleave, ...] = ()
    notes: tuple[str, ...] = ()
    source: str = ""
    conditions: tuple[Condition, ...] = ()
    # How a trace of this flow is told from the others (see span_named); None: only
    # by name (--flow), or as the fallback (classic).
    recognise: Recogniser | None = None
    # How the trace store's selectors (--server, --request-id) find this flow's trace when
    # it is not one boot or one request: ``select(store, server=..., request_id=...,
    # timeout=...)`` returns its spans (the shelve flow joins a server's shelve and
    # unshelve requests). None: the store's own choice.
    select: Callable[..., list] | None = None
    _lifeline_by_service: dict[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self):
        names = [line.name for line in self.lifelines]
        assert len(set(names)) == len(names), "lifeline names must be unique"
        for step in self.steps:
            for name in (step.source, step.target, *(step.drawn or ())):
                assert name in names, f"step {step.number}: unknown lifeline {name!r}"
            assert step.number in self.rules or step.kind == RETURN, \
                f"step {step.number} has no rule"
        for line in self.lifelines:
            for service in line.services:
                self._lifeline_by_service[service] = line.name

    def step(self, number: int) -> Step:
        return self.steps[number - 1]

    def lifeline_of_service(self, service: str) -> str | None:
        return self._lifeline_by_service.get(service)

    def not_expected(self, trace: Trace) -> dict[int, str]:
        """Step number -> why this trace's boot does not imply the step."""
        excused: dict[int, str] = {}
        for condition in self.conditions:
            reason = condition.unless(trace)
            if reason:
                for number in condition.steps:
                    excused.setdefault(number, reason)
        return excused

    def may_precede(self, later: int, earlier: int) -> str | None:
        """The reason step ``later`` may come before step ``earlier``, if documented."""
        for item in self.interleave:
            if item.allows(later, earlier):
                return item.reason
        return None
