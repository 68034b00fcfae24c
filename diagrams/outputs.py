"""Everything a trace becomes, written next to it: ``write_all(trace, out_dir)``.

``novalab boot`` calls this after writing ``trace.json`` so a learner finds,
in the same folder, everything on the flow table the trace shows
(``flows.detect``: the 58 classic steps for a classic boot, the modern table for
a boot on ``--topology modern``) unless ``flow`` names one:

=====================  ==========================================================
flow-check.txt         the flow check (matched/missing steps, order, notes)
sequence.svg           the sequence diagram of that table
sequence.html          the same, with span details on hover (self-contained page)
sequence.mmd           Mermaid text
sequence.puml          PlantUML text
callgraph.svg          components coloured by the seed legend (needs graphviz' dot)
trace.jaeger.json      the trace for Jaeger's UI ("JSON File")
=====================  ==========================================================

All outputs are deterministic: the same trace gives the same bytes (no dates
of generation, stable ordering), apart from ``callgraph.svg`` whose layout
belongs to graphviz.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from novalab.diagrams import callgraph, jaeger, sequence
from novalab.diagrams.check import check, format_text
from novalab.diagrams.flows import detect_flow, get_flow
from novalab.diagrams.load import load_trace
from novalab.diagrams.model import Trace

NAMES = ("flow-check.txt", "sequence.svg", "sequence.html", "sequence.mmd", "sequence.puml",
         "callgraph.svg", "trace.jaeger.json")


def write_all(trace: str | os.PathLike | Sequence[Any] | Trace, out_dir: str | os.PathLike,
              flow: str | None = None) -> list[Path]:
    """Write every output for ``trace`` (a file, SDK spans, or a ``Trace``) into ``out_dir``.

    ``flow`` names the table; None projects onto the one the trace shows.

    Returns the paths written, in the order of ``NAMES``. When graphviz' ``dot``
    is not installed the call graph is skipped (its path is left out).
    """
    if not isinstance(trace, Trace):
        trace = load_trace(trace)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    result = check(trace, get_flow(flow or detect_flow(trace)))
    diagram = sequence.from_check(result)
    texts = {
        "flow-check.txt": format_text(result),
        "sequence.svg": sequence.render(diagram, "svg"),
        "sequence.html": sequence.render(diagram, "html"),
        "sequence.mmd": sequence.render(diagram, "mermaid"),
        "sequence.puml": sequence.render(diagram, "plantuml"),
    }
    try:
        texts["callgraph.svg"] = callgraph.render(trace, "svg")
    except Exception as exc:  # graphviz' ExecutableNotFound when `dot` is missing
        if type(exc).__name__ != "ExecutableNotFound":
            raise
    written = []
    for name in NAMES:
        if name == "trace.jaeger.json":
            written.append(jaeger.write_jaeger(trace, out / name))
        elif name in texts:
            path = out / name
            path.write_text(texts[name], encoding="utf-8")
            written.append(path)
    return written
