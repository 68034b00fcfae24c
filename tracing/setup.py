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
  ``http/protobuf``). That one is *remote*: it may be down or slow, and must
  never slow the cloud (``otlp_guard``). ``force_flush`` waits for the local
  exporters only, ``shutdown`` gives the remote one a few seconds at most.

The SDK's batch processor drops spans silently once its queue (2,048 by default)
is full; we size the queue for bursts and count what each local exporter
received against what the services ended, so a drop is reported instead of
hidden. Spans the endpoint did not get are counted apart (``remote_skipped``).
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
from novalab.tracing.otlp_guard import OtlpGuard, RemoteSpanProcessor
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


def _otlp_exporter_from_env() -> tuple[SpanExporter, str] | None:
    """The OTLP exporter the environment asks for, and the endpoint it sends to.

    Its timeout is the exporter's own (``OTEL_EXPORTER_OTLP_TIMEOUT``, in seconds
    for these exporters, 10 by default); retries and backoff are its own too.
    """
    endpoint = (os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
                or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"))
    if not endpoint:
        return None
    protocol = os.environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
    )
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    exporter = OTLPSpanExporter()
    # The HTTP exporter appends /v1/traces to the base URL: name the URL it really uses.
    return exporter, str(getattr(exporter, "_endpoint", None) or endpoint)


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
        host_ip: Sequence[str] | None = None,
        max_queue_size: int = DEFAULT_MAX_QUEUE_SIZE,
        schedule_delay_millis: float = 500,
    ):
        os.environ.setdefault("OTEL_SEMCONV_STABILITY_OPT_IN", SEMCONV_OPT_IN)
        self.enabled = enabled
        self.host_name = host_name or socket.gethostname()
        # host.ip of every resource: the addresses this process's host is reached at
        # (`novalab service --advertise-address`); None leaves it out.
        self.host_ip = list(host_ip) if host_ip else None
        self._providers: dict[tuple[str, str | None], trace.TracerProvider] = {}
        self._lock = threading.Lock()
        self._counter = _EndedCounter()
        self._processors: list[SpanProcessor] = []
        # The local exporters (memory, file): what "the trace is complete" waits for.
        self._local: list[SpanProcessor] = []
        self._counted: list[tuple[str, _CountingExporter]] = []
        self._remote: list[tuple[str, OtlpGuard, RemoteSpanProcessor]] = []
        self._shut_down = False
        self.memory_exporter: InMemorySpanExporter | None = None
        if not enabled:
            return
        local_names = []
        if memory:
            # Appending to a list is cheaper than queueing it: export synchronously.
            self.memory_exporter = InMemorySpanExporter()
            self._add(SimpleSpanProcessor, "memory", self.memory_exporter)
            local_names.append("the in-memory trace (`novalab boot` writes it to trace.json)")
        if file_path:
            self._add_batched("file", OtlpJsonLinesExporter(file_path), max_queue_size,
                              schedule_delay_millis)
            local_names.append(str(file_path))
        if otlp:
            found = _otlp_exporter_from_env()
            if found is not None:
                exporter, endpoint = found
                guard = OtlpGuard(exporter, endpoint,
                                  local=" and ".join(local_names) or "no local exporter")
                processor = RemoteSpanProcessor(
                    guard, guard, max_queue_size=max_queue_size,
                    schedule_delay_millis=schedule_delay_millis,
                    max_export_batch_size=min(512, max_queue_size))
                self._remote.append(("otlp", guard, processor))
                self._processors.append(processor)

    def _add(self, processor_cls, name, exporter, **kwargs):
        counted = _CountingExporter(exporter)
        self._counted.append((name, counted))
        processor = processor_cls(counted, **kwargs)
        self._processors.append(processor)
        self._local.append(processor)

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
                    **({attr.HOST_IP: self.host_ip} if self.host_ip else {}),
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
        """Hand every ended span to the local exporters (memory, file), and wait for them.

        The remote OTLP exporter is not waited for: its batch thread sends on its
        own schedule, and at ``shutdown``. "The trace is complete" is a question
        about the local copy, and must not depend on the network.
        """
        ok = True
        for processor in self._local:
            ok = processor.force_flush(timeout_millis) and ok
        return ok

    def dropped(self) -> dict[str, int]:
        """Spans ended but not handed to each local exporter (call after ``force_flush``).

        A remote endpoint that is down is not a drop: see :meth:`remote_skipped`.
        """
        return {name: self._counter.ended - c.exported for name, c in self._counted
                if self._counter.ended != c.exported}

    def remote_skipped(self) -> dict[str, int]:
        """Spans the OTLP endpoint did not get: failed, or skipped while it was down.

        After ``shutdown`` this is every ended span the endpoint did not accept,
        those still queued when the shutdown stopped waiting included.
        """
        skipped = {}
        for name, guard, _processor in self._remote:
            count = self._counter.ended - guard.sent if self._shut_down else guard.skipped
            if count:
                skipped[name] = count
        return skipped

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
        """Flush and close the local exporters, then give the remote one a bounded
        time (``otlp_guard.SHUTDOWN_TIMEOUT``) to send what is left."""
        self.force_flush()
        for processor in self._local:
            processor.shutdown()
        for _name, _guard, processor in self._remote:
            processor.shutdown()
        self._processors.clear()
        self._local.clear()
        self._shut_down = True
