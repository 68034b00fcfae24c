"""Where a whole-cast boot's CPU goes: a profile of N boots, grouped by component.

Runs the whole-cast scenario of ``benchmarks/boot_latency.py`` (a port and a
1 GB volume) in-process, untraced and/or traced: one cloud per mode, warm-up
boots, then N boots under the profiler. yappi (CPU clock, every thread,
builtins included) is the default; ``--profiler cprofile`` profiles only the
main thread (the client side), which is all cProfile can see. Each function's
self time is put in one component by where its code lives (or, for C
builtins, by name); the table is ms CPU per boot and % of the profiled total.
A traced run also counts the boot's spans by service and kind, and
``--span-cost`` times the SDK's per-span floor with a BatchSpanProcessor.

    .venv/bin/pip install yappi     # not a project dependency
    .venv/bin/python benchmarks/profile_boot.py [--boots 5] [--warmup 1] [--mode both]
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import logging
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from boot_latency import Bench, calibration  # noqa: E402

# (component, test on (module path, function name)); first match wins.
RULES: list[tuple[str, callable]] = [
    ("keystone password hashing (pbkdf2)", lambda m, n: "pbkdf2" in n),
    ("sleeps (time.sleep)", lambda m, n: n in ("sleep", "time.sleep")),
    ("lock/condition waits", lambda m, n: "acquire" in n and "lock" in n.lower()),
    ("SQLite (C: execute/commit/fetch)", lambda m, n: "sqlite3" in n or "/sqlite3/" in m),
    ("SQLAlchemy (core + ORM)", lambda m, n: "/sqlalchemy/" in m),
    ("OpenTelemetry instrumentations", lambda m, n: "/opentelemetry/instrumentation" in m),
    ("OpenTelemetry SDK/API", lambda m, n: "/opentelemetry/" in m),
    ("novalab tracing glue", lambda m, n: "/work/main/tracing/" in m),
    ("Flask/Werkzeug", lambda m, n: "/flask/" in m or "/werkzeug/" in m),
    ("httpx/httpcore client", lambda m, n: any(p in m for p in ("/httpx/", "/httpcore/",
                                                                   "/h11/", "/anyio/"))),
    ("jsonschema", lambda m, n: "/jsonschema" in m or "/referencing/" in m),
    ("JSON encode/decode", lambda m, n: "/json/" in m or "_json" in n or "json." in n),
    ("libvirt test driver", lambda m, n: "libvirt" in m or "libvirt" in n.lower()
     or n.startswith("vir")),
    ("file I/O (open/read/write/fsync/rename)", lambda m, n: any(
        k in n for k in ("io.open", "fsync", "rename", "replace", "_io.", "posix.",
                         "built-in method open", ".write'", ".read'"))),
    ("hashlib/zlib (checksums, ids)", lambda m, n: "hashlib" in n or "_blake2" in n
     or "zlib" in n or "openssl_" in n or "_sha" in n),
    ("Ceph stand-in (reference/ceph)", lambda m, n: "/reference/ceph/" in m),
    ("RPC transport (reference/rpc)", lambda m, n: "/reference/rpc/" in m),
    ("logging", lambda m, n: "/logging/" in m),
    ("threading/queue stdlib", lambda m, n: m.endswith(("/threading.py", "/queue.py"))),
    ("copy/deepcopy", lambda m, n: m.endswith("/copy.py")),
]
SERVICES = ("keystone", "nova", "glance", "neutron", "cinder", "placement", "guest",
            "common", "deploy")
# Inclusive (cumulative) figures for named seams, matched on "path:function".
SEAMS = {
    "keystone check_password": "keystone/core.py:check_password",
    "keystone issue_token": "keystone/core.py:issue_token",
    "keystone validate_token": "keystone/core.py:validate_token",
    "ceph OSD _apply (primary+replica writes)": "ceph/osd.py:_apply",
    "ceph OSD _replicate": "ceph/osd.py:_replicate",
    "ceph Rados.osd_op (client side)": "ceph/rados.py:osd_op",
    "Flask wsgi_app": "flask/app.py:wsgi_app",
    "SQLAlchemy Session.commit": "orm/session.py:commit",
    "json.dumps": "json/__init__.py:dumps",
    "json.loads": "json/__init__.py:loads",
    "SDK Tracer.start_span": "sdk/trace/__init__.py:start_span",
    "SDK _Span.end": "sdk/trace/__init__.py:end",
    "time.sleep (calls only on a CPU clock)": ":sleep",
}


def component(module: str, name: str) -> str:
    for label, test in RULES:
        if test(module, name):
            return label
    for service in SERVICES:
        if f"/reference/{service}/" in module:
            return f"{service} service code"
    if "site-packages/" in module:
        return "other libraries: " + module.split("site-packages/")[1].split("/")[0]
    return "other stdlib/builtins"


def yappi_rows(stats) -> list[tuple[str, str, int, float, float]]:
    """(module, name, calls, self s, inclusive s) for every profiled function."""
    return [(s.module or "", s.full_name if s.builtin else s.name, s.ncall, s.tsub, s.ttot)
            for s in stats]


def cprofile_rows(profile: cProfile.Profile) -> list[tuple[str, str, int, float, float]]:
    rows = []
    for (path, _line, name), (_cc, calls, tottime, cumtime, _callers) in \
            pstats.Stats(profile).stats.items():
        rows.append((path, name, calls, tottime, cumtime))
    return rows


def profile_mode(traced: bool, args, workdir: Path) -> dict:
    bench = Bench(traced, workdir, whole_cast=not args.foundation)
    try:
        for _ in range(args.warmup):
            bench.boot_once()
        spans = None
        if traced:  # one boot's spans, counted before boot_once clears them
            bench.telemetry.clear()
            bench.count += 1
            uuid = bench.client.create_server(f"count-{bench.count}", bench.flavor,
                                              bench.image, **bench.extra)["id"]
            from boot_latency import wait_active
            wait_active(bench.poll, uuid)
            bench.cloud.wait_idle()
            bench.telemetry.force_flush()
            spans = count_spans(bench.telemetry.finished_spans())
            bench.telemetry.clear()
        cpu_total = time.process_time()
        if args.profiler == "yappi":
            import yappi
            yappi.clear_stats()
            yappi.set_clock_type("cpu")
            yappi.start(builtins=True, profile_threads=True)
        else:
            profile = cProfile.Profile(time.thread_time)
            profile.enable()
        samples = [bench.boot_once() for _ in range(args.boots)]
        if args.profiler == "yappi":
            yappi.stop()
            rows = yappi_rows(yappi.get_func_stats())
        else:
            profile.disable()
            rows = cprofile_rows(profile)
        cpu_total = time.process_time() - cpu_total
    finally:
        bench.close()
    return {"rows": rows, "samples": samples, "cpu_total": cpu_total, "spans": spans}


def count_spans(spans) -> dict:
    by_service = collections.Counter()
    by_kind = collections.Counter()
    for span in spans:
        service = span.resource.attributes.get("service.name", "?")
        by_service[service] += 1
        kind = span.kind.name
        if any(key.startswith("db.") for key in span.attributes):
            kind = "SQL"
        by_kind[kind] += 1
    return {"total": len(spans), "service": by_service, "kind": by_kind}


def span_cost(count: int = 20000) -> float:
    """CPU seconds a span: start_as_current_span + 4 attributes + end, batch processor."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Discard(SpanExporter):
        def export(self, spans):
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Discard(), max_queue_size=count * 2))
    tracer = provider.get_tracer("bench")
    for _ in range(1000):  # warm-up
        with tracer.start_as_current_span("warm"):
            pass
    started = time.process_time()
    for index in range(count):
        with tracer.start_as_current_span("op") as span:
            span.set_attribute("rpc.system", "oslo_messaging")
            span.set_attribute("rpc.method", "build_and_run_instance")
            span.set_attribute("messaging.destination.name", "compute.compute-1")
            span.set_attribute("novalab.index", index)
    elapsed = time.process_time() - started
    provider.shutdown()  # the export thread's CPU is in process_time too
    return elapsed / count


def report(label: str, result: dict, boots: int, top: int) -> None:
    rows = result["rows"]
    total = sum(row[3] for row in rows) or 1e-9
    groups = collections.Counter()
    for module, name, _calls, tsub, _ttot in rows:
        groups[component(module, name)] += tsub
    walls = sorted(s[0] * 1000 for s in result["samples"])
    cpus = sorted(s[2] * 1000 for s in result["samples"])
    print(f"\n== {label}: {boots} profiled boots ==")
    print(f"  POST->ACTIVE wall, median {walls[len(walls) // 2]:.1f} ms (profiler on)")
    print(f"  process CPU per boot, median {cpus[len(cpus) // 2]:.1f} ms (profiler on)")
    print(f"  profiled self time per boot: {total * 1000 / boots:.1f} ms")
    print(f"\n  {'component':48} {'ms/boot':>8} {'%':>6}")
    for name, seconds in groups.most_common():
        print(f"  {name:48} {seconds * 1000 / boots:8.2f} {100 * seconds / total:6.1f}")
    print("\n  named seams, inclusive (ms/boot, calls/boot):")
    for seam, pattern in SEAMS.items():
        path, func = pattern.split(":")
        hits = [r for r in rows if r[0].endswith(path) and r[1].split(".")[-1] == func] \
            if path else [r for r in rows if r[1] in ("time.sleep", "sleep")]
        ttot = sum(r[4] for r in hits)
        calls = sum(r[2] for r in hits)
        print(f"    {seam:44} {ttot * 1000 / boots:8.2f} {calls / boots:8.1f}")
    for key, title in ((3, "tottime (self)"), (4, "cumtime (inclusive)")):
        print(f"\n  top {top} by {title}: ms/boot, calls/boot, function")
        for module, name, calls, tsub, ttot in sorted(rows, key=lambda r: -r[key])[:top]:
            where = module.split("site-packages/")[-1].replace("/work/main/", "")
            print(f"    {(tsub if key == 3 else ttot) * 1000 / boots:8.2f} "
                  f"{calls / boots:8.1f}  {name}  ({where})")
    spans = result["spans"]
    if spans:
        print(f"\n  spans in one traced boot: {spans['total']}")
        print("    by service: " + ", ".join(f"{k} {v}" for k, v in
                                            spans["service"].most_common()))
        print("    by kind:    " + ", ".join(f"{k} {v}" for k, v in spans["kind"].most_common()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boots", type=int, default=5, help="profiled boots per mode")
    parser.add_argument("--warmup", type=int, default=1, help="unprofiled boots first")
    parser.add_argument("--mode", choices=("untraced", "traced", "both"), default="both")
    parser.add_argument("--profiler", choices=("yappi", "cprofile"), default="yappi",
                        help="yappi sees every thread; cProfile only the main one")
    parser.add_argument("--top", type=int, default=25, help="functions listed per ranking")
    parser.add_argument("--span-cost", action="store_true",
                        help="also time the SDK's per-span CPU floor (BatchSpanProcessor)")
    parser.add_argument("--foundation", action="store_true",
                        help="profile the foundation scenario (no port, no volume) instead")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    modes = {"untraced": (False,), "traced": (True,), "both": (False, True)}[args.mode]
    scenario = ("foundation embedded boot (no port, no volume)" if args.foundation
                else "whole-cast embedded boot (port + 1 GB volume)")
    print(f"{scenario}, profiler {args.profiler}, CPU clock")
    print(f"  machine: a 10M-addition Python loop takes {calibration():.2f} s CPU")
    with tempfile.TemporaryDirectory(prefix="novalab-profile-") as tmp:
        for traced in modes:
            result = profile_mode(traced, args, Path(tmp))
            report("traced" if traced else "untraced", result, args.boots, args.top)
    if args.span_cost:
        print(f"\nSDK floor: {span_cost() * 1e6:.1f} µs CPU a span "
              "(start_as_current_span + 4 attributes + end, BatchSpanProcessor)")


if __name__ == "__main__":
    main()
