"""scale.py --up's span reader: segments a busy service prunes stay readable.

The `up` runs themselves need the standard ports, RabbitMQ and PostgreSQL and
minutes per size, so they are run by hand (docs/perf/scale.md); this checks the
one piece whose failure would make the "spans dropped" figure lie.
"""

from __future__ import annotations

import json
import time

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from novalab.tracing.otlp_json import OtlpJsonLinesExporter


@pytest.fixture
def scale_up(load_benchmark):
    return load_benchmark("scale_up")


def span_names(paths) -> set[str]:
    names = set()
    for path in paths:
        for line in path.read_text().splitlines():
            for resource in json.loads(line)["resourceSpans"]:
                for scope in resource["scopeSpans"]:
                    names.update(span["name"] for span in scope["spans"])
    return names


def test_the_keeper_holds_every_segment_a_service_prunes(scale_up, tmp_path):
    traces = tmp_path / "traces"
    traces.mkdir()
    # Every export rotates the file and only the newest segment survives, as a
    # busy neutron-server's oldest do under a long run.
    exporter = OtlpJsonLinesExporter(traces / "neutron-server.jsonl", segment_bytes=1,
                                     keep_segments=1)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    keeper = scale_up.SpanFileKeeper(traces, tmp_path / "kept")
    tracer = provider.get_tracer("test")
    for index in range(6):
        keeper.sweep()  # the thread's sweep, at a known moment
        tracer.start_span(f"span {index}").end()
    provider.shutdown()

    assert span_names(traces.glob("*.jsonl")) < {f"span {i}" for i in range(6)}  # pruned
    assert span_names(keeper.files()) == {f"span {i}" for i in range(6)}


def test_the_keepers_thread_sweeps_until_stopped(scale_up, tmp_path):
    traces = tmp_path / "traces"
    traces.mkdir()
    keeper = scale_up.SpanFileKeeper(traces, tmp_path / "kept", interval=0.01)
    keeper.start()
    (traces / "nova-api.jsonl").write_text("{}\n")
    deadline = time.monotonic() + 30
    while not list(keeper.keep.glob("*.jsonl")) and time.monotonic() < deadline:
        time.sleep(0.01)
    keeper.stop()
    assert not keeper.is_alive()
    assert [p.read_text() for p in keeper.keep.glob("*.jsonl")] == ["{}\n"]
