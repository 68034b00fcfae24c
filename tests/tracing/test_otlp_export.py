"""With OTEL_EXPORTER_OTLP_ENDPOINT set, spans also leave the process over OTLP/HTTP."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from novalab.tracing.setup import Telemetry


class _Receiver(BaseHTTPRequestHandler):
    requests: list[ExportTraceServiceRequest] = []

    def do_POST(self):  # noqa: N802 - the http.server API
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        type(self).requests.append((self.path, request))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_spans_reach_an_otlp_receiver(monkeypatch):
    server = HTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{server.server_port}")
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_PROTOCOL", raising=False)
        telemetry = Telemetry()
        with telemetry.tracer("nova-api").start_as_current_span("POST /v2.1/servers"):
            with telemetry.tracer("nova-scheduler").start_as_current_span("select"):
                pass
        telemetry.shutdown()
    finally:
        server.shutdown()
    paths = {path for path, _ in _Receiver.requests}
    assert paths == {"/v1/traces"}
    received = {}
    for _, request in _Receiver.requests:
        for resource_spans in request.resource_spans:
            service = next(a.value.string_value for a in resource_spans.resource.attributes
                           if a.key == "service.name")
            for scope in resource_spans.scope_spans:
                received.update({span.name: service for span in scope.spans})
    assert received == {"POST /v2.1/servers": "nova-api", "select": "nova-scheduler"}
    assert telemetry.dropped() == {}
