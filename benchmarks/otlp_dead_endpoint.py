"""What a dead OTLP endpoint costs a boot: no endpoint vs one nobody listens on.

Each boot is ``reference.deploy.boot.boot`` as ``novalab boot`` runs it: POST,
poll to ACTIVE, then wait until the trace is complete (``collect_trace``, which
flushes the exporters in a loop). Both modes trace into memory; the second also
has ``OTEL_EXPORTER_OTLP_ENDPOINT`` pointing at a loopback port that was bound
and closed, so every connection is refused. Boots alternate between the two
clouds so machine noise hits both alike. Before ``otlp_guard`` each boot of the
second kind waited for the exporter's retries (about 45 s for ``novalab boot``).

Target: dead/none <= 1.05 (a few percent). Printed, never asserted.

    .venv/bin/python benchmarks/otlp_dead_endpoint.py [--boots 20] [--warmup 3] [--whole-cast]
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import statistics
import tempfile
import time
from pathlib import Path

from boot_latency import calibration, start_cloud, summary

from novalab.reference.deploy.boot import BootRequest, boot
from novalab.tracing.setup import Telemetry

MODES = ("none", "dead")


def closed_port() -> int:
    """A loopback port nobody listens on: bound, then closed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class CountWarnings(logging.Handler):
    """Counts the warnings a run logs: the guard should say one per dead endpoint."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(f"{record.name}: {record.getMessage()[:160]}")


class Bench:
    """One embedded cloud whose telemetry has no endpoint, or a dead one."""

    def __init__(self, mode: str, workdir: Path, whole_cast: bool, dead_url: str):
        self.mode = mode
        # The exporter reads the endpoint when Telemetry builds it.
        os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
        if mode == "dead":
            os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = dead_url
        self.telemetry = Telemetry(memory=True)
        os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
        self.cloud = start_cloud(self.telemetry, workdir, mode, whole_cast)
        self.request = BootRequest(volume_size=1 if whole_cast else None)
        self.count = 0

    def boot_once(self) -> tuple[float, float]:
        """(wall, CPU) seconds from POST to a complete trace in memory."""
        self.count += 1
        self.request.name = f"{self.mode}-{self.count}"
        cpu = time.process_time()
        started = time.perf_counter()
        result = boot(self.cloud, self.request)
        wall = time.perf_counter() - started
        cpu = time.process_time() - cpu
        if not result.active:
            raise RuntimeError(f"{self.request.name} ended {result.server.get('status')}")
        self.telemetry.clear()  # as `novalab boot`: written, then let go
        return wall, cpu

    def close(self) -> float:
        """Stop the cloud; the seconds ``Telemetry.shutdown`` took."""
        self.cloud.stop()
        started = time.perf_counter()
        self.telemetry.shutdown()
        took = time.perf_counter() - started
        print(f"  {self.mode:4}  shutdown {took * 1000:6.1f} ms  dropped "
              f"{self.telemetry.dropped()}  remote skipped {self.telemetry.remote_skipped()}")
        return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boots", type=int, default=20, help="measured boots per mode")
    parser.add_argument("--warmup", type=int, default=3,
                        help="boots per cloud before measuring (caches, first imports)")
    parser.add_argument("--whole-cast", action="store_true",
                        help="boot with a port and a 1 GB volume, as `novalab boot` does "
                             "(one cloud at a time, four rounds)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    warnings = CountWarnings()
    logging.getLogger().addHandler(warnings)
    for name in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
                 "OTEL_EXPORTER_OTLP_TIMEOUT"):
        os.environ.pop(name, None)
    dead_url = f"http://127.0.0.1:{closed_port()}"
    results: dict[str, tuple[list[float], list[float]]] = {m: ([], []) for m in MODES}

    def record(mode, sample):
        for series, value in zip(results[mode], sample, strict=True):
            series.append(value)

    with tempfile.TemporaryDirectory(prefix="novalab-bench-") as tmp:
        if args.whole_cast:
            # One cloud at a time on test:///default; alternate which mode goes first.
            for round_no in range(4):
                for mode in (MODES if round_no % 2 else MODES[::-1]):
                    bench = Bench(mode, Path(tmp), True, dead_url)
                    try:
                        for index in range(args.warmup + args.boots // 4):
                            sample = bench.boot_once()
                            if index >= args.warmup:
                                record(mode, sample)
                    finally:
                        bench.close()
        else:
            benches = {mode: Bench(mode, Path(tmp), False, dead_url) for mode in MODES}
            try:
                for index in range(args.warmup + args.boots):
                    for mode in (MODES if index % 2 else MODES[::-1]):
                        sample = benches[mode].boot_once()
                        if index >= args.warmup:
                            record(mode, sample)
            finally:
                for bench in benches.values():
                    bench.close()
    report(args, results, dead_url, warnings.lines)


def report(args, results, dead_url: str, warnings: list[str]) -> None:
    scenario = "whole cast (port + volume)" if args.whole_cast else "foundation"
    print(f"\nembedded boot incl. trace collection, {scenario} scenario, "
          f"{len(results['none'][0])} boots per mode, alternating")
    print(f"  machine: a 10M-addition Python loop takes {calibration():.2f} s CPU")
    for mode, label in (("none", "no endpoint"), ("dead", f"dead {dead_url}")):
        wall, cpu = results[mode]
        print(f"  {label:28} wall {summary(wall)}")
        print(f"  {'':28} CPU  {summary(cpu)}")
    ratio = statistics.median(results["dead"][0]) / statistics.median(results["none"][0])
    cpu_ratio = statistics.median(results["dead"][1]) / statistics.median(results["none"][1])
    print(f"\ndead/none ratio, wall: {ratio:.3f}  CPU: {cpu_ratio:.3f}  (target <= 1.05)")
    print(f"warnings logged: {len(warnings)} (one per dead-endpoint cloud expected)")
    for line in warnings:
        print(f"  {line}")


if __name__ == "__main__":
    main()
