"""The commands: flow check, diagram, export jaeger (registered on a stand-in group)."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from novalab.diagrams.cli import register
from novalab.diagrams.load import load_trace, load_traces

EMBEDDED = str(Path(__file__).parent / "fixtures" / "boot-embedded.otlp.json")
RABBITMQ = str(Path(__file__).parent / "fixtures" / "boot-rabbitmq-postgresql.otlp.jsonl")


@click.group()
def novalab():
    """Stand-in for the `novalab` group of labs/cli.py."""


register(novalab)


def run(*args):
    return CliRunner().invoke(novalab, [str(a) for a in args], catch_exceptions=False)


def test_commands_are_registered():
    assert {"flow", "diagram", "export"} <= set(novalab.commands)


def test_flow_check_text_exits_1_when_steps_are_missing():
    result = run("flow", "check", EMBEDDED)
    assert result.exit_code == 1
    assert result.output.rstrip().endswith("28/58 steps matched, 0 out of order")
    assert "MISSING" in result.output


def test_flow_check_json():
    result = run("flow", "check", EMBEDDED, "--format", "json", "--flow", "classic")
    doc = json.loads(result.output)
    assert doc["summary"]["matched"] == 28 and result.exit_code == 1


def test_flow_check_exits_0_when_everything_matches_in_order(whole_cast_doc, tmp_path):
    path = tmp_path / "whole-cast.json"
    path.write_text(json.dumps(whole_cast_doc))
    result = run("flow", "check", path)
    assert result.exit_code == 0, result.output
    assert result.output.rstrip().endswith("58/58 steps matched, 0 out of order")


def test_unreadable_input_exits_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    for args in (("flow", "check", bad), ("diagram", bad, "-o", tmp_path / "x.svg"),
                 ("export", "jaeger", bad, "-o", tmp_path / "x.json"),
                 ("flow", "check", tmp_path / "absent.json")):
        result = run(*args)
        assert result.exit_code == 2, args
        assert "neither OTLP" in result.output or "no such file" in result.output


@pytest.mark.parametrize("kind, fmt, check", [
    ("sequence", "svg", lambda b: b.startswith(b"<svg") and b.count(b'class="lifeline"') == 22),
    ("sequence", "html", lambda b: b.startswith(b"<!DOCTYPE html>")),
    ("sequence", "mermaid", lambda b: b.startswith(b"sequenceDiagram")),
    ("sequence", "plantuml", lambda b: b.startswith(b"@startuml")),
    ("callgraph", "dot", lambda b: b.startswith(b"digraph callgraph")),
    ("callgraph", "svg", lambda b: b"ServersController" in b),
    ("callgraph", "png", lambda b: b.startswith(b"\x89PNG")),
])
def test_diagram_writes_each_format(tmp_path, kind, fmt, check):
    out = tmp_path / f"picture.{fmt}"
    result = run("diagram", EMBEDDED, "--kind", kind, "--format", fmt, "-o", out)
    assert result.exit_code == 0, result.output
    assert check(out.read_bytes())


def test_diagram_full_to_stdout():
    result = run("diagram", EMBEDDED, "--full", "--format", "mermaid")
    assert result.exit_code == 0
    assert "participant database_sqlite as database (sqlite)" in result.output


def test_diagram_rejects_mismatched_formats(tmp_path):
    result = run("diagram", EMBEDDED, "--kind", "callgraph", "--format", "mermaid")
    assert result.exit_code == 2 and "supports --format svg, png, dot" in result.output
    result = run("diagram", EMBEDDED, "--kind", "callgraph", "--format", "png")
    assert result.exit_code == 2 and "needs -o FILE" in result.output


def test_export_jaeger(tmp_path):
    out = tmp_path / "trace.jaeger.json"
    result = run("export", "jaeger", EMBEDDED, "-o", out)
    assert result.exit_code == 0
    assert [s.span_id for s in load_trace(out)] == [s.span_id for s in load_trace(EMBEDDED)]


def test_export_jaeger_writes_every_trace_of_a_file_or_the_chosen_ones(tmp_path):
    """Jaeger's UI opens a file of many traces: a file of many exports as many."""
    both = tmp_path / "two.jsonl"
    both.write_text(json.dumps(json.loads(Path(EMBEDDED).read_text())) + "\n"
                    + Path(RABBITMQ).read_text())
    ids = sorted({t.trace_id for t in load_traces(str(both))})
    assert len(ids) >= 2
    out = tmp_path / "all.jaeger.json"
    result = run("export", "jaeger", both, "-o", out)
    assert result.exit_code == 0, result.output
    assert sorted(t["traceID"] for t in json.loads(out.read_text())["data"]) == ids
    one = tmp_path / "one.jaeger.json"
    assert run("export", "jaeger", both, "--trace-id", ids[0], "-o", one).exit_code == 0
    assert [t["traceID"] for t in json.loads(one.read_text())["data"]] == [ids[0]]
    unknown = run("export", "jaeger", both, "--trace-id", "f" * 32, "-o", one)
    assert unknown.exit_code == 2 and "no trace ffff" in unknown.output
