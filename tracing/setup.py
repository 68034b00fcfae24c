"""Tracing set-up: one TracerProvider per service, shared exporters, no lost spans.

OpenStack runs each service as its own process, each with its own ``service.name``.
The embedded cloud runs them all in one process, so :class:`Telemetry` hands every
service its own provider (own resource, own name) while all providers feed the
same span processors: one batch thread per exporter, not one per service.

Where spans go:

* always to a file: an in-memory list that ``novalab boot`` writes as one
  ``trace.json``, and/or an OTLP JSON-lines file for long-running processes;
* to an OTLP endpoint when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set (Jaeger, a
  Collector), honouring ``OTEL_EXPORTER_OTLP_PROTOCOL`` (``grpc`` or the default
  ``http/protobuf``).

The SDK's batch processor drops spans silently once its queue (2,048 by default)
is full; we size the queue for bursts and count what each exporter received
against what the services ended, so a drop is reported instead of hidden.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from novalab.tracing import attributes as attr
from novalab.tracing.otlp_json import OtlpJsonLinesExporter

# Emit the stable HTTP and database conventions (http.request.method, db.system.name,
# db.query.text) rather than the legacy names. Read once, when the first
# instrumentation initialises, so it is set before any service is built.
SEMCONV_OPT_IN = "http,database"

# Large enough for a burst of many boots at once; a boot makes a few hundred spans.
DEFAULT_MAX_QUEUE_SIZE = 65536


class _CountingExporter(SpanExporter):
    """Wraps an exporter and counts the spans handed to it, for drop detection."""

    def __init__(self, wrapped: SpanExporter):
        self.wrapped = wrapped
        self.exported = 0
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            self.exported += len(spans)
        return self.wrapped.export(spans)

    def shutdown(self) -> None:
        self.wrapped.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.wrapped.force_flush(timeout_millis)


class _EndedCounter(SpanProcessor):
    """Counts sampled spans as they end, the reference for drop detection."""

    def __init__(self):
        self.ended = 0
        self._lock = threading.Lock()

    def on_end(self, span: ReadableSpan) -> None:
        if span.context.trace_flags.sampled:
            with self._lock:
                self.ended += 1


def _otlp_exporter_from_env() -> SpanExporter | None:
    if not (
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    ):
        return None
    protocol = os.environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
    )
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    return OTLPSpanExporter()


class Telemetry:
    """The process's tracing hub: providers per service, exporters shared.

    ``enabled=False`` gives no-op providers and tells services to skip the
    instrumentation packages entirely: the untraced baseline of the benchmarks.
    """

    def __init__(
        self,
        *,
        enabled: bool = True,
        memory: bool = False,
        file_path: str | os.PathLike | None = None,
        otlp: bool = True,
        host_name: str | None = None,
        max_queue_size: int = DEFAULT_MAX_QUEUE_SIZE,
        schedule_delay_millis: float = 500,
    ):
        os.environ.setdefault("OTEL_SEMCONV_STABILITY_OPT_IN", SEMCONV_OPT_IN)
        self.enabled = enabled
        self.host_name = host_name or socket.gethostname()
        self._providers: dict[tuple[str, str | None], trace.TracerProvider] = {}
        self._lock = threading.Lock()
        self._counter = _EndedCounter()
        self._processors: list[SpanProcessor] = []
        self._counted: list[tuple[str, _CountingExporter]] = []
        self.memory_exporter: InMemorySpanExporter | None = None
        if not enabled:
            return
        if memory:
            # Appending to a list is cheaper than queueing it: export synchronously.
            self.memory_exporter = InMemorySpanExporter()
            self._add(SimpleSpanProcessor, "memory", self.memory_exporter)
        if file_path:
            self._add_batched("file", OtlpJsonLinesExporter(file_path), max_queue_size,
                              schedule_delay_millis)
        if otlp:
            exporter = _otlp_exporter_from_env()
            if exporter is not None:
                self._add_batched("otlp", exporter, max_queue_size, schedule_delay_millis)

    def _add(self, processor_cls, name, exporter, **kwargs):
        counted = _CountingExporter(exporter)
        self._counted.append((name, counted))
        self._processors.append(processor_cls(counted, **kwargs))

    def _add_batched(self, name, exporter, max_queue_size, schedule_delay_millis):
        self._add(BatchSpanProcessor, name, exporter, max_queue_size=max_queue_size,
                  schedule_delay_millis=schedule_delay_millis,
                  max_export_batch_size=min(512, max_queue_size))

    def provider(self, service_name: str, *, host: str | None = None,
                 **resource_attributes) -> trace.TracerProvider:
        """The provider of ``service_name`` (on ``host``), created on first use.

        Several compute hosts run in one embedded cloud: each is its own
        ``nova-compute`` with its own ``host.name``, as on separate machines.
        """
        key = (service_name, host)
        with self._lock:
            provider = self._providers.get(key)
            if provider is not None:
                return provider
            if not self.enabled:
                provider = trace.NoOpTracerProvider()
            else:
                resource = Resource.create({
                    attr.SERVICE_NAME: service_name,
                    attr.SERVICE_NAMESPACE: "novalab",
                    attr.SERVICE_INSTANCE_ID: str(uuid.uuid4()),
                    attr.HOST_NAME: host or self.host_name,
                    attr.PROCESS_PID: os.getpid(),
                    **resource_attributes,
                })
                provider = TracerProvider(resource=resource)
                provider.add_span_processor(self._counter)
                for processor in self._processors:
                    provider.add_span_processor(processor)
            self._providers[key] = provider
            return provider

    def tracer(self, service_name: str, scope: str = "novalab", *,
               host: str | None = None) -> trace.Tracer:
        return self.provider(service_name, host=host).get_tracer(scope)

    @property
    def services(self) -> list[str]:
        return sorted({name for name, _host in self._providers})

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        ok = True
        for processor in self._processors:
            ok = processor.force_flush(timeout_millis) and ok
        return ok

    def dropped(self) -> dict[str, int]:
        """Spans ended but not handed to each exporter (call after ``force_flush``)."""
        return {name: self._counter.ended - c.exported for name, c in self._counted
                if self._counter.ended != c.exported}

    def finished_spans(self, trace_id: int | None = None) -> list[ReadableSpan]:
        """Spans kept in memory (``memory=True``), optionally of one trace."""
        if self.memory_exporter is None:
            return []
        spans = self.memory_exporter.get_finished_spans()
        if trace_id is not None:
            spans = [s for s in spans if s.context.trace_id == trace_id]
        return list(spans)

    def clear(self) -> None:
        if self.memory_exporter is not None:
            self.memory_exporter.clear()

    def shutdown(self) -> None:
        self.force_flush()
        for processor in self._processors:
            processor.shutdown()
        self._processors.clear()
