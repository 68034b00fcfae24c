"""Which flow table a trace shows: ``detect_flow`` and ``flow check`` without ``--flow``.

The flows here are stand-ins registered for one test (``FLOWS`` is patched),
so these tests hold whatever flows the repository registers; the traces are
the recorded embedded boot, or small synthetic ones.
"""

from __future__ import annotations

import copy
import json

import click
import pytest
from click.testing import CliRunner

from novalab.diagrams import flows
from novalab.diagrams.cli import register
from novalab.diagrams.flows import FALLBACK, detect, detect_flow
from novalab.diagrams.flows.model import SYNC, Flow, Lifeline, Step, span_named
from novalab.diagrams.flows.rules import Found
from novalab.diagrams.model import Span, Trace

MARK = "ComputeTaskManager.schedule_and_build_instances"


def _span(span_id: str, name: str, service: str = "nova-conductor", start: int = 0) -> Span:
    return Span("a" * 32, span_id, None, name, "INTERNAL", service, start, start + 10)


def _flow(name: str, steps: dict[int, str], recognise=None) -> Flow:
    """A stand-in flow: step N is matched by a span called ``steps[N]``."""

    def rule(span_name):
        def find(query):
            found = [s for s in query.trace if s.name == span_name]
            return Found(found[0]) if found else None
        return find

    return Flow(name=name, title=f"stand-in {name}",
                lifelines=(Lifeline("A", "service", ("nova-conductor",)),),
                steps=tuple(Step(n, "A", "A", "A -> A", text, SYNC) for n, text in steps.items()),
                rules={n: rule(text) for n, text in steps.items()}, recognise=recognise)


@pytest.fixture
def registry(monkeypatch):
    """``register(flow)``: add a stand-in to ``FLOWS`` for this test only."""
    patched = dict(flows.FLOWS)
    monkeypatch.setattr(flows, "FLOWS", patched)

    def add(flow: Flow) -> Flow:
        patched[flow.name] = lambda: flow
        return flow

    return add


def test_a_recorded_classic_boot_is_classic(embedded_trace):
    name, why = detect(embedded_trace)
    assert name == FALLBACK == "classic"
    assert "fallback" in why


def test_a_flow_recognises_its_trace_by_a_span_only_its_chain_makes(registry):
    registry(_flow("modern-ish", {1: MARK}, recognise=span_named(MARK, "nova-conductor")))
    trace = Trace.of([_span("s1", "POST /v2.1/servers", "nova-api"), _span("s2", MARK)])
    name, why = detect(trace)
    assert name == "modern-ish"
    assert MARK in why and "nova-conductor" in why and "s2" in why


def test_the_same_name_from_another_service_is_not_evidence(registry):
    registry(_flow("modern-ish", {1: MARK}, recognise=span_named(MARK, "nova-conductor")))
    trace = Trace.of([_span("s1", MARK, service="nova-scheduler")])
    assert detect_flow(trace) == "classic"


def test_without_a_recogniser_a_flow_is_never_picked(registry):
    # A span no registered flow recognises (the real modern flow recognises MARK).
    registry(_flow("by-name-only", {1: "ByName.only"}))
    assert detect_flow(Trace.of([_span("s1", "ByName.only")])) == "classic"


def test_when_two_recognise_a_trace_the_larger_share_of_matched_steps_wins(registry):
    registry(_flow("half", {1: MARK, 2: "Never.happened"}, recognise=span_named(MARK)))
    registry(_flow("whole", {1: MARK, 2: "Shelve.it"}, recognise=span_named("Shelve.it")))
    trace = Trace.of([_span("s1", MARK), _span("s2", "Shelve.it", start=20)])
    name, why = detect(trace)
    assert name == "whole"
    assert "100%" in why and "half" in why and "50%" in why


def test_equal_shares_go_to_the_flow_registered_first(registry):
    registry(_flow("first", {1: MARK}, recognise=span_named(MARK)))
    registry(_flow("second", {1: MARK}, recognise=span_named(MARK)))
    assert detect_flow(Trace.of([_span("s1", MARK)])) == "first"


# -- the command -------------------------------------------------------------------------------


@click.group()
def novalab():
    """Stand-in for the `novalab` group of labs/cli.py."""


register(novalab)


def _with_span(doc: dict, name: str, service: str) -> dict:
    """The recorded boot with one more span (of a service of its own) in its trace."""
    doc = copy.deepcopy(doc)
    first = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    doc["resourceSpans"].append({
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
        "scopeSpans": [{"scope": {"name": "test"}, "spans": [{
            "traceId": first["traceId"], "spanId": "0123456789abcdef",
            "parentSpanId": first["spanId"], "name": name, "kind": 1,
            "startTimeUnixNano": first["startTimeUnixNano"],
            "endTimeUnixNano": first["startTimeUnixNano"], "attributes": [], "status": {}}]}]})
    return doc


def test_flow_check_picks_the_table_the_trace_shows(registry, embedded_doc, tmp_path):
    registry(_flow("modern-ish", {1: MARK}, recognise=span_named(MARK, "nova-conductor")))
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(_with_span(embedded_doc, MARK, "nova-conductor")))
    result = CliRunner().invoke(novalab, ["flow", "check", str(path)])
    assert result.output.startswith("flow modern-ish: stand-in modern-ish\n"
                                    f"picked from the trace: span {MARK!r} of nova-conductor")
    assert result.exit_code == 0 and "1/1 steps matched" in result.output
    doc = json.loads(CliRunner().invoke(novalab, ["flow", "check", str(path), "--format",
                                                  "json"]).stdout)
    assert doc["flow"] == "modern-ish" and MARK in doc["picked"]


def test_flow_named_on_the_command_line_wins(registry, embedded_doc, tmp_path):
    registry(_flow("modern-ish", {1: MARK}, recognise=span_named(MARK, "nova-conductor")))
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(_with_span(embedded_doc, MARK, "nova-conductor")))
    result = CliRunner().invoke(novalab, ["flow", "check", str(path), "--flow", "classic"])
    assert result.output.startswith("flow classic: ")
    assert "picked from the trace" not in result.output
    doc = json.loads(CliRunner().invoke(novalab, ["flow", "check", str(path), "--flow",
                                                  "classic", "--format", "json"]).stdout)
    assert doc["flow"] == "classic" and "picked" not in doc


def test_an_unknown_flow_is_refused(tmp_path, embedded_doc):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(embedded_doc))
    result = CliRunner().invoke(novalab, ["flow", "check", str(path), "--flow", "nope"])
    assert result.exit_code == 2 and "Invalid value for '--flow': 'nope'" in result.output
