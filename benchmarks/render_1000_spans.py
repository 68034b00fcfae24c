"""How long a 1,000-span trace takes to load, check and draw.

The trace is made from the recorded embedded boot
(``tests/diagrams/fixtures/boot-embedded.otlp.json``, 183 spans): copies of
it with fresh span ids, each shifted in time and hung under one root, cut at
exactly 1,000 spans (the latest-starting spans of the last copy are dropped,
so no span loses its parent). Each stage runs three times; the best time is
printed. Run: ``.venv/bin/python benchmarks/render_1000_spans.py [SPANS]``.
"""

from __future__ import annotations

import copy
import json
import sys
import tempfile
import time
from pathlib import Path

from novalab.diagrams import callgraph, jaeger, sequence
from novalab.diagrams.check import check, format_text
from novalab.diagrams.flows import get_flow
from novalab.diagrams.load import load_trace

FIXTURE = Path(__file__).resolve().parents[1] / "tests/diagrams/fixtures/boot-embedded.otlp.json"


def synthesise(spans: int) -> dict:
    """An OTLP JSON document of one trace with exactly ``spans`` spans."""
    base = json.loads(FIXTURE.read_text())
    originals = [s for rs in base["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    first = min(int(s["startTimeUnixNano"]) for s in originals)
    last = max(int(s["endTimeUnixNano"]) for s in originals)
    trace_id = originals[0]["traceId"]
    root = {"traceId": trace_id, "spanId": "b0" * 8, "name": "benchmark", "kind": 1,
            "startTimeUnixNano": str(first - 1), "attributes": [], "status": {}}
    doc = {"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "benchmark"}}]},
        "scopeSpans": [{"scope": {"name": "benchmark"}, "spans": [root]}]}]}
    copies = -(-(spans - 1) // len(originals))
    for n in range(copies):
        shift = n * (last - first + 1_000_000)
        part = copy.deepcopy(base)
        ids = {s["spanId"]: f"{n:04x}{s['spanId'][4:]}" for s in originals}
        for rs in part["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    s["spanId"] = ids[s["spanId"]]
                    s["parentSpanId"] = ids.get(s.get("parentSpanId", ""), root["spanId"])
                    for link in s.get("links", []):
                        link["spanId"] = ids.get(link["spanId"], link["spanId"])
                    for key in ("startTimeUnixNano", "endTimeUnixNano"):
                        s[key] = str(int(s[key]) + shift)
        doc["resourceSpans"].extend(part["resourceSpans"])
    everything = sorted((s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"]
                         for s in ss["spans"]), key=lambda s: int(s["startTimeUnixNano"]))
    keep = {id(s) for s in everything[:spans]}
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            ss["spans"] = [s for s in ss["spans"] if id(s) in keep]
    root["endTimeUnixNano"] = str(max(int(s.get("endTimeUnixNano", 0))
                                      for s in everything[:spans]))
    return doc


def best_of(runs: int, func):
    times, value = [], None
    for _ in range(runs):
        start = time.perf_counter()
        value = func()
        times.append(time.perf_counter() - start)
    return min(times), value


def main(spans: int = 1000) -> None:
    flow = get_flow("classic")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        path.write_text(json.dumps(synthesise(spans)))
        rows = []
        seconds, trace = best_of(3, lambda: load_trace(path))
        rows.append(("load (OTLP JSON file)", seconds))
        seconds, result = best_of(3, lambda: check(trace, flow))
        rows.append(("flow check (rules + causal order)", seconds))
        rows.append(("flow check text", best_of(3, lambda: format_text(result))[0]))
        view = sequence.from_check(result)
        seconds, full = best_of(3, lambda: sequence.from_trace(trace, flow))
        rows.append(("full sequence model", seconds))
        for fmt in sequence.FORMATS:
            rows.append((f"sequence {fmt}", best_of(3, lambda f=fmt: sequence.render(view, f))[0]))
            rows.append((f"full sequence {fmt}",
                         best_of(3, lambda f=fmt: sequence.render(full, f))[0]))
        rows.append(("call graph dot source",
                     best_of(3, lambda: callgraph.render(trace, "dot"))[0]))
        try:
            rows.append(("call graph svg (graphviz dot)",
                         best_of(3, lambda: callgraph.render(trace, "svg"))[0]))
        except Exception as exc:  # dot missing
            rows.append((f"call graph svg: skipped ({type(exc).__name__})", 0.0))
        rows.append(("jaeger export", best_of(3, lambda: jaeger.to_jaeger(trace))[0]))
    print(f"{len(trace)} spans, {len(trace.services)} services; "
          f"{result.summary}; full view {len(full.arrows)} arrows")
    for name, seconds in rows:
        print(f"  {name:<36} {seconds * 1000:9.1f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
