"""Keep a dead or slow OTLP endpoint from costing the cloud anything.

Spans always go to a local exporter (the in-memory list ``novalab boot`` writes
as ``trace.json``, or the state directory's JSON-lines file); the OTLP endpoint
(Jaeger, a Collector) is an extra that may be down. What the OTLP exporters of
opentelemetry-python 1.45 already do, and we use as they are:

* one ``export`` call, retries included, is bounded by the exporter's timeout:
  its ``timeout`` argument, else ``OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`` or
  ``OTEL_EXPORTER_OTLP_TIMEOUT`` (read as *seconds* by these exporters, where
  the specification says milliseconds), else 10 s;
* inside that bound they retry connection errors and 429/502/503/504 with
  exponential backoff (1, 2, 4, 8 s, jittered), and stop waiting once the
  exporter is shut down.

What they do not do, and this module adds (so only this is written by hand):

* remember that the endpoint is down. Each new batch starts its retries afresh
  and logs a warning per retry and an error per batch: one boot printed about
  24 lines. :class:`OtlpGuard` is a circuit breaker: after a failure it skips
  exports for a backoff period (counting the spans it skips, so the batch
  thread keeps draining its queue), logs one warning when the endpoint goes
  down and one info line when it answers again;
* bound the batch processor. The SDK's ``BatchSpanProcessor.force_flush``
  exports on the caller's thread and ignores its timeout, and ``shutdown``
  waits up to 30 s for the worker (upstream issues #4555 and #4568).
  :class:`RemoteSpanProcessor` bounds both.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

logger = logging.getLogger("novalab.tracing.otlp")

# After a failed export, skip the endpoint this long, doubling per failed retry up to
# the maximum: a Collector restarted under a long-running `novalab serve` is found
# again within a minute, and a dead one costs one attempt a minute.
RETRY_AFTER = 5.0
MAX_RETRY_AFTER = 60.0
# How long shutdown gives the remote exporter to send what is left. Local spans are
# flushed before, and never wait on this.
SHUTDOWN_TIMEOUT = 2.0
# After giving up on the endpoint, how long shutdown lets the batch thread skip
# what is still queued, so that the skipped count is complete.
_DRAIN_WAIT = 0.25


class _Background:
    """A call running on a daemon thread, to be waited for with a bound.

    A call blocked on the network then finishes, or times out, on its own
    thread, and never keeps the process from exiting.
    """

    def __init__(self, call: Callable[[], object]):
        self.result: object = None
        self.done = threading.Event()
        threading.Thread(target=self._run, args=(call,), name="novalab-otlp-bounded",
                         daemon=True).start()

    def _run(self, call):
        try:
            self.result = call()
        finally:
            self.done.set()

    def wait(self, seconds: float, unless: Callable[[], bool] = lambda: False) -> bool:
        """True if the call has returned (and did not return False) within ``seconds``;
        stops waiting early once ``unless()`` is true."""
        deadline = time.monotonic() + seconds
        while not self.done.wait(min(0.02, max(deadline - time.monotonic(), 0.0))):
            if unless() or time.monotonic() >= deadline:
                return False
        return self.result is not False


def _innermost(error: BaseException) -> BaseException:
    """The root cause: requests wraps urllib3's MaxRetryError, which wraps the OSError."""
    seen = set()
    while id(error) not in seen:
        seen.add(id(error))
        inner = getattr(error, "reason", None)
        if not isinstance(inner, BaseException) and error.args:
            inner = error.args[0]
        if not isinstance(inner, BaseException):
            break
        error = inner
    return error


def describe(record_or_error: logging.LogRecord | BaseException | None) -> str:
    """A short reason from an exporter's log record or exception."""
    if record_or_error is None:
        return "the export failed"
    if isinstance(record_or_error, BaseException):
        error = _innermost(record_or_error)
        return (str(error) or type(error).__name__).rstrip(".")
    args = record_or_error.args if isinstance(record_or_error.args, tuple) else ()
    errors = [a for a in args if isinstance(a, BaseException)]
    if errors:
        return describe(errors[0])
    # The exporter's own plan ("retrying in 0.95s") is not ours: the guard stops asking.
    return re.sub(r", retrying in [\d.]+s", "", record_or_error.getMessage()).rstrip(".")


class OtlpGuard(SpanExporter):
    """A circuit breaker around a remote span exporter.

    Closed (the endpoint is believed up): each batch goes to the exporter.
    After a failure, open: batches are skipped and counted for ``retry_after``
    seconds, then one batch probes the endpoint; each failed probe doubles the
    wait, up to ``max_retry_after``. The exporter's own warnings and errors,
    logged while it exports for us, are held back: the guard says it once.
    """

    def __init__(self, exporter: SpanExporter, endpoint: str, *,
                 local: str = "the local exporters", retry_after: float = RETRY_AFTER,
                 max_retry_after: float = MAX_RETRY_AFTER,
                 clock: Callable[[], float] = time.monotonic):
        self.exporter = exporter
        self.endpoint = endpoint
        self.local = local
        self.retry_after = retry_after
        self.max_retry_after = max_retry_after
        self.clock = clock
        self.sent = 0  # spans in batches the endpoint accepted
        self.skipped = 0  # spans in batches that failed, or were skipped while it was down
        self._lock = threading.Lock()
        self._down = False
        self._down_skipped = 0  # ``skipped`` when the endpoint went down
        self._backoff = retry_after
        self._retry_at = 0.0
        self._closed = False
        self._exporter_closed = False
        self._exporting: int | None = None  # the thread inside exporter.export
        self._export_started = 0.0
        self._evidence: logging.LogRecord | None = None
        # The exporter logs through its own modules' loggers (the gRPC one through
        # its base class's): hold back their records, but only our thread's.
        self._loggers = [logging.getLogger(cls.__module__) for cls in type(exporter).__mro__
                         if cls.__module__.startswith("opentelemetry.exporter")]
        for each in self._loggers:
            each.addFilter(self._hold_back)

    @property
    def down(self) -> bool:
        """True from the first failure until an export succeeds again."""
        return self._down

    def grace(self, limit: float) -> float:
        """How long a shutdown should still wait for the endpoint: none once it is
        down, and an export already hanging counts against ``limit``."""
        with self._lock:
            if self._down or self._closed:
                return 0.0
            if self._exporting is not None:
                return max(0.0, self._export_started + limit - self.clock())
            return limit

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            if self._closed or (self._down and self.clock() < self._retry_at):
                self.skipped += len(spans)
                return SpanExportResult.FAILURE
            probing = self._down
            self._exporting = threading.get_ident()
            self._export_started = self.clock()
            self._evidence = None
        error: BaseException | None = None
        try:
            result = self.exporter.export(spans)
        except Exception as exc:  # an exporter must not kill the batch thread
            result, error = SpanExportResult.FAILURE, exc
        finally:
            with self._lock:
                self._exporting = None
                elapsed = self.clock() - self._export_started
                evidence = self._evidence
        if result is SpanExportResult.SUCCESS:
            with self._lock:
                self.sent += len(spans)
            self._back_up()
        else:
            self._went_down(f"{describe(error or evidence)} (after {elapsed:.1f} s)")
            with self._lock:
                self.skipped += len(spans)  # after going down: "not sent while down" counts it
                if probing:
                    self._backoff = min(self._backoff * 2, self.max_retry_after)
                self._retry_at = self.clock() + self._backoff
        self._detach_when_done()
        return result

    def _hold_back(self, record: logging.LogRecord) -> bool:
        """Logging filter: keep the exporter's warnings about our export to ourselves."""
        if record.levelno < logging.WARNING or record.thread != self._exporting:
            return True
        if self._closed:
            return False  # given up on: "shutdown in progress, aborting retry"
        with self._lock:
            if self._evidence is None:
                self._evidence = record
        # A connection error (refused, reset, timed out) comes with its exception: say
        # so at its first retry, not when the retries run out. A 503 may well pass on
        # the next try; it counts only if the whole export fails.
        if isinstance(record.args, tuple) and any(isinstance(a, BaseException)
                                                  for a in record.args):
            self._went_down(describe(record))
        return False

    def _went_down(self, reason: str) -> None:
        with self._lock:
            if self._down or self._closed:
                return
            self._down = True
            self._down_skipped = self.skipped
            self._backoff = self.retry_after
            self._retry_at = self.clock() + self._backoff
        logger.warning("OTLP endpoint %s is not taking spans: %s. Spans still go to %s; "
                       "not sending to the endpoint for now (retried after %g s, then up to "
                       "every %g s; one line will say when it is back).",
                       self.endpoint, reason, self.local, self.retry_after,
                       self.max_retry_after)

    def _back_up(self) -> None:
        with self._lock:
            if not self._down:
                return
            self._down = False
            missed = self.skipped - self._down_skipped
            self._backoff = self.retry_after
        logger.info("OTLP endpoint %s answers again; %d span(s) were not sent to it while "
                    "it was down.", self.endpoint, missed)

    def abandon(self, reason: str | None = None) -> None:
        """Stop using the endpoint: skip every later batch, cut the exporter's retries short.

        Shutting the exporter down wakes it from a backoff wait; a request
        already on the wire ends with its own timeout, on the batch thread.
        """
        evidence = self._evidence if self._exporting is not None else None
        if evidence is not None:  # what the exporter said about the export in progress
            reason = describe(evidence)
        if reason:
            self._went_down(reason)
        with self._lock:
            self._closed = True
        self._close_exporter()

    def _close_exporter(self) -> None:
        with self._lock:
            if self._exporter_closed:
                return
            self._exporter_closed = True
        self.exporter.shutdown()
        self._detach_when_done()

    def _detach_when_done(self) -> None:
        # The filters stay until the last export we started has returned: a
        # request left hanging by a bounded shutdown still logs when it fails.
        with self._lock:
            if not self._closed or self._exporting is not None or not self._loggers:
                return
            loggers, self._loggers = self._loggers, []
        for each in loggers:
            each.removeFilter(self._hold_back)

    def shutdown(self) -> None:
        with self._lock:
            self._closed = True
        self._close_exporter()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True  # nothing is buffered here; the processor holds the queue


class RemoteSpanProcessor(BatchSpanProcessor):
    """The SDK's batch processor, with a flush and a shutdown that cannot hang.

    ``force_flush`` waits at most ``shutdown_timeout`` and returns False at once
    while the endpoint is down; ``shutdown`` gives the endpoint at most
    ``shutdown_timeout`` to take what is queued, and none once it is known down.
    What was not sent is counted by the guard.
    """

    def __init__(self, exporter: SpanExporter, guard: OtlpGuard, *,
                 shutdown_timeout: float = SHUTDOWN_TIMEOUT, **kwargs):
        super().__init__(exporter, **kwargs)
        self.guard = guard
        self.shutdown_timeout = shutdown_timeout
        self._closing = False

    def force_flush(self, timeout_millis: int | None = None) -> bool:
        if self._closing or self.guard.down:
            return False
        limit = self.shutdown_timeout
        if timeout_millis is not None:
            limit = min(limit, timeout_millis / 1000)
        return _Background(super().force_flush).wait(limit)

    def shutdown(self) -> None:
        if self._closing:
            return
        self._closing = True
        budget = self.guard.grace(self.shutdown_timeout)
        closing = None
        if budget > 0:
            closing = _Background(super().shutdown)
            # A last batch may be what finds the endpoint down: stop waiting then.
            if closing.wait(budget, unless=lambda: self.guard.down):
                return
            reason = f"it did not take the last spans within {budget:.1f} s of shutdown"
        else:  # known down (then this says nothing), or an export hangs already
            reason = f"an export got no answer within {self.shutdown_timeout:.0f} s"
        self.guard.abandon(reason)
        # The batch thread now skips what is queued (and counts it); a request still
        # on the wire keeps it busy until that request's own timeout.
        (closing or _Background(super().shutdown)).wait(_DRAIN_WAIT)
