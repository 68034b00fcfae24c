"""write_all: every output next to the trace, deterministic, from a file or from SDK spans."""

from __future__ import annotations

import shutil
from pathlib import Path

from novalab.diagrams.check import check, to_dict
from novalab.diagrams.flows import get_flow
from novalab.diagrams.outputs import NAMES, write_all

EMBEDDED = Path(__file__).parent / "fixtures" / "boot-embedded.otlp.json"
# What the recorded boots match: 1-20, 43, 45-47, 55-58.
MATCHED_TODAY = frozenset([*range(1, 21), 43, 45, 46, 47, 55, 56, 57, 58])


def test_write_all_goldens(tmp_path, golden):
    paths = write_all(EMBEDDED, tmp_path)
    expected = list(NAMES) if shutil.which("dot") else [n for n in NAMES if n != "callgraph.svg"]
    assert [p.name for p in paths] == expected
    assert all(p.parent == tmp_path for p in paths)
    for path in paths:
        if path.name != "callgraph.svg":  # its layout is graphviz's own
            golden(path.name, path.read_text())
    assert "Call graph of trace" in (tmp_path / "callgraph.svg").read_text() or \
        not shutil.which("dot")


def test_outputs_are_deterministic(tmp_path):
    first = {p.name: p.read_bytes() for p in write_all(EMBEDDED, tmp_path / "a")}
    second = {p.name: p.read_bytes() for p in write_all(EMBEDDED, tmp_path / "b")}
    assert first == second


def test_write_all_from_a_boot_in_memory(cloud, tmp_path):
    """What `novalab boot` does: SDK spans straight from the boot, no file in between.

    The cloud grows (Ceph, Neutron, Cinder...), so a live boot must match at least the
    steps the recorded boots match, and all of them in order.
    """
    from novalab.diagrams.load import load_trace
    from novalab.reference.deploy.boot import BootRequest, boot

    result = boot(cloud, BootRequest(name="vm-pictures"))
    assert result.active
    paths = write_all(result.spans, tmp_path)
    assert (tmp_path / "flow-check.txt") in paths
    report = (tmp_path / "flow-check.txt").read_text()
    assert report.rstrip().endswith("out of order")
    trace = load_trace(result.spans)
    assert trace.trace_id == result.trace_id_hex
    doc = to_dict(check(trace, get_flow()))
    matched = {s["number"] for s in doc["steps"] if s["status"] == "matched"}
    assert matched == set(range(1, 59))  # the whole cast runs: every step happens
    assert doc["summary"]["out_of_order"] == 0
    assert "58/58 steps matched, 0 out of order" in report


def test_write_all_draws_each_boot_on_the_table_it_shows(tmp_path):
    """What `novalab boot --topology modern` writes: the modern table's check and diagram,
    unless ``flow`` names a table (the classic recorded boot stays on the 58: the goldens)."""
    import re

    from novalab.diagrams.load import load_trace
    from novalab.reference.deploy.boot import BootRequest, boot
    from novalab.reference.deploy.embedded import CloudConfig, EmbeddedCloud
    from novalab.tracing.setup import Telemetry

    telemetry = Telemetry(memory=True, otlp=False)
    with EmbeddedCloud(CloudConfig(state_dir=tmp_path / "cloud", topology="modern"),
                       telemetry) as cloud:
        result = boot(cloud, BootRequest(name="today"))
        assert result.active, result.server
        trace = load_trace(result.spans)
    telemetry.shutdown()
    modern = get_flow("modern")
    write_all(trace, tmp_path / "today")
    report = (tmp_path / "today" / "flow-check.txt").read_text()
    assert report.startswith(f"flow modern: {modern.title}\n")
    steps = len(modern.steps)
    assert f"{steps}/{steps} steps matched, 0 out of order" in report
    svg = (tmp_path / "today" / "sequence.svg").read_text()
    assert len(re.findall(r'<g class="arrow[ "]', svg)) == steps
    # A table named wins over the one the trace shows.
    write_all(trace, tmp_path / "as-classic", flow="classic")
    assert (tmp_path / "as-classic" / "flow-check.txt").read_text().startswith("flow classic:")
