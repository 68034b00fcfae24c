"""The modern flow (today's boot) on a real boot of the modern topology.

One embedded cloud for the module, wired as today's Nova (``topology="modern"``:
placement, the API database, the super conductor), boots one server with a port
and a volume; every test reads that boot's trace. The classic boot the compare
page sets beside it is the recorded whole-cast boot of ``fixtures/``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import click
import pytest
from click.testing import CliRunner

from novalab.diagrams import compare, sequence
from novalab.diagrams.check import check
from novalab.diagrams.cli import register
from novalab.diagrams.flows import detect, get_flow
from novalab.diagrams.flows.model import RETURN
from novalab.diagrams.flows.modern import database_of
from novalab.diagrams.load import load_trace
from novalab.reference.deploy.boot import BootRequest, boot
from novalab.reference.deploy.embedded import CloudConfig, EmbeddedCloud
from novalab.tracing import attributes as attr
from novalab.tracing.otlp_json import spans_to_otlp
from novalab.tracing.setup import Telemetry

pytestmark = pytest.mark.e2e  # Chromium

FLOW = get_flow("modern")
PLACEMENT = {s.number for s in FLOW.steps if "Placement" in (s.source, s.target)}


@pytest.fixture(scope="module")
def modern_boot(tmp_path_factory):
    """``(trace, server)`` of one boot on the modern topology."""
    state_dir = tmp_path_factory.mktemp("modern-flow") / "cloud"
    telemetry = Telemetry(memory=True, otlp=False)
    with EmbeddedCloud(CloudConfig(state_dir=state_dir, topology="modern"), telemetry) as cloud:
        result = boot(cloud, BootRequest(name="today"))
        assert result.active, result.server
        trace = load_trace(result.spans)
    telemetry.shutdown()
    return trace, result.server


@pytest.fixture(scope="module")
def modern_trace(modern_boot):
    return modern_boot[0]


def test_a_real_modern_boot_matches_every_step_in_order(modern_trace):
    report = check(modern_trace, FLOW)
    assert [r.step.number for r in report.results if not r.matched] == []
    assert [r.step.number for r in report.results if r.warning] == []
    assert report.summary == f"{len(FLOW.steps)}/{len(FLOW.steps)} steps matched, 0 out of order"


def test_the_trace_says_it_is_modern_and_the_classic_table_does_not_fit_it(
        modern_trace, recorded_whole_cast_trace):
    name, why = detect(modern_trace)
    assert name == "modern" and "ComputeTaskManager.schedule_and_build_instances" in why
    assert detect(recorded_whole_cast_trace)[0] == "classic"
    # The classic table's own steps that moved find nothing in today's boot.
    classic = check(modern_trace, get_flow("classic"))
    assert not classic.result(5).matched  # nova-api writes no instance row
    assert not classic.result(11).matched  # the scheduler saves no host on it


def test_the_steps_stand_on_what_really_ran(modern_boot):
    trace, server = modern_boot
    report = check(trace, FLOW)

    def span(number):
        return report.result(number).span

    assert (span(5).service, span(5).get(attr.RPC_METHOD)) == \
        ("nova-api", "schedule_and_build_instances")
    assert (span(8).service, span(8).get(attr.RPC_METHOD), span(8).get(attr.NOVALAB_RPC_STYLE)) \
        == ("nova-super-conductor", "select_destinations", "call")
    assert span(18).service == "nova-super-conductor"
    assert trace.is_under(span(18), report.result(7).span)
    # The claim: placement's PUT, called by the scheduler, for the server as consumer.
    claim = span(13)
    assert claim.service == "placement-api" and claim.kind == "SERVER"
    assert str(claim.get(attr.URL_PATH)).endswith(f"/allocations/{server['id']}")
    assert next(a for a in trace.ancestors(claim) if a.service != "placement-api").service \
        == "nova-scheduler"
    assert span(21).get(attr.RPC_METHOD) == "build_and_run_instance"
    assert span(21).service == "nova-super-conductor"
    # The first row of the instance anywhere in the trace is the conductor's.
    inserts = sorted((s for s in trace if s.name == "INSERT instances"), key=lambda s: s.start_ns)
    assert inserts[0].span_id == span(18).span_id


def test_api_and_cell_database_steps_touch_their_own_tables(modern_trace):
    report = check(modern_trace, FLOW)
    databases = {"API database", "Cell database"}
    drawn = [r for r in report.results if r.matched and r.step.kind != RETURN
             and r.drawn[1] in databases]
    assert {r.drawn[1] for r in drawn} == databases
    for r in drawn:
        assert database_of(r.span) == r.drawn[1], (r.step.number, r.span.name)


def test_without_placements_spans_exactly_its_steps_are_missing(modern_trace):
    assert PLACEMENT == {10, 11, 13, 14}
    gone = load_trace([s for s in modern_trace if s.service != "placement-api"])
    report = check(gone, FLOW)
    assert {r.step.number for r in report.results if r.missing} == PLACEMENT
    # Nothing else leans on placement: the other steps still match, none as a stand-in.
    assert [r.step.number for r in report.results if r.warning] == []


def test_its_sequence_diagram_renders(modern_trace, tmp_path):
    view = sequence.from_check(check(modern_trace, FLOW))
    assert len(view.arrows) == len(FLOW.steps) and len(view.participants) == len(FLOW.lifelines)
    svg = sequence.render(view, "svg")
    assert len(re.findall(r'<g class="lifeline"', svg)) == len(FLOW.lifelines)
    assert len(re.findall(r'<g class="arrow[ "]', svg)) == len(FLOW.steps)
    for name in ("Placement", "Nova-super-conductor", "API database", "Cell database"):
        assert f'data-lifeline="{name}"' in svg
    mermaid = sequence.render(view, "mermaid")
    assert mermaid.count("->>") + mermaid.count("-->>") + mermaid.count("-)") >= len(FLOW.steps)
    assert "@startuml" in sequence.render(view, "plantuml")
    # Chromium parses the SVG and draws every lifeline and arrow (skipped without it).
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        if os.environ.get("NOVALAB_REQUIRE_SERVICES") == "1":
            pytest.fail("chromium is not installed (Debian: apt-get install -y chromium)")
        return
    path = tmp_path / "sequence.svg"
    path.write_text(svg)
    done = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                           "--no-first-run", "--disable-background-networking",
                           f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                           path.as_uri()], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "This page contains the following errors" not in done.stdout
    assert len(re.findall(r'<g class="arrow[ "]', done.stdout)) == len(FLOW.steps)


@click.group()
def novalab():
    """Stand-in for the `novalab` group of labs/cli.py."""


register(novalab)


def test_flow_check_and_compare_on_the_command_line(modern_trace, tmp_path):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(spans_to_otlp(list(modern_trace))))
    runner = CliRunner()
    checked = runner.invoke(novalab, ["flow", "check", str(path)])
    assert checked.exit_code == 0, checked.output
    assert checked.output.startswith("flow modern:")
    assert checked.output.rstrip().endswith(f"{len(FLOW.steps)}/{len(FLOW.steps)} steps "
                                            "matched, 0 out of order")
    compared = runner.invoke(novalab, ["flow", "compare", "--modern", str(path)])
    assert compared.exit_code == 0, compared.output
    report = check(modern_trace, FLOW)
    caller = f"in this boot: nova-super-conductor ({report.result(8).span.span_id})"
    assert caller in compared.output


def test_compare_answers_the_questions_from_both_boots(modern_trace, recorded_whole_cast_trace):
    both = compare.compare(check(recorded_whole_cast_trace, get_flow("classic")),
                           check(modern_trace, FLOW))
    who = {a.question.key: (compare.Answer.who(a.classic), compare.Answer.who(a.modern))
           for a in both.answers}
    assert who["scheduler"][0].startswith("nova-api (")
    assert who["scheduler"][1].startswith("nova-super-conductor (")
    assert who["row"][0].startswith("nova-api (") and who["row"][1].startswith(
        "nova-super-conductor (")
    assert who["claim"][1].startswith("nova-scheduler (") and "placement-api" in who["claim"][1]
    assert who["host"][0].startswith("nova-scheduler (")
    assert who["host"][1].startswith("nova-super-conductor (")
    text = compare.render_text(both)
    assert "MISSING" not in text
    assert f"modern boot: trace {modern_trace.trace_id}" in text


def test_the_conductor_saves_say_whose_rpc_names_they_are():
    """novalab's compute host saves with Grizzly's instance_update; upstream's since
    Havana is Instance.save() through object_action: steps 23 and 32 say so."""
    flow = get_flow("modern")
    for number in (23, 32):
        (note,) = flow.step(number).notes
        assert "Grizzly" in note and "object_action" in note, number
