"""``select_destinations`` over 10,000 host states: the filter scheduler's own cost.

The real ``FilterScheduler.select_destinations`` of ``reference/nova/scheduler``
(the default filters RamFilter, DiskFilter, ComputeFilter, ImagePropertiesFilter
and the RAMWeigher, from ``FilterSchedulerConf``'s defaults) is timed on
in-memory ``HostState`` objects: the host manager's database read is replaced
by a function returning them, so what is timed is filter + weigh + pick. Hosts
differ in free RAM and disk; a few are down or disabled, so every filter has
work to do. Three ways, ms per request (one m1.nano instance):

- **classic** (Newton, and novalab's classic topology): every host state goes
  through every filter and the weigher;
- **modern, as novalab passes candidates**: placement's allocation candidates
  (``max_placement_results``, 1,000 by default upstream) come in as
  ``alloc_reqs_by_rp_uuid``, and ``_schedule`` keeps the host states whose
  provider is among them before filtering (all 10,000 states still built);
- **modern, as upstream loads them**: since Ocata the host manager builds only
  the candidates' states (``get_host_states_by_uuids``), so filter + weigh
  sees at most ``max_placement_results`` hosts. Placement's own SQL for the
  candidates is not in this figure (it runs in placement-api, in the database).

Each is timed untraced (a no-op tracer, as ``Telemetry(enabled=False)``) and
traced (the SDK's span with its ``filter`` and ``weigh`` events, which name
every host passed and rejected). The claim in placement is a stub that accepts
(the HTTP round trip is not the scheduler's CPU).

Target (issue 13): <= 20 ms per request over 10,000 host states. Printed, never
asserted.

    .venv/bin/python benchmarks/select_destinations.py [--hosts 10000] [--requests 50]
"""

from __future__ import annotations

import argparse
import copy
import random
import statistics
import time

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import NoOpTracer

from novalab.reference.nova.compute.utils import compute_node_uuid
from novalab.reference.nova.scheduler.filter_scheduler import FilterScheduler
from novalab.reference.nova.scheduler.host_manager import HostManager, HostState

TARGET_MS = 20.0
MAX_PLACEMENT_RESULTS = 1000  # upstream's [scheduler] max_placement_results default

FLAVOR = {"memory_mb": 64, "vcpus": 1, "root_gb": 1, "ephemeral_gb": 0}


class _Discard(SpanExporter):
    def export(self, spans) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class _AcceptingPlacement:
    """Placement's claim, accepted without a round trip (not the scheduler's CPU)."""

    def claim_resources(self, *args) -> bool:
        return True

    def delete_allocation_for_instance(self, *args) -> None:
        pass


def host_states(count: int, seed: int = 13) -> list[HostState]:
    """``count`` compute nodes of 16 cores, 64 GB and 500 GB, variously filled;
    one in 200 down, one in 500 disabled."""
    rng = random.Random(seed)
    states = []
    for index in range(1, count + 1):
        used_ram = rng.randrange(0, 60_000)
        used_disk = rng.randrange(0, 480)
        states.append(HostState(
            host=f"compute-{index}", nodename=f"compute-{index}",
            total_usable_ram_mb=65536, free_ram_mb=65536 - used_ram,
            total_usable_disk_gb=500, free_disk_gb=500 - used_disk,
            vcpus_total=16, vcpus_used=rng.randrange(0, 64), num_instances=rng.randrange(0, 40),
            supported_instances=[["x86_64", "qemu", "hvm"]],
            service_up=index % 200 != 0, service_disabled=index % 500 == 0))
    return states


def spec(index: int) -> dict:
    return {"flavor": dict(FLAVOR), "image": {"properties": {}}, "num_instances": 1,
            "instance_uuids": [f"00000000-0000-4000-8000-{index:012d}"],
            "project_id": "demo", "user_id": "demo"}


class _StatesFrom(HostManager):
    """The real host manager (filters, weighers, refresh) with its database read
    replaced by fresh copies of prepared states, as each request reads them anew."""

    def __init__(self, states: list[HostState]):
        super().__init__(db=None, tracer=NoOpTracer(), conf_path=None)
        self.states = states

    def get_all_host_states(self, context) -> list[HostState]:
        return [copy.copy(state) for state in self.states]


def time_requests(states: list[HostState], requests: int, traced: bool,
                  candidates: int | None = None, load_only_candidates: bool = False
                  ) -> list[float]:
    """ms per ``select_destinations`` call, ``requests`` calls."""
    if traced:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_Discard()))
        tracer = provider.get_tracer("bench")
    else:
        tracer = NoOpTracer()
    rng = random.Random(7)
    alloc = None
    if candidates is not None:
        chosen = rng.sample(states, min(candidates, len(states)))
        alloc = {compute_node_uuid(h.nodename): [{"allocations": {}}] for h in chosen}
        if load_only_candidates:
            states = chosen
    manager = _StatesFrom(states)
    scheduler = FilterScheduler(manager, tracer,
                                placement_client=_AcceptingPlacement() if alloc else None)
    times = []
    for index in range(requests):
        # The copies a request would read from the database are not the scheduler's
        # work here: made before the clock starts.
        prepared = manager.get_all_host_states(None)
        manager.get_all_host_states = lambda context, prepared=prepared: prepared
        started = time.perf_counter()
        chosen = scheduler.select_destinations(None, spec(index), alloc)  # spans: @upstream
        times.append(1000 * (time.perf_counter() - started))
        if len(chosen) != 1 or (alloc and compute_node_uuid(chosen[0]["nodename"]) not in alloc):
            raise RuntimeError(f"select_destinations chose {chosen}, not one candidate host")
    return times


def run(hosts: int = 10_000, requests: int = 50, echo=print) -> dict[str, dict[str, float]]:
    """Median ms per request for each way and mode; printed as it goes."""
    states = host_states(hosts)
    ways = [("classic: all host states filtered and weighed", {}),
            (f"modern, novalab: {MAX_PLACEMENT_RESULTS} candidates passed in, all states built",
             {"candidates": MAX_PLACEMENT_RESULTS}),
            (f"modern, upstream: only the {MAX_PLACEMENT_RESULTS} candidates' states",
             {"candidates": MAX_PLACEMENT_RESULTS, "load_only_candidates": True}),
            ("modern, upstream: 10 candidates (a narrow request)",
             {"candidates": 10, "load_only_candidates": True})]
    results: dict[str, dict[str, float]] = {}
    echo(f"select_destinations over {hosts} host states, {requests} requests each "
         f"(target <= {TARGET_MS:.0f} ms per request)")
    for label, kwargs in ways:
        row = {}
        for traced in (False, True):
            times = time_requests(states, requests, traced, **kwargs)
            row["traced" if traced else "untraced"] = statistics.median(times)
        results[label] = row
        echo(f"  {label:<70} untraced {row['untraced']:7.2f} ms   traced "
             f"{row['traced']:7.2f} ms")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=50)
    args = parser.parse_args()
    run(args.hosts, args.requests)


if __name__ == "__main__":
    main()
