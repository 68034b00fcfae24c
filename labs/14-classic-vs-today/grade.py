"""Lab 14: two boots, one per wiring of Nova, read from the trace stores they left.

Each boot is found in the trace store of its own embedded cloud, in the lab
folder (``classic-cloud``, ``modern-cloud``), by the server's name: the spans
``novalab boot`` recorded (the lab's artifacts, sent with the grade; its name
carries a tag drawn for the attempt). A boot counts when
its client saw ACTIVE, the trace shows the wiring asked for (the flow detection:
the modern chain's ``schedule_and_build_instances`` span), and its flow check
matches every step it implies. Each answer is compared with the span the flow
check matched in the learner's own trace: the caller of the scheduler, the first
write of the instance row, the claim in placement (its consumer, the path's uuid,
is the server's id; the claimer is the span that called placement). Boots from
before the attempt started do not count, and the compare page is parsed: each
step it shows must carry the span of the learner's own boot.
"""

import re
from html.parser import HTMLParser

from novalab.diagrams.check import check as flow_check
from novalab.diagrams.flows import detect, get_flow
from novalab.diagrams.model import Trace
from novalab.diagrams.semantics import sql_statement
from novalab.labs.grading import Fail, check
from novalab.tracing import attributes as attr
from novalab.tracing.store import NoTrace, TraceStore

COMPARE = "compare.html"
_ALLOCATION = re.compile(r"/allocations/([0-9a-fA-F-]{36})$")
_STEP_ID = re.compile(r"^(classic|modern)-\d+$")
_SPAN_ID = re.compile(r"^[0-9a-f]{16}$")


def _boot(ctx, topology: str):
    """The flow check of the learner's boot on ``topology`` (cached for one grade)."""
    key = ("lab14", topology)
    if key in ctx._boots:
        return ctx._boots[key]
    name = ctx.names[topology]
    state = ctx.workdir / f"{topology}-cloud"
    boot = (f"`novalab boot --topology {topology} --name {name} --state-dir "
            f"{topology}-cloud --out {topology}` in your lab folder (step 1)")
    if not (state / "traces").is_dir():
        raise Fail(f"no {state.name} in your lab folder: {boot}")
    try:
        spans = TraceStore(state).select(server=name, timeout=ctx.trace_timeout).spans
    except NoTrace as exc:
        raise Fail(f"no boot of {name} in {state}: {boot}") from exc
    trace = Trace.of(spans)
    ctx._require_this_attempt(trace, f"the boot of {name}")
    status = next((s.get(attr.NOVALAB_SERVER_STATUS) for s in trace.roots
                   if s.get(attr.NOVALAB_SERVER_STATUS)), None)
    if status != "ACTIVE":
        raise Fail(f"{name} ended {status or 'without a status'}, not ACTIVE: boot it again")
    shows, why = detect(trace)
    if shows != topology:
        raise Fail(f"the boot of {name} shows the {shows} chain ({why}): boot it with "
                   f"--topology {topology}")
    result = flow_check(trace, get_flow(topology))
    ctx._boots[key] = result
    return result


def _span(ctx, topology: str, number: int):
    step = _boot(ctx, topology).result(number)
    if not step.matched:
        raise Fail(f"{topology} step {number} is missing from your boot")
    return step.span


def _same_span(ctx, key: str, topology: str, number: int, where: str) -> None:
    given = ctx.answer(key).lower()
    span = _span(ctx, topology, number)
    if given != span.span_id:
        raise Fail(f"{given!r} is not the span id of {where} in your {topology} boot: "
                   f"{topology} step {number} of its flow check ends with it")


@check("{classic}: booted on the classic wiring, every classic step matched")
def classic_boot(ctx):
    result = _boot(ctx, "classic")
    if not result.ok:
        missing = [r.step.number for r in result.results if r.missing]
        raise Fail(f"{result.summary}; missing: {missing}")


@check("{modern}: booted on the modern wiring, every modern step matched")
def modern_boot(ctx):
    result = _boot(ctx, "modern")
    if not result.ok:
        missing = [r.step.number for r in result.results if r.missing]
        raise Fail(f"{result.summary}; missing: {missing}")


class _StepSpans(HTMLParser):
    """The span id each step of a `novalab flow compare --format html` page shows:
    ``{"classic-6": "<span id>", ...}`` (a step div ``id="classic-6"`` whose ``span``
    div ends with the id of the span that stood for it)."""

    def __init__(self):
        super().__init__()
        self.spans: dict[str, str] = {}
        self._step: str | None = None
        self._in_span = False
        self._text = ""

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "div" and _STEP_ID.match(attrs.get("id") or ""):
            self._step = attrs["id"]
        elif tag == "div" and self._step and "span" in (attrs.get("class") or "").split():
            self._in_span, self._text = True, ""

    def handle_data(self, data):
        if self._in_span:
            self._text += data

    def handle_endtag(self, tag):
        if tag != "div":
            return
        if self._in_span:
            words = self._text.split()
            if words and _SPAN_ID.match(words[-1]):
                self.spans[self._step] = words[-1]
            self._in_span = False
        elif self._step:
            self._step = None


@check(f"{COMPARE} in your lab folder lines up your two boots")
def compare_page(ctx):
    path = ctx.workdir / COMPARE
    if not path.exists():
        raise Fail(f"no {path}: `novalab flow compare --classic classic/trace.json --modern "
                   f"modern/trace.json --format html -o {COMPARE}` in your lab folder (step 5)")
    page = _StepSpans()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    for topology in ("classic", "modern"):
        matched = {f"{topology}-{r.step.number}": r.span.span_id
                   for r in _boot(ctx, topology).results if r.matched}
        shown = {step: span for step, span in page.spans.items()
                 if step.startswith(f"{topology}-")}
        if not shown:
            raise Fail(f"{COMPARE} shows no span of a {topology} boot: it is not a page of "
                       "`novalab flow compare --format html` made with your two traces")
        wrong = sorted((s for s in matched if shown.get(s) != matched[s]),
                       key=lambda s: int(s.rsplit("-", 1)[1]))
        if wrong:
            raise Fail(f"{COMPARE} does not show your {topology} boot's spans (step "
                       f"{wrong[0].rsplit('-', 1)[1]} is not {matched[wrong[0]]}): make it "
                       "again from both traces, --classic and --modern")


@check("who sent your classic boot to the scheduler (answer classic-caller)")
def classic_caller(ctx):
    _same_span(ctx, "classic-caller", "classic", 6, "nova-api's cast to the scheduler")


@check("who called the scheduler in your modern boot (answer modern-caller)")
def modern_caller(ctx):
    _same_span(ctx, "modern-caller", "modern", 8, "the conductor's select_destinations call")


@check("the first write of the instance row in your classic boot (answer classic-row)")
def classic_row(ctx):
    _same_span(ctx, "classic-row", "classic", 5, "the first INSERT into instances")


@check("the first write of the instance row in your modern boot (answer modern-row)")
def modern_row(ctx):
    given = ctx.answer("modern-row").lower()
    inserts = sorted((s for s in _boot(ctx, "modern").trace
                      if sql_statement(s) == ("INSERT", "instances")), key=lambda s: s.start_ns)
    if not inserts:
        raise Fail("your modern boot wrote no instance row")
    first = inserts[0]
    if given != first.span_id:
        raise Fail(f"{given!r} is not the first INSERT into instances in your modern boot: "
                   "look for it in `novalab trace show` (tree order is start order)")
    if first.span_id != _span(ctx, "modern", 18).span_id:
        raise Fail("your modern boot's first INSERT into instances is not the conductor's "
                   "(modern step 18): was it booted with --topology modern?")


@check("the consumer of the allocation placement wrote (answer consumer)")
def consumer(ctx):
    claim = _span(ctx, "modern", 13)
    path = str(claim.get(attr.URL_PATH) or claim.get(attr.URL_FULL) or "")
    found = _ALLOCATION.search(path.split("?", 1)[0])
    if not found:
        raise Fail(f"modern step 13's span ({claim.name}) names no consumer in its path")
    given = ctx.answer("consumer").lower()
    if given != found.group(1).lower():
        raise Fail(f"{given!r} is not the consumer placement wrote: read url.path of "
                   "placement-api's PUT /allocations/<consumer_uuid> span")
    server_ids = {str(s.get(attr.NOVA_INSTANCE_UUID)) for s in _boot(ctx, "modern").trace.roots
                  if s.get(attr.NOVA_INSTANCE_UUID)}
    if server_ids and given not in server_ids:
        raise Fail(f"the allocation's consumer {given} is not your server {ctx.names['modern']}")


@check("the call that claimed your modern server's resources (answer claimer)")
def claimer(ctx):
    result = _boot(ctx, "modern")
    claim = _span(ctx, "modern", 13)
    caller = next((a for a in result.trace.ancestors(claim) if a.service != claim.service),
                  None)
    if caller is None:
        raise Fail("placement's PUT has no caller in your trace")
    given = ctx.answer("claimer").lower()
    if given != caller.span_id:
        raise Fail(f"{given!r} is not the span that called placement's PUT /allocations in "
                   "your modern boot: the CLIENT span just above placement-api's SERVER span "
                   "(which service's is it?)")
