"""Flows: a table of numbered steps as data, with a rule per step that finds its span.

``get_flow("classic")`` is the 58-step "launch an instance" table. A new flow
is a module that builds a ``Flow`` (see ``model.py``) and one line in
``FLOWS`` here: its name and a function that imports and returns it (flows are
loaded only when asked for).

Which flow a trace is: ``detect_flow(trace)`` answers from what really
happened, so ``novalab flow check`` needs no ``--flow``. Each flow declares in
its own module how its trace is recognised, with ``Flow(recognise=...)``: a
function of the trace that returns the evidence (a sentence) or None, usually
``span_named("ComputeTaskManager.schedule_and_build_instances")``, a span only
that flow's chain produces. Classic declares none: it is the fallback, the
table a trace is projected onto when no other flow recognises it. When several
recognise one trace, the one matching the largest share of its expected steps
wins (ties: the order of ``FLOWS``). ``--flow NAME`` always wins over all this.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from novalab.diagrams.flows.model import Flow

if TYPE_CHECKING:  # pragma: no cover
    from novalab.tracing.model import Trace

FALLBACK = "classic"


def _classic() -> Flow:
    from novalab.diagrams.flows.classic import FLOW

    return FLOW


def _modern() -> Flow:
    from novalab.diagrams.flows.modern import FLOW

    return FLOW


def _shelve() -> Flow:
    from novalab.diagrams.flows.shelve import FLOW

    return FLOW


FLOWS = {"classic": _classic, "modern": _modern, "shelve": _shelve}


def get_flow(name: str = "classic") -> Flow:
    try:
        return FLOWS[name]()
    except KeyError:
        raise KeyError(f"unknown flow {name!r}; known: {', '.join(sorted(FLOWS))}") from None


def detect(trace: Trace) -> tuple[str, str]:
    """``(flow name, why)``: the flow ``trace`` shows, and the evidence for it."""
    evidence = {}
    for name in FLOWS:
        recognise = get_flow(name).recognise
        seen = recognise(trace) if recognise is not None else None
        if seen:
            evidence[name] = seen
    if not evidence:
        return FALLBACK, (f"no flow recognises this trace ({', '.join(sorted(FLOWS))} known); "
                          f"{FALLBACK} is the fallback")
    if len(evidence) == 1:
        (name, seen), = evidence.items()
        return name, seen
    from novalab.diagrams.check import check

    def share(name: str) -> float:
        result = check(trace, get_flow(name))
        return result.matched_expected / max(result.expected, 1)

    shares = {name: share(name) for name in evidence}
    best = max(evidence, key=lambda name: shares[name])  # first of equals: FLOWS order
    others = ", ".join(f"{name} ({evidence[name]}) {shares[name]:.0%}"
                       for name in evidence if name != best)
    return best, (f"{evidence[best]}; {shares[best]:.0%} of its expected steps matched, "
                  f"more than the other flows that recognise it: {others}")


def detect_flow(trace: Trace) -> str:
    """The name of the flow ``trace`` shows (``FALLBACK`` when none recognises it)."""
    return detect(trace)[0]
