"""The scale benchmark, CI-sized: its smallest run reports every figure and its
invariants hold (no host oversubscribed, nothing stuck in BUILD, no span dropped).

``benchmarks/scale.py`` prints how fast; here only what must be true whatever the
speed: every boot reaches ACTIVE, each one's trace is found in the trace store's
file with its scheduler, conductor and SQL spans, and the report has its fields.
"""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def scale(load_benchmark):
    return load_benchmark("scale")


def test_smallest_run_reports_every_figure_and_keeps_the_invariants(scale, tmp_path):
    lines = []
    results, clouds = scale.run_scale(tmp_path, [2], [(3, 2)], echo=lines.append)
    assert len(results) == 1
    run = results[0]
    # Every boot went ACTIVE and its trace was read back from the trace store's file.
    assert (run.active, run.errors, run.traces_found) == (3, 0, 3)
    assert run.oversubscribed == []
    assert run.stuck == 0
    assert run.spans_dropped == 0
    summary = run.summary()
    for key in ("boots_per_s", "cpu_ms_per_boot", "cpu_bound_boots_per_s", "p50_ms", "p99_ms",
                "select_ms", "run_instance_ms", "conductor_ms", "db_ms", "rss_per_host_mb",
                "oversubscribed_hosts", "stuck", "spans_dropped"):
        assert key in summary
    # The figures taken from spans are there: a boot schedules, calls the conductor
    # and runs SQL.
    assert summary["select_ms"] > 0 and summary["conductor_ms"] > 0 and summary["db_ms"] > 0
    assert summary["oversubscribed_hosts"] == 0
    # Per service: the boot's spans and statements, every one counted once.
    assert {"nova-api", "nova-scheduler", "nova-conductor"} <= set(run.spans_by_service)
    assert sum(run.spans_by_service.values()) == pytest.approx(run.spans_per_boot)
    assert sum(run.db_statements_by_service.values()) == pytest.approx(run.db_statements)
    assert set(clouds) == {2} and clouds[2]["rss_mb"] > 0
    # The warm-up booted one server per host before the measured run.
    assert any("warm-up: one boot per host (2)" in line for line in lines)

    printed = []
    scale.print_report(results, clouds, 0.4, None, echo=printed.append)
    text = "\n".join(printed)
    for label in ("target >= 20", "oversubscribed hosts: target 0; measured 0",
                  "stuck in BUILD: target 0; measured 0", "spans dropped: target 0; measured 0"):
        assert label in text
    table = tmp_path / "scale.md"
    scale.write_markdown(table, results, clouds, 0.4, None, "scale.py --test")
    assert "| 2 | 3 | 2 |" in table.read_text()
    assert "Spans per boot by service" in table.read_text()


def test_select_destinations_picks_one_candidate_host_in_every_way(scale):
    """run() raises unless each request chose exactly one host (among the candidates)."""
    import select_destinations

    results = select_destinations.run(hosts=300, requests=2, echo=lambda _text: None)
    assert len(results) == 4
    assert all(set(row) == {"untraced", "traced"} for row in results.values())


def test_a_stored_run_gives_back_its_figures_and_each_mode_keeps_its_section(scale, tmp_path):
    """--from-json rebuilds the report from --json's summaries; --markdown replaces only
    its own mode's section, so the embedded and `up` tables live in one file."""
    run = scale.RunResult(hosts=5, boots=10, concurrency=10, active=10, seconds=2.0,
                          cpu_seconds=3.0, latencies_ms=[100.0 + i for i in range(10)],
                          select_ms=4.0, spans_per_boot=150.0)
    back = scale.RunResult.from_summary(run.summary())
    for key in ("boots_per_s", "cpu_ms_per_boot", "cpu_bound_boots_per_s",
                "gil_bound_boots_per_s", "p50_ms", "p99_ms", "select_ms", "spans_per_boot"):
        assert back.summary()[key] == run.summary()[key], key

    table = tmp_path / "scale.md"
    clouds = {5: {"start_s": 1.0, "start_cpu_s": 1.0, "rss_mb": 100.0, "threads": 20,
                  "idle_cpu": 0.1}}
    scale.write_markdown(table, [run], clouds, 0.4, None, "scale.py")
    whole_cast = {5: {"boots": 2, "errors": 0, "latencies_ms": [250.0, 260.0],
                      "cpu_ms": [400.0, 410.0]}}
    scale.write_markdown(table, [back], {5: dict(clouds[5], processes=30)},
                         0.4, None, "scale.py --up", mode="up", whole_cast=whole_cast)
    scale.write_markdown(table, [run], clouds, 0.5, None, "scale.py again")
    text = table.read_text()
    assert text.count("<!-- scale:embedded -->") == 1 and text.count("<!-- scale:up -->") == 1
    assert "scale.py again" in text and "**0.40 s**" not in text.split("<!-- scale:up")[0]
    assert "| 5 | 2 | 255 |" in text  # the whole-cast series: boots, p50


def test_an_up_run_writes_its_own_section_and_mode(scale, tmp_path, capsys):
    """A run's report goes where --markdown and --json say, under its mode: an `up` run
    once wrote its table as the embedded section, without its whole-cast figures."""
    import argparse

    run = scale.RunResult(hosts=5, boots=10, concurrency=10, active=10, seconds=2.0,
                          cpu_seconds=3.0, latencies_ms=[100.0] * 10)
    clouds = {5: {"start_s": 1.0, "start_cpu_s": 1.0, "rss_mb": 100.0, "threads": 17,
                  "processes": 17, "idle_cpu": 0.1}}
    whole_cast = {5: {"boots": 1, "errors": 0, "latencies_ms": [700.0], "cpu_ms": [900.0]}}
    args = argparse.Namespace(markdown=tmp_path / "scale.md", json=tmp_path / "scale.json",
                              plots=None, from_json=None)
    scale.report(args, [run], clouds, 0.4, None, "up", whole_cast, "scale.py --up")
    text = args.markdown.read_text()
    assert "<!-- scale:up -->" in text and "<!-- scale:embedded -->" not in text
    assert "| 5 | 1 | 700 |" in text  # the whole-cast table
    assert json.loads(args.json.read_text())["mode"] == "up"
    assert "measured 0 (worst run)" in capsys.readouterr().out
