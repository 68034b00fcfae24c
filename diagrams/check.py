"""Project a trace onto a flow: which steps happened, from which span, in what order.

``check(trace, flow)`` runs the flow's rules in step order. A step is
*matched* when its rule finds a span, else *missing*. An answer (a RETURN
step) is matched by the end of the span of the step it answers. A step the
boot did not ask for (no volume mapped, no network, an image already cached on
the host: the flow's ``conditions``, read from what the build recorded) is
*not expected* rather than missing, and says why.

A matched step carries a *warning* when its span only stands in for it: the
rule found it through a fallback (the callee left no span, so the caller's
CLIENT span; the step it follows is missing, so anywhere in the trace), or
the span is orphaned (its parent is not in the trace, so who called it is
unknown). A warning does not unmatch a step; it says why the match is weak,
typically because a service (a Ceph daemon, the guest) left no spans.

Each matched step has a moment: the start of its span (the end, for an
answer). A step is *out of order* when its moment causally precedes the
moment of an earlier step (see ``causal.py``; wall-clock order alone proves
nothing), unless the flow documents that the two may interleave. Concurrent
steps are never out of order.

``format_text`` and ``to_dict`` are what ``novalab flow check`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from novalab.diagrams.causal import END, START, Causality
from novalab.diagrams.flows.model import RETURN, Flow, Step
from novalab.diagrams.flows.rules import Found, Query
from novalab.diagrams.model import Span, Trace
from novalab.diagrams.semantics import describe
from novalab.tracing import attributes as attr


@dataclass(frozen=True)
class StepResult:
    step: Step
    found: Found | None
    drawn: tuple[str, str]  # the lifelines the arrow is drawn between
    precedes: tuple[int, ...] = ()  # earlier steps this one causally comes before
    excused: str = ""  # why this boot does not imply the step ("" = expected)
    warning: str = ""  # why the match is only a stand-in ("" = none)

    @property
    def matched(self) -> bool:
        return self.found is not None

    @property
    def expected(self) -> bool:
        return not self.excused

    @property
    def missing(self) -> bool:
        return self.expected and not self.matched

    @property
    def span(self) -> Span | None:
        return self.found.span if self.found else None

    @property
    def time_ns(self) -> int | None:
        if self.found is None:
            return None
        return self.found.span.end_ns if self.found.edge == END else self.found.span.start_ns

    @property
    def out_of_order(self) -> bool:
        return bool(self.precedes)

    @property
    def warned(self) -> bool:
        return bool(self.warning)

    @property
    def own_notes(self) -> tuple[str, ...]:
        """The step's notes and what its rule noted about this match."""
        dynamic = (self.found.note,) if self.found is not None and self.found.note else ()
        return self.step.notes + dynamic

    @property
    def notes(self) -> tuple[str, ...]:
        """``own_notes`` and the warning, if any (what diagrams show beside the arrow)."""
        return self.own_notes + ((f"Warning: {self.warning}",) if self.warning else ())


@dataclass(frozen=True)
class CheckResult:
    flow: Flow
    trace: Trace
    results: tuple[StepResult, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def matched(self) -> int:
        return sum(r.matched for r in self.results)

    @property
    def expected(self) -> int:
        return sum(r.expected for r in self.results)

    @property
    def matched_expected(self) -> int:
        return sum(r.matched and r.expected for r in self.results)

    @property
    def missing(self) -> int:
        return sum(r.missing for r in self.results)

    @property
    def out_of_order(self) -> int:
        return sum(r.out_of_order for r in self.results)

    @property
    def warnings(self) -> int:
        return sum(r.warned for r in self.results)

    @property
    def ok(self) -> bool:
        """Every step this boot implies matched, and none out of causal order."""
        return self.missing == 0 and self.out_of_order == 0

    def result(self, number: int) -> StepResult:
        return self.results[number - 1]

    def offset_ms(self, result: StepResult) -> float | None:
        return None if result.time_ns is None else self.trace.offset_ms(result.time_ns)

    @property
    def summary(self) -> str:
        warned = (f", {self.warnings} matched only through a fallback or an orphaned span"
                  if self.warnings else "")
        if self.expected == len(self.results):
            return (f"{self.matched}/{len(self.results)} steps matched, "
                    f"{self.out_of_order} out of order{warned}")
        return (f"{self.matched_expected}/{self.expected} expected steps matched, "
                f"{self.out_of_order} out of order{warned} ({len(self.results) - self.expected} "
                f"of {len(self.results)} not expected for this boot)")


def _match(trace: Trace, flow: Flow) -> dict[int, Found]:
    matched: dict[int, Found] = {}
    for step in flow.steps:
        if step.kind == RETURN:
            request = matched.get(step.returns)
            found = None
            if request is not None:
                drawn = tuple(reversed(request.drawn)) if request.drawn else None
                found = Found(request.span, edge=END, drawn=drawn)
        else:
            found = flow.rules[step.number](Query(trace, flow, matched))
        if found is not None:
            matched[step.number] = found
    return matched


def _warning(trace: Trace, found: Found) -> str:
    """Why a rule's match only stands in for its step ("" when it does not)."""
    reasons = []
    if found.fallback:
        reasons.append(f"matched only through a fallback: {found.fallback}")
    span = found.span
    if span.parent_id and trace.span(span.parent_id) is None:
        reasons.append(f"matched from an orphaned span: its parent {span.parent_id} is not in "
                       "the trace, so who made the call is not known")
    return "; ".join(reasons)


def _moment(found: Found) -> tuple[str, str]:
    return found.span.span_id, END if found.edge == END else START


def check(trace: Trace, flow: Flow) -> CheckResult:
    """Match every step of ``flow`` in ``trace`` and flag the ones out of causal order."""
    matched = _match(trace, flow)
    excused = flow.not_expected(trace)
    causality = Causality(trace)
    results = []
    for step in flow.steps:
        found = matched.get(step.number)
        precedes: list[int] = []
        if found is not None:
            here = _moment(found)
            for earlier in range(1, step.number):
                other = matched.get(earlier)
                if other is None or _moment(other) == here:
                    continue
                if causality.precedes(here, _moment(other)) and \
                        flow.may_precede(step.number, earlier) is None:
                    precedes.append(earlier)
        drawn = (found.drawn if found is not None and found.drawn else None) or \
            step.drawn or (step.source, step.target)
        warning = _warning(trace, found) if found is not None and step.kind != RETURN else ""
        results.append(StepResult(step, found, drawn, tuple(precedes),
                                  excused.get(step.number, ""), warning))
    systems = sorted({str(s.get(attr.MESSAGING_SYSTEM)) for s in trace
                      if s.get(attr.MESSAGING_SYSTEM)})
    notes = flow.notes + ((f"Brokers in this trace: messaging.system = {', '.join(systems)}.",)
                          if systems else ())
    return CheckResult(flow, trace, tuple(results), notes)


# -- output ---------------------------------------------------------------------------------

def _span_words(span: Span) -> str:
    host = f"@{span.host}" if span.host and span.service == "nova-compute" else ""
    summary = describe(span)
    what = f"{span.name!r}" + (f" [{summary}]" if summary != span.name else "")
    return f"{span.service}{host} {span.kind} {what} {span.span_id}"


def format_text(result: CheckResult, picked: str = "") -> str:
    """The human report: one line per step, then order problems, notes and the summary.

    ``picked``: why this flow was picked from the trace (``flows.detect``), when it was.
    """
    trace, flow = result.trace, result.flow
    lines = [f"flow {flow.name}: {flow.title}",
             *([f"picked from the trace: {picked}"] if picked else []),
             f"trace {trace.trace_id}: {len(trace)} spans from {len(trace.services)} services "
             f"({', '.join(sorted(trace.services))})", ""]
    width = max(len(r.step.request) for r in result.results)
    explained: dict[str, int] = {}
    for r in result.results:
        head = f"{r.step.number:>3}  {r.step.request:<{width}}  {r.step.text}"
        if not r.matched:
            if r.excused and r.excused in explained:
                lines.append(f"{head}\n       NOT EXPECTED (as step {explained[r.excused]})")
            elif r.excused:
                explained[r.excused] = r.step.number
                lines.append(f"{head}\n       NOT EXPECTED: {r.excused}")
            else:
                lines.append(f"{head}\n       MISSING")
            continue
        edge = "end of " if r.found.edge == END else ""
        lines.append(f"{head}\n       +{result.offset_ms(r):.3f} ms  {edge}{_span_words(r.span)}")
        if r.drawn != (r.step.source, r.step.target):
            lines.append(f"       drawn as {r.drawn[0]} -> {r.drawn[1]}")
        if r.out_of_order:
            lines.append("       OUT OF ORDER: causally before step(s) "
                         + ", ".join(map(str, r.precedes)))
        if r.warning:
            lines.append(f"       WARNING: {r.warning}")
    disorder = [r for r in result.results if r.out_of_order]
    if disorder:
        lines += ["", "Out of causal order:"]
        for r in disorder:
            lines.append(f"  step {r.step.number} ({r.step.text}) happened before step(s) "
                         + ", ".join(map(str, r.precedes)))
    warned = [r for r in result.results if r.warning]
    if warned:
        lines += ["", "Matched only through a fallback or from an orphaned span (did a service "
                  "leave no spans?):"]
        for r in warned:
            lines.append(f"  step {r.step.number} ({r.step.text}): {r.warning}")
    lines += ["", "Notes:"]
    for r in result.results:
        for note in r.own_notes:
            state = "" if r.matched else " (missing)"
            lines.append(f"  {r.step.number:>2}{state}: {note}")
    for item in flow.interleave:
        lines.append(f"  may interleave: steps {_ranges(item.later)} before "
                     f"{_ranges(item.earlier)}: {item.reason}")
    for note in result.notes:
        lines.append(f"  trace: {note}")
    lines += ["", result.summary]
    return "\n".join(lines) + "\n"


def _ranges(numbers) -> str:
    """``[19, 20, 21, 25]`` -> ``"19-21, 25"``."""
    numbers = sorted(numbers)
    parts, start, prev = [], numbers[0], numbers[0]
    for number in numbers[1:] + [None]:
        if number is not None and number == prev + 1:
            prev = number
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = number
    return ", ".join(parts)


def to_dict(result: CheckResult, picked: str = "") -> dict:
    """The JSON report (``--format json``); ``picked`` as for ``format_text``."""
    steps = []
    for r in result.results:
        item = {"number": r.step.number, "from": r.step.source, "to": r.step.target,
                "request": r.step.request, "text": r.step.text, "kind": r.step.kind,
                "rule": r.step.rule_doc,
                "status": "matched" if r.matched else "missing" if r.expected else
                "not_expected",
                "notes": list(r.notes)}
        if r.excused:
            item["not_expected"] = r.excused
        if r.warning:
            item["warning"] = r.warning
        if r.matched:
            span = r.span
            item.update({
                "span": {"span_id": span.span_id, "name": span.name, "service": span.service,
                         "kind": span.kind, "host": span.host},
                "edge": r.found.edge, "offset_ms": round(result.offset_ms(r), 3),
                "drawn": {"from": r.drawn[0], "to": r.drawn[1]},
                "out_of_order": bool(r.precedes), "precedes": list(r.precedes)})
        steps.append(item)
    return {
        "flow": result.flow.name, **({"picked": picked} if picked else {}),
        "trace_id": result.trace.trace_id,
        "spans": len(result.trace), "services": sorted(result.trace.services),
        "steps": steps,
        "out_of_order": [{"step": r.step.number, "precedes": list(r.precedes)}
                         for r in result.results if r.out_of_order],
        "warnings": [{"step": r.step.number, "warning": r.warning}
                     for r in result.results if r.warning],
        "interleave": [{"later": list(i.later), "earlier": list(i.earlier), "reason": i.reason}
                       for i in result.flow.interleave],
        "notes": list(result.notes),
        "summary": {"matched": result.matched, "total": len(result.results),
                    "expected": result.expected, "matched_expected": result.matched_expected,
                    "missing": result.missing, "out_of_order": result.out_of_order,
                    "warnings": result.warnings, "ok": result.ok},
    }


def steps_of(trace: Trace) -> tuple[str, str]:
    """``("matched/expected", flow name)``: the flow check of ``trace`` on the table it
    shows (``flows.detect_flow``), which `novalab trace list` prints as its steps."""
    from novalab.diagrams.flows import detect_flow, get_flow

    name = detect_flow(trace)
    result = check(trace, get_flow(name))
    return f"{result.matched_expected}/{result.expected}", name
