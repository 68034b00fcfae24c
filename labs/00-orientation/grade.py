"""Lab 00: the learner booted, drew their own boot, and read step 43 from its trace.

The answers are values only the learner's own boot has (step 43's span id and
time); the diagram is parsed: its arrows must be the steps of that boot, each
drawn from that boot's span.
"""

import json
import re

from novalab.labs.grading import Fail, check

_ARROWS = re.compile(r'<script type="application/json" id="arrow-data">(.*?)</script>', re.S)


@check("{server} is ACTIVE")
def server_is_active(ctx):
    ctx.require_active(ctx.names["server"], "boot it (step 2 of the guide)")


@check("the trace of your boot of {server} matches every step it implies")
def boot_is_whole(ctx):
    ctx.require_whole_boot(ctx.names["server"])


def drawn_steps(text: str) -> dict[int, str]:
    """The steps a ``novalab diagram --format html`` page draws: {number: span id}."""
    found = _ARROWS.search(text)
    if not found:
        raise Fail("sequence.html is not a page `novalab diagram --format html` wrote "
                   "(it has no arrow data)")
    try:
        arrows = json.loads(found.group(1))
    except ValueError as exc:
        raise Fail(f"sequence.html's arrow data is not JSON ({exc}): draw it again") from exc
    return {int(number): (arrow.get("span") or {}).get("span_id", "")
            for number, arrow in arrows.items()}


@check("sequence.html in your lab folder is drawn from the trace of {server}")
def diagram_drawn(ctx):
    path = ctx.workdir / "sequence.html"
    if not path.exists():
        raise Fail(f"no {path}: `novalab diagram --server {ctx.names['server']} --format html "
                   f"-o sequence.html` in that folder (step 4)")
    drawn = drawn_steps(path.read_text(encoding="utf-8", errors="replace"))
    result = ctx.flow(ctx.names["server"])
    spans = {r.step.number: r.span.span_id for r in result.results if r.matched}
    if drawn != spans:
        other = sorted(n for n in spans if drawn.get(n) != spans[n])
        raise Fail(f"{path.name} does not draw your boot of {ctx.names['server']} (trace "
                   f"{result.trace.trace_id}): " + (f"steps {other[:8]} are not its spans"
                                                    if other else "it draws other steps")
                   + "; draw it again from your boot (step 4)")


def _start_span(ctx):
    result = ctx.flow(ctx.names["server"])
    step = result.result(43)
    if not step.matched:
        raise Fail("step 43 is missing from your boot's trace: was the guest started?")
    return result, step


@check("the span that started your guest, step 43 (answer start-span)")
def start_span(ctx):
    _, step = _start_span(ctx)
    given = ctx.answer("start-span").lower()
    if given != step.span.span_id:
        what = ("the libvirt method every boot calls" if "createwithflags" in given else
                "not the span of step 43 in your boot")
        raise Fail(f"{given!r} is {what}: answer the span id the flow check prints at the "
                   "end of step 43's line (16 hex digits)")


@check("when step 43 happened in your boot (answer start-ms)")
def start_ms(ctx):
    result, step = _start_span(ctx)
    at = result.offset_ms(step)
    value = ctx.answer_ms("start-ms")
    if abs(value - at) > 0.01:
        raise Fail(f"{value:g} ms is not when step 43 happened in your boot: the flow check "
                   "prints it (+N ms) before the span, to the microsecond")
