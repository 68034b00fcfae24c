"""``novalab boot --cloud running``: one traced boot against the cloud ``novalab up`` started.

The same steps as ``boot.boot`` on the embedded cloud, with two differences
that come from the services being other processes: the client's spans go to
its own file (``traces/novalab-client.jsonl``) and over OTLP like every
service's, and the trace is read back from all the processes' files once it is
whole (no span misses its parent, nothing new for a moment), bounded in time.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from novalab.reference.common.credentials import Credentials
from novalab.reference.common.metadata_secret import shared_secret
from novalab.reference.deploy.boot import (
    CLIENT_SERVICE,
    BootOutcome,
    BootRequest,
    client_boot,
)
from novalab.reference.deploy.statedir import StateDir
from novalab.tracing import collect
from novalab.tracing.propagation import context_key


class NotRunning(Exception):
    """No cloud runs in that state directory."""


@dataclass
class RunningBootResult(BootOutcome):
    """What ``boot.BootResult`` says, with the trace as an OTLP JSON document."""

    document: dict = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)

    def spans_by_service(self) -> Counter:
        return Counter(collect.summary(self.document)["services"])


def boot_against_running(state_dir: str | os.PathLike, request: BootRequest,
                         on_change: Callable[[dict], None] | None = None,
                         collect_timeout: float = 15.0) -> RunningBootResult:
    """Boot one server on the running cloud as a user would, and collect its trace."""
    from novalab.tracing.setup import Telemetry

    state_dir = StateDir(state_dir)
    state = state_dir.load()
    if not state or not state.get("os_env") or state.get("stopped_at"):
        raise NotRunning(f"no cloud runs from {state_dir.root}: start one with `novalab up`")
    if state.get("otlp"):
        # The client exports where the services do (Telemetry reads the standard variable).
        os.environ.setdefault("OTEL_EXPORTER_OTLP_ENDPOINT", state["otlp"])
    telemetry = Telemetry(file_path=state_dir.trace_file(CLIENT_SERVICE), otlp=True)
    try:
        server, trace_id, elapsed = client_boot(
            telemetry.tracer(CLIENT_SERVICE, "novalab.client"),
            telemetry.provider(CLIENT_SERVICE), state["os_env"]["OS_AUTH_URL"],
            Credentials.of(state_dir.root).password_for(request.username), request, on_change,
            trace_key=context_key(shared_secret(state_dir.root)))
    finally:
        telemetry.shutdown()  # flushes the client's file before we read the others
    spans = collect.wait_for_trace(state_dir.traces, format(trace_id, "032x"),
                                   timeout=collect_timeout)
    return RunningBootResult(server=server, trace_id=trace_id, elapsed=elapsed,
                             document=collect.to_document(spans),
                             dropped=telemetry.dropped())
