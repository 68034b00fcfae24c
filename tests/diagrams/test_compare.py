"""``novalab flow compare``: the classic and the modern table side by side, what moved.

The mapping is checked against the two flow tables (every step of each lined up,
each question answered by a step that does what it says); the page is rendered
by headless Chromium (Debian's ``chromium``; without it the browser test skips,
except under ``NOVALAB_REQUIRE_SERVICES=1``). The same page from two real boots
is tested in ``flows/test_modern.py``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import click
import pytest
from click.testing import CliRunner

from novalab.diagrams import compare
from novalab.diagrams.check import check
from novalab.diagrams.cli import register
from novalab.diagrams.flows import get_flow

pytestmark = pytest.mark.e2e  # Chromium

CLASSIC, MODERN = get_flow("classic"), get_flow("modern")
MOVED = [p for p in compare.MAPPING if p.change == compare.MOVED]


def test_every_step_of_both_tables_is_lined_up():
    assert compare.coverage(CLASSIC, "classic") == []
    assert compare.coverage(MODERN, "modern") == []
    for pair in compare.MAPPING:
        assert pair.change in (compare.SAME, compare.MOVED, compare.NEW, compare.CLASSIC_ONLY)
        # Each row has classic steps, unless the classic table has none for it (NEW), or
        # its work moved here from classic steps lined up on an earlier row.
        assert bool(pair.classic or pair.moved_from) == (pair.change != compare.NEW), pair
        assert not (pair.classic and pair.moved_from), pair
        assert bool(pair.modern) == (pair.change != compare.CLASSIC_ONLY), pair
        assert (pair.change == compare.MOVED) == bool(pair.theme), pair
        assert all(1 <= n <= len(CLASSIC.steps) for n in pair.classic)
        assert all(1 <= n <= len(MODERN.steps) for n in pair.modern)
    # The modern column reads top to bottom in the modern table's order.
    modern = [n for pair in compare.MAPPING for n in pair.modern]
    assert modern == sorted(modern) == list(range(1, len(MODERN.steps) + 1))


def test_each_question_is_a_move_and_its_steps_say_so():
    themes = {p.theme for p in MOVED}
    assert {q.key for q in compare.QUESTIONS} <= themes
    for question in compare.QUESTIONS:
        rows = [p for p in MOVED if p.theme == question.key]
        assert any(question.classic_step in p.classic for p in rows) or \
            any(question.modern_step in p.modern for p in rows), question.key
    by_key = {q.key: q for q in compare.QUESTIONS}
    # Who calls the scheduler: nova-api's cast then, the conductor's call now.
    assert CLASSIC.step(by_key["scheduler"].classic_step).source == "Nova.api"
    assert MODERN.step(by_key["scheduler"].modern_step).source == "Nova-super-conductor"
    # Where the row is written: the one database then, the cell's now, by the conductor.
    assert CLASSIC.step(by_key["row"].classic_step).target == "Database"
    row = MODERN.step(by_key["row"].modern_step)
    assert (row.source, row.target) == ("Nova-super-conductor", "Cell database")
    # Who claims: the scheduler, in placement.
    claim = MODERN.step(by_key["claim"].modern_step)
    assert (claim.source, claim.target) == ("Nova-scheduler", "Placement")


def test_the_text_lists_every_row_and_the_moved_steps():
    text = compare.render_text(compare.compare())
    assert text.startswith("classic (58 steps) beside modern (37 steps): what moved\n")
    assert text.count("\n[") == len(compare.MAPPING)
    assert text.count("[moved: ") == len(MOVED)
    for question in compare.QUESTIONS:
        assert question.text in text
    assert "in this boot" not in text  # no traces given


@click.group()
def novalab():
    """Stand-in for the `novalab` group of labs/cli.py."""


register(novalab)


def test_the_command_has_help_and_writes_the_page(tmp_path, recorded_whole_cast_trace):
    runner = CliRunner()
    helped = runner.invoke(novalab, ["flow", "compare", "--help"])
    assert helped.exit_code == 0 and "--classic TRACE" in helped.output
    page = tmp_path / "compare.html"
    done = runner.invoke(novalab, ["flow", "compare", "--classic",
                                   "tests/diagrams/fixtures/boot-whole-cast.otlp.json",
                                   "--format", "html", "-o", str(page)])
    assert done.exit_code == 0, done.output
    html = page.read_text()
    assert f"trace {recorded_whole_cast_trace.trace_id}, 58/58 steps matched" in html
    step6 = check(recorded_whole_cast_trace, CLASSIC).result(6).span
    assert f"in this boot: nova-api ({step6.span_id})" in html
    # A modern trace given as the classic one is said to be what it is.
    mixed = runner.invoke(novalab, ["flow", "compare", "--modern",
                                    "tests/diagrams/fixtures/boot-whole-cast.otlp.json"])
    assert "looks like a classic boot, not a modern one" in mixed.output


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    reason = "chromium is not installed (Debian: apt-get install -y chromium)"
    if os.environ.get("NOVALAB_REQUIRE_SERVICES") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def test_the_page_renders_in_chromium_and_lists_the_moved_steps(tmp_path):
    path = tmp_path / "compare.html"
    path.write_text(compare.render_html(compare.compare()))
    done = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                           "--no-first-run", "--disable-background-networking",
                           "--disable-component-update", "--disable-sync",
                           "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}",
                           "--dump-dom", path.as_uri()], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    rows = re.findall(r'<tr class="[^"]*" data-change="([^"]+)" data-theme="([^"]*)" '
                      r'data-classic="([^"]+)" data-modern="([^"]+)"', dom)
    assert len(rows) == len(compare.MAPPING)
    moved = [(theme, classic, modern) for change, theme, classic, modern in rows
             if change == "moved"]
    assert moved == [(p.theme, compare._ranges(p.classic), compare._ranges(p.modern))
                     for p in MOVED]
    assert len(re.findall(r'<tr data-question="', dom)) == len(compare.QUESTIONS)
    # Every step of both tables is on the page, once, where the answers link to it.
    for table, flow in (("classic", CLASSIC), ("modern", MODERN)):
        ids = re.findall(rf'id="{table}-(\d+)"', dom)
        assert sorted(map(int, ids)) == list(range(1, len(flow.steps) + 1))
    for question in compare.QUESTIONS:
        assert f'href="#modern-{question.modern_step}"' in dom


def test_the_host_on_the_instance_is_the_compute_hosts_save_not_the_conductors():
    """Classic step 11 (the scheduler saves the host) did not move to the conductor:
    today the compute host's resource tracker records host and node in its first save."""
    rows = [p for p in compare.MAPPING if 11 in p.classic or 11 in p.moved_from]
    assert rows
    for pair in rows:
        sources = {MODERN.step(n).source for n in pair.modern}
        assert "Nova-super-conductor" not in sources, pair
    (claim,) = [p for p in rows if 11 in p.classic]
    assert "resource tracker" in claim.note and "modern steps 23-24" in claim.note
