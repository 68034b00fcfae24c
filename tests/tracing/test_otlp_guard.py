"""A dead or silent OTLP endpoint must not slow the cloud, nor flood its log.

No test here times anything: each waits for an outcome with a generous bound
that only keeps it from hanging. The exporter's own timeout is set far above
those bounds, so a flush or shutdown that waited on the network would miss them.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from novalab.tracing import collect
from novalab.tracing.otlp_guard import OtlpGuard
from novalab.tracing.otlp_json import spans_from_otlp
from novalab.tracing.setup import Telemetry

pytestmark = pytest.mark.e2e  # `novalab boot` in a subprocess

# Far longer than any wait below: the exporter would retry a refused connection
# for about 30 s (1 + 2 + 4 + 8 + 16 s of backoff) and wait this long for an answer.
EXPORTER_TIMEOUT = "120"
BOUND = 20.0  # only against hanging: each awaited outcome normally takes milliseconds


def closed_port() -> int:
    """A loopback port nobody listens on: bound, then closed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class SilentListener:
    """Accepts connections and never answers: a hung Collector."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.accepted = threading.Event()
        self.connections = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections.append(conn)
            self.accepted.set()

    def close(self):
        self.sock.close()
        for conn in self.connections:
            conn.close()


class Receiver(BaseHTTPRequestHandler):
    spans = 0

    def do_POST(self):  # noqa: N802 - the http.server API
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        request = ExportTraceServiceRequest()
        request.ParseFromString(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).spans += sum(len(scope.spans) for rs in request.resource_spans
                                for scope in rs.scope_spans)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args):
        pass


def endpoint(monkeypatch, port: int, timeout: str = EXPORTER_TIMEOUT) -> str:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", timeout)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_PROTOCOL", raising=False)
    return f"http://127.0.0.1:{port}/v1/traces"


def within(call, seconds: float = BOUND) -> bool:
    """Whether ``call`` returned within ``seconds`` (it keeps running if not)."""
    done = threading.Event()
    threading.Thread(target=lambda: (call(), done.set()), daemon=True).start()
    return done.wait(seconds)


def wait_for(condition, seconds: float = BOUND) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def make_spans(telemetry: Telemetry, count: int, prefix: str = "s") -> None:
    tracer = telemetry.tracer("nova-compute")
    for index in range(count):
        with tracer.start_as_current_span(f"{prefix}{index}"):
            pass


def remote_guard(telemetry: Telemetry) -> OtlpGuard:
    [(_name, guard, _processor)] = telemetry._remote
    return guard


def warnings(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_dead_endpoint_flushes_locally_and_warns_once(monkeypatch, caplog):
    url = endpoint(monkeypatch, closed_port())
    telemetry = Telemetry(memory=True, schedule_delay_millis=20)
    make_spans(telemetry, 10, "first")
    assert wait_for(lambda: warnings(caplog)), "the refused connection was never noticed"
    # Several batches while the endpoint is down: still one warning, not one each.
    for round_no in range(3):
        make_spans(telemetry, 10, f"round{round_no}-")
        time.sleep(0.05)
    assert within(telemetry.force_flush), "force_flush waited on the dead endpoint"
    assert len(telemetry.finished_spans()) == 40
    assert within(telemetry.shutdown), "shutdown waited on the dead endpoint"

    [warning] = warnings(caplog)
    assert warning.name == "novalab.tracing.otlp"
    message = warning.getMessage()
    assert url in message and "Connection refused" in message
    assert "in-memory trace" in message
    # The endpoint got none of them; locally nothing is missing.
    assert telemetry.dropped() == {}
    assert telemetry.remote_skipped() == {"otlp": 40}


def test_dead_grpc_endpoint_warns_once(monkeypatch, caplog):
    """The gRPC exporter logs through its base class's module: held back all the same."""
    port = closed_port()
    endpoint(monkeypatch, port)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    telemetry = Telemetry(memory=True, schedule_delay_millis=20)
    make_spans(telemetry, 10)
    assert wait_for(lambda: remote_guard(telemetry)._evidence is not None), "never tried"
    assert within(telemetry.force_flush)
    assert within(telemetry.shutdown)
    assert len(telemetry.finished_spans()) == 10
    assert telemetry.remote_skipped() == {"otlp": 10}
    [warning] = warnings(caplog)
    assert f"127.0.0.1:{port}" in warning.getMessage()
    assert "retrying in" not in warning.getMessage()


def test_silent_endpoint_is_bounded(monkeypatch, caplog, tmp_path):
    listener = SilentListener()
    try:
        url = endpoint(monkeypatch, listener.port)
        path = tmp_path / "spans.jsonl"
        telemetry = Telemetry(memory=True, file_path=path, schedule_delay_millis=20)
        make_spans(telemetry, 25)
        assert listener.accepted.wait(BOUND), "the exporter never connected"
        assert within(telemetry.force_flush), "force_flush waited for the silent endpoint"
        assert within(telemetry.shutdown), "shutdown waited for the silent endpoint"
    finally:
        listener.close()
    assert len(telemetry.finished_spans()) == 25
    written = [json.loads(line) for line in path.read_text().splitlines()]
    assert sum(len(scope["spans"]) for doc in written for rs in doc["resourceSpans"]
               for scope in rs["scopeSpans"]) == 25
    assert telemetry.dropped() == {}
    assert telemetry.remote_skipped() == {"otlp": 25}
    [warning] = warnings(caplog)
    assert url in warning.getMessage() and str(path) in warning.getMessage()


def test_endpoint_back_after_an_outage(monkeypatch, caplog):
    """Probes while it is down stay quiet; when it answers, one info line says so."""
    port = closed_port()
    endpoint(monkeypatch, port, timeout="0.5")  # each probe of the dead port ends quickly
    caplog.set_level(logging.INFO, logger="novalab.tracing.otlp")
    telemetry = Telemetry(memory=True, schedule_delay_millis=20)
    guard = remote_guard(telemetry)
    guard.retry_after, guard.max_retry_after = 0.05, 0.1  # before its first failure
    make_spans(telemetry, 5, "lost")
    assert wait_for(lambda: guard.down)
    assert wait_for(lambda: guard.skipped >= 5)
    probes = guard.skipped
    make_spans(telemetry, 5, "also-lost")
    assert wait_for(lambda: guard.skipped > probes)  # probed again, and failed again

    Receiver.spans = 0
    server = HTTPServer(("127.0.0.1", port), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    ended = 10
    try:
        # The next batch after the backoff probes the endpoint: keep making them.
        deadline = time.monotonic() + BOUND
        while guard.down and time.monotonic() < deadline:
            make_spans(telemetry, 1, "probe")
            ended += 1
            time.sleep(0.02)
        assert not guard.down, "the endpoint's return was never noticed"
        make_spans(telemetry, 7, "sent")
        ended += 7
        telemetry.shutdown()
    finally:
        server.shutdown()
        server.server_close()
    assert Receiver.spans == guard.sent >= 7
    assert telemetry.remote_skipped() == {"otlp": ended - guard.sent}
    assert len(warnings(caplog)) == 1
    back = [r for r in caplog.records if r.levelno == logging.INFO
            and r.name == "novalab.tracing.otlp"]
    assert len(back) == 1 and "answers again" in back[0].getMessage()


class FlakyExporter(SpanExporter):
    """Fails until ``up`` is set; counts the batches that reached it."""

    def __init__(self):
        self.up = False
        self.calls = 0

    def export(self, spans):
        self.calls += 1
        return SpanExportResult.SUCCESS if self.up else SpanExportResult.FAILURE

    def shutdown(self):
        pass


def test_breaker_skips_then_probes_with_doubling_backoff(caplog):
    caplog.set_level(logging.INFO, logger="novalab.tracing.otlp")
    now = [0.0]
    flaky = FlakyExporter()
    guard = OtlpGuard(flaky, "http://collector:4318/v1/traces", retry_after=5,
                      max_retry_after=20, clock=lambda: now[0])
    batch = [None] * 3
    # (time, batches that reached the exporter by then): a probe at 5, 15, 35, 55.
    for when, calls in ((0, 1), (4, 1), (5, 2), (14, 2), (15, 3), (34, 3), (35, 4), (54, 4)):
        now[0] = when
        guard.export(batch)
        assert (flaky.calls, guard.down) == (calls, True), when
    flaky.up = True
    now[0] = 55
    assert guard.export(batch) is SpanExportResult.SUCCESS and not guard.down
    assert (guard.sent, guard.skipped) == (3, 24)
    [down, back] = [r for r in caplog.records if r.name == "novalab.tracing.otlp"]
    assert down.levelno == logging.WARNING and "http://collector:4318" in down.getMessage()
    assert back.levelno == logging.INFO and "24 span(s) were not sent" in back.getMessage()


def test_no_endpoint_no_remote_exporter(monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    telemetry = Telemetry(memory=True)
    make_spans(telemetry, 3)
    telemetry.shutdown()
    assert telemetry.remote_skipped() == {} and telemetry._remote == []


def test_boot_with_dead_endpoint_is_active_complete_and_warns_once(tmp_path):
    """`novalab boot` as a user runs it, with a Collector that is not there."""
    port = closed_port()
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"}
    env.pop("OTEL_EXPORTER_OTLP_TIMEOUT", None)  # the exporter's default, as a user has it
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "novalab.labs.cli", "boot", "--out", str(out), "--state-dir",
         str(tmp_path / "state"), "--no-diagrams"],
        capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    assert "ACTIVE" in result.stderr
    doc = json.loads((out / "trace.json").read_text())
    spans = spans_from_otlp(doc)
    assert spans and not collect.incomplete(spans)
    logged = [line for line in result.stderr.splitlines()
              if " WARNING " in line or " ERROR " in line]
    assert len(logged) == 1, "\n".join(logged)
    assert f"127.0.0.1:{port}" in logged[0] and "novalab.tracing.otlp" in logged[0]
