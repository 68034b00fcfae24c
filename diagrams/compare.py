"""The classic and today's boot side by side: which steps line up, and what moved.

``compare(classic, modern)`` lines the two flow tables up with ``MAPPING``, a
small explicit table of rows: the classic steps, the modern steps that do the
same work, and how they differ (``SAME``, ``MOVED`` to another service or
database, ``NEW`` in today's table only, ``CLASSIC_ONLY``). Step texts come from
the two ``Flow`` tables themselves; the mapping only names numbers and says what
changed. ``QUESTIONS`` are the three moves a learner should see (who calls the
scheduler, where the instance row is first written, who claims the resources)
and one more (who casts to the host), each answered by one step of each table.

Given the flow checks of a classic and a modern boot (optional), every step also
shows the span that stood for it, and each question is answered from the
traces: the service that did it and its span id. ``render_text`` and
``render_html`` (one self-contained page, no script, nothing fetched) are what
``novalab flow compare`` prints or writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from xml.sax.saxutils import escape

from novalab.diagrams.check import CheckResult, StepResult
from novalab.diagrams.flows import get_flow
from novalab.diagrams.flows.model import Flow, Step
from novalab.diagrams.model import Trace

SAME, MOVED, NEW, CLASSIC_ONLY = "same", "moved", "new", "classic only"


@dataclass(frozen=True)
class Pair:
    """One row: classic steps beside the modern steps doing that work."""

    classic: tuple[int, ...]
    modern: tuple[int, ...]
    change: str  # SAME, MOVED, NEW or CLASSIC_ONLY
    note: str
    theme: str = ""  # the QUESTIONS key a MOVED row answers
    moved_from: tuple[int, ...] = ()  # classic steps (lined up on an earlier row) moved here


@dataclass(frozen=True)
class Question:
    key: str
    text: str
    classic_step: int  # the step whose span answers it, in each table
    modern_step: int
    classic: str  # the answer, in words
    modern: str


QUESTIONS = (
    Question("scheduler", "Who calls the scheduler?", 6, 8,
             "nova-api casts run_instance to nova-scheduler, and nobody waits for an answer",
             "the super conductor calls select_destinations (an rpc.call) and waits for "
             "the destination"),
    Question("row", "Where is the instance row first written?", 5, 18,
             "by nova-api, in the one nova database, before anything is scheduled",
             "by the super conductor, in the chosen cell's database, once a host is chosen; "
             "nova-api writes only a request spec, a build request and an instance mapping "
             "(the API database)"),
    Question("claim", "Who claims the resources?", 11, 13,
             "nobody claims: the scheduler saves the chosen host on the instance row, and "
             "the host's resource tracker counts the instance later",
             "nova-scheduler claims them in placement: an allocation whose consumer is the "
             "instance (the server id), on the chosen compute node's resource provider"),
    Question("host", "Who sends the build to the host?", 12, 21,
             "nova-scheduler casts the build (Grizzly's run_instance; novalab's classic "
             "scheduler casts today's build_and_run_instance, the table's hybrid)",
             "the super conductor casts build_and_run_instance, after the instance exists "
             "in its cell"),
)

MAPPING = (
    Pair((1, 2, 3), (), CLASSIC_ONLY,
         "Alice's token: unchanged today (Keystone's Fernet tokens are not even stored since "
         "Ocata); the walkthroughs of today's boot start at POST /servers."),
    Pair((4,), (1,), SAME, "POST /servers, answered by nova-api."),
    Pair((5,), (2, 3, 4), MOVED,
         "nova-api no longer writes the instance: it stores a request spec, a build request "
         "(the instance, serialized) and an instance mapping without a cell, all in the API "
         "database. The instance row moved to the conductor (modern step 18).", "row"),
    Pair((6,), (5,), MOVED,
         "nova-api's cast goes to the super conductor (schedule_and_build_instances), not to "
         "the scheduler (run_instance).", "scheduler"),
    Pair((7,), (6,), SAME, "The 202 goes back as soon as the cast is sent."),
    Pair((8,), (7, 8, 9), MOVED,
         "The scheduler no longer takes the boot off the broker as a cast from nova-api: the "
         "super conductor takes it and calls select_destinations, an rpc.call it waits "
         "for.", "scheduler"),
    Pair((9,), (10, 11), MOVED,
         "What the filters choose from: placement's allocation candidates (compute nodes "
         "with room for the flavor), not every host the scheduler reads; filters and weighers "
         "still come from configuration.", "claim"),
    Pair((10,), (12,), SAME,
         "Host states from compute_nodes (a cell database's table today) feed the filters "
         "and weighers."),
    Pair((11,), (13, 14), MOVED,
         "The classic scheduler saved the chosen host on the instance row; today it claims "
         "the resources in placement (PUT /allocations/{instance uuid}), and the host is "
         "written on the instance by the compute host itself, its resource tracker's claim "
         "(_set_instance_host_and_node) in its first save (modern steps 23-24): the "
         "conductor creates the instance without one (modern step 18).", "claim"),
    Pair((), (15, 16), NEW,
         "select_destinations is a call: the destination goes back to the conductor, which "
         "buries the instance in cell0 if there is none."),
    Pair((), (17, 18, 19, 20), MOVED,
         "New home of classic step 5's row: the conductor finds the host's cell (host "
         "mapping), creates the instance there, points the mapping at the cell and deletes "
         "the build request.", "row", moved_from=(5,)),
    Pair((12,), (21,), MOVED,
         "build_and_run_instance is cast by the conductor, not by the scheduler (which, in "
         "Grizzly, cast run_instance: the classic step is the table's hybrid).", "host"),
    Pair((13,), (22,), SAME, "The host takes build_and_run_instance off compute.<host>."),
    Pair((14, 15, 16, 17, 18), (23, 24), SAME,
         "nova-compute reads and saves the instance through the conductor (today cell1's "
         "own conductor, which the super conductor is not; upstream through "
         "Instance.save()'s object_action, novalab with Grizzly's instance_update). Its "
         "first save now also records the host and node (the resource tracker's claim)."),
    Pair(tuple(range(26, 39)), (25,), SAME,
         "The network: today's table draws only nova-compute's request; Neutron's agents "
         "work as the classic steps draw. Real Nova builds networks and volumes "
         "(_build_resources) before spawn fetches the image, so the classic table's order "
         "differs here."),
    Pair((39, 40, 41, 42), (26,), SAME, "The volume, through Cinder."),
    Pair(tuple(range(19, 26)), (27,), SAME,
         "The image for the VM: Glance's record, then the bytes (Ceph in classic steps "
         "21-25)."),
    Pair((44,), (28,), SAME, "The VIFs plugged (os-vif, LibvirtDriver.plug_vifs)."),
    Pair((48, 49, 50, 51), (29,), SAME,
         "Guest.create defines the domain (defineXML); its XML carries the volumes as disks, "
         "which QEMU opens in Ceph as it starts (classic steps 49-51)."),
    Pair((43,), (30,), SAME, "Guest.launch: createWithFlags starts the VM."),
    Pair((), (31,), NEW,
         "The walkthrough's timer (spawn's _wait_for_boot): it ran in the classic boot too, "
         "the classic table does not draw it."),
    Pair((45, 46, 47), (32, 33), SAME,
         "The final save of the instance, through the conductor."),
    Pair((52, 53, 54), (), CLASSIC_ONLY,
         "The guest's metadata: unchanged today; the walkthroughs do not follow the guest."),
    Pair((55,), (34,), SAME, "The client's last poll."),
    Pair((56, 57), (35, 36), MOVED,
         "nova-api reads the instance where it now lives: the instance mapping (API "
         "database) names the cell, then the cell database has the row.", "row"),
    Pair((58,), (37,), SAME, "The state goes back to the client."),
)


@dataclass(frozen=True)
class Side:
    """One step of one table in a row, with its span when a boot was checked."""

    table: str  # "classic" or "modern"
    step: Step
    result: StepResult | None = None
    trace: Trace | None = None  # the checked boot's trace, with ``result``

    @property
    def span_words(self) -> str:
        """The span that stood for the step ("" without a boot; "MISSING" when none)."""
        if self.result is None:
            return ""
        if not self.result.matched:
            return "NOT EXPECTED" if self.result.excused else "MISSING"
        span = self.result.span
        edge = "end of " if self.result.found.edge == "end" else ""
        return f"{edge}{span.service} {span.kind} {span.name!r} {span.span_id}"


@dataclass(frozen=True)
class Row:
    pair: Pair
    classic: tuple[Side, ...]
    modern: tuple[Side, ...]


@dataclass(frozen=True)
class Answer:
    question: Question
    classic: Side
    modern: Side

    @staticmethod
    def who(side: Side) -> str:
        """Who did it in the checked boot: the span's service and id; for a callee's SERVER
        span (placement answering the claim), the service that called it."""
        result = side.result
        if result is None or not result.matched:
            return ""
        span = result.span
        if span.kind == "SERVER" and side.trace is not None:
            caller = next((a for a in side.trace.ancestors(span)
                           if a.service != span.service), None)
            if caller is not None:
                return (f"{caller.service} ({caller.span_id}), answered by {span.service} "
                        f"({span.span_id})")
        return f"{span.service} ({span.span_id})"


@dataclass(frozen=True)
class Comparison:
    classic: Flow
    modern: Flow
    rows: tuple[Row, ...]
    answers: tuple[Answer, ...]
    classic_check: CheckResult | None = None
    modern_check: CheckResult | None = None

    @property
    def moved(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.pair.change == MOVED)


def compare(classic_check: CheckResult | None = None,
            modern_check: CheckResult | None = None) -> Comparison:
    """The two tables lined up by ``MAPPING``; with flow checks, each step's span."""
    classic = classic_check.flow if classic_check else get_flow("classic")
    modern = modern_check.flow if modern_check else get_flow("modern")

    def side(table: str, flow: Flow, checked: CheckResult | None, number: int) -> Side:
        if checked is None:
            return Side(table, flow.step(number))
        return Side(table, flow.step(number), checked.result(number), checked.trace)

    rows = tuple(Row(pair,
                     tuple(side("classic", classic, classic_check, n) for n in pair.classic),
                     tuple(side("modern", modern, modern_check, n) for n in pair.modern))
                 for pair in MAPPING)
    answers = tuple(Answer(q, side("classic", classic, classic_check, q.classic_step),
                           side("modern", modern, modern_check, q.modern_step))
                    for q in QUESTIONS)
    return Comparison(classic, modern, rows, answers, classic_check, modern_check)


def coverage(flow: Flow, table: str) -> list[int]:
    """Steps of ``flow`` that no row of ``MAPPING`` names (``table``: classic or modern)."""
    named = {n for pair in MAPPING for n in getattr(pair, table)}
    return [s.number for s in flow.steps if s.number not in named]


# -- text -----------------------------------------------------------------------------------

def _ranges(numbers) -> str:
    from novalab.diagrams.check import _ranges as ranges

    return ranges(numbers) if numbers else "-"


def _title(c: Comparison) -> str:
    return (f"{c.classic.name} ({len(c.classic.steps)} steps) beside {c.modern.name} "
            f"({len(c.modern.steps)} steps): what moved")


def _booted(c: Comparison) -> list[str]:
    lines = []
    for name, checked in (("classic", c.classic_check), ("modern", c.modern_check)):
        if checked is not None:
            lines.append(f"{name} boot: trace {checked.trace.trace_id}, {checked.summary}")
    return lines


def render_text(c: Comparison) -> str:
    """The comparison as plain text: the questions, then every row."""
    lines = [_title(c), *_booted(c), "", "What moved:"]
    for answer in c.answers:
        q = answer.question
        lines.append(f"  {q.text}")
        for label, side, words in (("classic", answer.classic, q.classic),
                                   ("modern", answer.modern, q.modern)):
            lines.append(f"    {label:<8}step {side.step.number:>2}  {words}")
            who = Answer.who(side)
            if who:
                lines.append(f"{'':14}in this boot: {who}")
    lines += ["", "Side by side (classic | modern):"]
    for row in c.rows:
        pair = row.pair
        tag = pair.change + (f": {pair.theme}" if pair.theme else "")
        lines.append("")
        lines.append(f"[{tag}] classic {_ranges(pair.classic)} | modern {_ranges(pair.modern)}")
        if pair.moved_from:
            lines.append(f"  classic   moved here from step(s) {_ranges(pair.moved_from)}")
        for side in (*row.classic, *row.modern):
            lines.append(f"  {side.table:<8}{side.step.number:>3}  {side.step.request}: "
                         f"{side.step.text}")
            if side.span_words:
                lines.append(f"{'':15}{side.span_words}")
        lines.append(f"  -> {pair.note}")
    moved = [r.pair for r in c.moved]
    lines += ["", f"{len(moved)} rows moved: classic steps "
              f"{_ranges(sorted({n for p in moved for n in p.classic}))}, modern steps "
              f"{_ranges(sorted({n for p in moved for n in p.modern}))}."]
    return "\n".join(lines) + "\n"


# -- HTML -----------------------------------------------------------------------------------

CSS = """
body{font-family:Helvetica,Arial,sans-serif;margin:1.5em;color:#263238}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.5em}
table{border-collapse:collapse;width:100%}
td,th{border-bottom:1px solid #e0e0e0;padding:.35em .5em;vertical-align:top;text-align:left}
th{background:#eceff1}
.step{margin:.15em 0}.num{font-weight:bold;display:inline-block;min-width:2em}
.req{color:#1565c0}.span{font-family:monospace;font-size:.85em;color:#546e7a}
.span.missing{color:#c62828;font-weight:bold}
tr.moved td{background:#fff8e1}tr.new td{background:#e8f5e9}
tr.classic-only td{background:#fafafa;color:#616161}
.change{font-weight:bold;white-space:nowrap}.from{font-style:italic}.note{font-size:.9em}
.answers td{background:#fff}
#pairs td:first-child,#pairs td:last-child{width:38%}
"""


def _side_html(side: Side) -> str:
    span = ""
    if side.span_words:
        missing = side.result is not None and not side.result.matched
        span = (f'<div class="span{" missing" if missing else ""}">'
                f"{escape(side.span_words)}</div>")
    return (f'<div class="step" id="{side.table}-{side.step.number}" '
            f'data-step="{side.step.number}"><span class="num">{side.step.number}</span> '
            f'<span class="req">{escape(side.step.request)}</span>: '
            f"{escape(side.step.text)}{span}</div>")


def _moved_from(pair: Pair) -> str:
    """The classic cell of a row the classic table has no step for (``-``), or the links
    to the classic steps whose work moved here."""
    if not pair.moved_from:
        return "-"
    links = ", ".join(f'<a href="#classic-{n}">{n}</a>' for n in pair.moved_from)
    return f'<div class="from">moved here from classic step {links}</div>'


def render_html(c: Comparison) -> str:
    """One self-contained page: the questions, then the two tables side by side."""
    answers = []
    for answer in c.answers:
        q = answer.question
        cells = []
        for side, words in ((answer.classic, q.classic), (answer.modern, q.modern)):
            who = Answer.who(side)
            cells.append(f'<td><a href="#{side.table}-{side.step.number}">step '
                         f"{side.step.number}</a>: {escape(words)}"
                         + (f'<div class="span">in this boot: {escape(who)}</div>' if who
                            else "") + "</td>")
        answers.append(f'<tr data-question="{q.key}"><th>{escape(q.text)}</th>'
                       + "".join(cells) + "</tr>")
    rows = []
    for row in c.rows:
        pair = row.pair
        css = pair.change.replace(" ", "-")
        rows.append(
            f'<tr class="{css}" data-change="{escape(pair.change)}" '
            f'data-theme="{pair.theme}" data-classic="{_ranges(pair.classic)}" '
            f'data-modern="{_ranges(pair.modern)}">'
            f'<td>{"".join(_side_html(s) for s in row.classic) or _moved_from(pair)}</td>'
            f'<td><div class="change">{escape(pair.change)}'
            f'{": " + escape(pair.theme) if pair.theme else ""}</div>'
            f'<div class="note">{escape(pair.note)}</div></td>'
            f'<td>{"".join(_side_html(s) for s in row.modern) or "-"}</td></tr>')
    booted = "".join(f"<p>{escape(line)}</p>" for line in _booted(c))
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(_title(c))}</title>",
        f"<style>{CSS}</style></head>",
        "<body>",
        f"<header><h1>{escape(_title(c))}</h1><p>{escape(c.classic.title)} · "
        f"{escape(c.modern.title)}</p>{booted}</header>",
        '<h2>What moved</h2><table id="answers" class="answers"><thead><tr><th></th>'
        "<th>classic</th><th>today</th></tr></thead><tbody>",
        *answers,
        "</tbody></table>",
        '<h2>Side by side</h2><table id="pairs"><thead><tr><th>classic</th><th>what '
        "changed</th><th>today (modern)</th></tr></thead><tbody>",
        *rows,
        "</tbody></table>",
        "</body></html>",
    ]) + "\n"
