"""A recorded real boot of the whole cast (``novalab boot`` defaults, embedded cloud).

Golden files keep every output of it stable: a rule or renderer change that moves
a step, an arrow or a note shows up here as a diff to accept or fix.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from novalab.diagrams.check import check
from novalab.diagrams.flows import get_flow
from novalab.diagrams.load import load_trace
from novalab.diagrams.outputs import write_all

RECORDED = Path(__file__).parent / "fixtures" / "boot-whole-cast.otlp.json"


def test_recorded_whole_cast_matches_every_step_in_order():
    result = check(load_trace(RECORDED), get_flow())
    assert result.matched == 58
    assert result.out_of_order == 0


def test_recorded_whole_cast_goldens(tmp_path, golden):
    for path in write_all(RECORDED, tmp_path):
        if path.name == "callgraph.svg":  # its layout is graphviz's own
            assert "Call graph of trace" in path.read_text() or not shutil.which("dot")
            continue
        golden(f"whole-cast/{path.name}", path.read_text())
