"""Scale: N compute hosts, M boots, K at a time, on the embedded cloud; what it costs.

For each number of compute hosts (``--hosts``) one traced embedded cloud starts
(foundation scenario, as ``boot_latency.py`` runs it: keystone, nova, glance,
no Neutron, no volume; every host its own private libvirt test hypervisor);
the admin lifts demo's quotas through the quota APIs; then for each total of
boots (``--boots``) ``--concurrency`` clients boot servers, each waiting for
its server to be ACTIVE before it sends the next (a closed loop: at most that
many boots are in flight). A watcher reads the instances' ``vm_state`` straight
from the database every few milliseconds, so no HTTP polling competes.

Per run it prints:

- boots/s (first POST to last ACTIVE) and CPU per boot (the whole process's CPU
  over the run, less the watcher's own, divided by the boots: the cloud, the
  clients and the hosts' heartbeats), and beside boots/s the bounds the CPU
  sets: ``cores / CPU per boot``, and ``1 / CPU per boot`` for one process,
  whose GIL lets it use about one core;
- p50/p99 POST->ACTIVE;
- from the spans in the trace store (``STATE/traces/scale.jsonl``, written by
  a ``BatchSpanProcessor``), per boot: the scheduler's
  ``FilterScheduler.select_destinations`` and ``SchedulerManager.run_instance``
  (the latter includes the wait for the claim lock, which serialises
  scheduling), the nova-conductor's RPC handling (its CONSUMER spans), the SQL
  time (every span with ``db.system.name``), and spans per boot;
- RSS per compute host: the process's RSS divided by the hosts (embedded: one
  process holds the controller and every host), and the marginal figure
  between the smallest and largest cloud;
- oversubscribed hosts (each host's instances' vcpus, RAM and disk against its
  capacity times its allocation ratios), servers stuck in BUILD, servers in
  ERROR, and spans dropped (ended but not handed to the file exporter, and the
  spans ended against the spans found in the file): these must be 0.

The issue's targets are printed beside the measured figures, never asserted,
with the machine's calibration figure (``boot_latency.py``'s loop). ``--plots``
writes PNGs (matplotlib: the ``bench`` extra) and ``--markdown`` a table.

    .venv/bin/python benchmarks/scale.py [--hosts 1,10,100] [--boots 1,10,100,1000]
        [--concurrency 10] [--quick] [--plots docs/perf] [--markdown docs/perf/scale.md]
    .venv/bin/python benchmarks/scale.py --up --hosts 5,20 --boots 10,100 --concurrency 10
    .venv/bin/python benchmarks/scale.py --from-json FILE --plots docs/perf

``--up`` measures the cloud ``novalab up`` starts instead (scale_up.py);
``--from-json`` redraws a stored run's report, table and plots.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # boot_latency, select_destinations

from boot_latency import TEST_NODE, calibration, lift_quotas  # noqa: E402

from novalab.reference.common.credentials import PERSONA_PASSWORD  # noqa: E402
from novalab.reference.deploy.client import CloudClient  # noqa: E402
from novalab.reference.deploy.embedded import CloudConfig, EmbeddedCloud  # noqa: E402
from novalab.tracing.http import http_client  # noqa: E402
from novalab.tracing.setup import Telemetry  # noqa: E402

# Issue 13's targets for this benchmark (printed, never asserted).
TARGET_BOOTS_PER_S = 20.0  # 100 hosts, 1,000 boots, embedded, 2 cores
TARGET_SELECT_MS = 20.0    # select_destinations over 10,000 host states
BOOT_TIMEOUT = 300.0       # a boot not ACTIVE by then counts as stuck
SCHEDULER_SPANS = ("FilterScheduler.select_destinations", "SchedulerManager.run_instance")


@dataclass
class RunResult:
    """One run's figures; ``boots`` is what was asked, ``active`` what got there."""

    hosts: int
    boots: int
    concurrency: int
    active: int = 0
    errors: int = 0
    stuck: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0          # the process's, less the benchmark's watcher
    watcher_cpu_seconds: float = 0.0  # what the watcher itself used
    latencies_ms: list[float] = field(default_factory=list, repr=False)
    select_ms: float = 0.0        # FilterScheduler.select_destinations, mean
    run_instance_ms: float = 0.0  # SchedulerManager.run_instance, mean (lock wait included)
    conductor_ms: float = 0.0     # nova-conductor CONSUMER spans per boot
    db_ms: float = 0.0            # SQL spans per boot, every service
    db_statements: float = 0.0    # SQL spans per boot
    spans_per_boot: float = 0.0
    # Per boot, by service.name: where a boot's spans and SQL are (which service
    # grows with the hosts or the ports).
    spans_by_service: dict[str, float] = field(default_factory=dict)
    db_statements_by_service: dict[str, float] = field(default_factory=dict)
    traces_found: int = 0
    rss_mb: float = 0.0
    oversubscribed: list[str] = field(default_factory=list)
    spans_dropped: int = 0
    cores: int = field(default_factory=lambda: os.cpu_count() or 1)
    stored_percentiles: dict[float, float] = field(default_factory=dict, repr=False)

    @classmethod
    def from_summary(cls, data: dict) -> RunResult:
        """A run back from ``--json``'s figures (its p50/p99, not every latency)."""
        names = {f for f in cls.__dataclass_fields__} - {"latencies_ms", "oversubscribed",
                                                         "stored_percentiles"}
        result = cls(**{k: v for k, v in data.items() if k in names})
        result.oversubscribed = ["(from JSON)"] * int(data.get("oversubscribed_hosts", 0))
        result.stored_percentiles = {0.5: data.get("p50_ms", 0.0),
                                     0.99: data.get("p99_ms", 0.0)}
        return result

    @property
    def boots_per_s(self) -> float:
        return self.active / self.seconds if self.seconds else 0.0

    @property
    def cpu_ms_per_boot(self) -> float:
        return 1000 * self.cpu_seconds / self.boots if self.boots else 0.0

    @property
    def cpu_bound_boots_per_s(self) -> float:
        """What the CPU allows: every core busy, each boot costing what it cost here."""
        return self.cores * 1000 / self.cpu_ms_per_boot if self.cpu_ms_per_boot else 0.0

    @property
    def gil_bound_boots_per_s(self) -> float:
        """What one Python process can do: the GIL lets it use about one core."""
        return 1000 / self.cpu_ms_per_boot if self.cpu_ms_per_boot else 0.0

    def percentile(self, q: float) -> float:
        if not self.latencies_ms and q in self.stored_percentiles:
            return self.stored_percentiles[q]
        ms = sorted(self.latencies_ms)
        return ms[min(len(ms) - 1, int(round(q * (len(ms) - 1))))] if ms else 0.0

    @property
    def rss_per_host_mb(self) -> float:
        return self.rss_mb / self.hosts

    def summary(self) -> dict:
        """The figures a report prints (and the CI test checks are present)."""
        keys = ("hosts", "boots", "concurrency", "active", "errors", "stuck", "seconds",
                "cpu_seconds", "watcher_cpu_seconds", "select_ms", "run_instance_ms",
                "conductor_ms", "db_ms",
                "db_statements", "spans_per_boot", "spans_by_service",
                "db_statements_by_service", "traces_found", "rss_mb",
                "spans_dropped", "cores")
        data = {key: value for key, value in asdict(self).items() if key in keys}
        data.update(boots_per_s=self.boots_per_s, cpu_ms_per_boot=self.cpu_ms_per_boot,
                    cpu_bound_boots_per_s=self.cpu_bound_boots_per_s,
                    gil_bound_boots_per_s=self.gil_bound_boots_per_s,
                    p50_ms=self.percentile(0.5), p99_ms=self.percentile(0.99),
                    rss_per_host_mb=self.rss_per_host_mb,
                    oversubscribed_hosts=len(self.oversubscribed))
        return data


def rss_mb() -> float:
    """This process's resident memory (``VmRSS``), in MB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class ScaleCloud:
    """A traced embedded cloud of ``hosts`` compute hosts and a client logged in as demo."""

    def __init__(self, workdir: Path, hosts: int):
        self.hosts = hosts
        state = workdir / f"hosts-{hosts}"
        state.mkdir(parents=True)
        node = state / "node.xml"
        node.write_text(TEST_NODE.format(memory_kib=64 * 1024 * 1024))
        self.trace_file = state / "traces" / "scale.jsonl"
        # The trace store's file, through a BatchSpanProcessor (as `novalab serve`);
        # nothing kept in memory, so a thousand boots do not measure the GC.
        self.telemetry = Telemetry(enabled=True, memory=False, file_path=self.trace_file,
                                   otlp=False)
        # A file URI gives each host's connection a private test hypervisor.
        config = CloudConfig(state_dir=state, libvirt_uri=f"test://{node}", network=False,
                             computes=hosts)
        started = time.perf_counter()
        cpu = time.process_time()
        self.cloud = EmbeddedCloud(config, self.telemetry).start()
        # The file rotates every 16 MB and keeps 8 segments; a thousand boots write
        # more than that, and every span must be read back: keep every segment.
        for _name, counted in self.telemetry._counted:
            counted.wrapped.keep_segments = 1_000_000
        self.start_seconds = time.perf_counter() - started
        self.start_cpu = time.process_time() - cpu
        self.http = http_client()  # untraced: the client's own work is not the cloud's
        try:
            lift_quotas(self.cloud, "demo")
            self.client = CloudClient(self.cloud.identity_url, self.http)
            self.client.authenticate("demo", PERSONA_PASSWORD, "demo")
            self.flavor = self.client.find_flavor("m1.nano")
            self.image = self.client.find_image("cirros")["id"]
        except BaseException:
            self.http.close()
            self.cloud.stop()
            self.telemetry.shutdown()
            raise
        self.poll = sqlite3.connect(config.db_url.removeprefix("sqlite:///"), timeout=30,
                                    isolation_level=None, check_same_thread=False)
        self._read_upto: dict[int, int] = {}  # inode -> bytes read (rotation keeps inodes)
        self._file_spans = 0  # spans read back from the file, every run so far

    # What run() measures, which the `up` variant (scale_up.py) measures in other processes.
    watcher_in_cloud = True  # the watcher's CPU is in cpu_seconds(): take it out

    def cpu_seconds(self) -> float:
        """CPU used so far by the cloud (here: this whole process)."""
        return time.process_time()

    def rss_mb(self) -> float:
        """The compute hosts' resident memory (here: the process's, controller included)."""
        return rss_mb()

    def wait_idle(self) -> None:
        self.cloud.wait_idle(60.0)

    def capacity(self) -> int:
        """How many more m1.nano servers fit on the hosts: a run never asks for more.

        The default filters check RAM and disk, not vcpus (no CoreFilter, as in
        Newton's defaults), so vcpus x cpu_allocation_ratio is counted here too:
        the oversubscription check would rightly flag a host past it."""
        rows = self.poll.execute(
            "SELECT n.host, n.vcpus * n.cpu_allocation_ratio, "
            "n.memory_mb * n.ram_allocation_ratio, n.local_gb * n.disk_allocation_ratio, "
            "COALESCE(SUM(i.vcpus), 0), COALESCE(SUM(i.memory_mb), 0), "
            "COALESCE(SUM(i.root_gb + COALESCE(i.ephemeral_gb, 0)), 0) "
            "FROM compute_nodes n LEFT JOIN instances i ON i.host = n.host AND i.deleted = 0 "
            "WHERE n.deleted = 0 GROUP BY n.id, n.host").fetchall()
        flavor = self.flavor
        return sum(int(min((cpu - ucpu) // flavor["vcpus"], (ram - uram) // flavor["ram"],
                           (disk - udisk) // max(flavor["disk"], 1)))
                   for _h, cpu, ram, disk, ucpu, uram, udisk in rows)

    def warm(self, concurrency: int = 10) -> RunResult:
        """One boot per host first, not measured: each host's first boot fetches the
        image into its cache (``_base``), as on a fresh real cloud; the runs then
        measure what every later boot costs. The RAM weigher spreads them one a host."""
        return self.run(self.hosts, min(self.hosts, concurrency))

    def run(self, boots: int, concurrency: int, progress=None) -> RunResult:
        result = RunResult(hosts=self.hosts, boots=boots, concurrency=concurrency)
        done: dict[str, threading.Event] = {}
        states: dict[str, str] = {}
        finished: dict[str, float] = {}
        lock = threading.Lock()
        stop = threading.Event()
        watcher_cpu: list[float] = []  # the watcher thread's own CPU, when it ends
        compute = self.client.endpoint("compute")
        headers = {"X-Auth-Token": self.client.token}

        def watch() -> None:
            """Mark servers ACTIVE or ERROR as soon as their row says so.

            Every 2 ms for one boot in flight, less often the more there are (20 ms
            at 100: a latency of seconds needs no finer clock), so the watcher's own
            CPU stays small; it is measured and left out of CPU per boot."""
            while not stop.is_set():
                with lock:
                    pending = [uuid for uuid, event in done.items() if not event.is_set()]
                for chunk in range(0, len(pending), 500):
                    part = pending[chunk:chunk + 500]
                    marks = ",".join("?" * len(part))
                    rows = self.poll.execute(
                        f"SELECT uuid, vm_state FROM instances WHERE uuid IN ({marks}) "
                        "AND vm_state IN ('active', 'error')", part).fetchall()
                    now = time.perf_counter()
                    for uuid, state in rows:
                        states[uuid], finished[uuid] = state, now
                        done[uuid].set()
                time.sleep(min(0.002 * max(1, len(pending)), 0.02))
            watcher_cpu.append(time.thread_time())

        def one(index: int) -> None:
            started = time.perf_counter()
            response = self.http.post(f"{compute}/servers", headers=headers, json={"server": {
                "name": f"scale-{self.hosts}-{boots}-{index}", "flavorRef": self.flavor["id"],
                "imageRef": self.image}})
            if response.status_code != 202:
                with lock:
                    result.errors += 1
                return
            uuid = response.json()["server"]["id"]
            event = threading.Event()
            with lock:
                done[uuid] = event
            if not event.wait(BOOT_TIMEOUT):
                return
            if states[uuid] == "active":
                with lock:
                    result.latencies_ms.append(1000 * (finished[uuid] - started))
            if progress:
                progress()

        watcher = threading.Thread(target=watch, name="scale-watcher", daemon=True)
        watcher.start()
        cpu = self.cpu_seconds()
        started = time.perf_counter()
        try:
            with ThreadPoolExecutor(concurrency, thread_name_prefix="scale-client") as pool:
                list(pool.map(one, range(boots)))
            result.seconds = time.perf_counter() - started
            self.wait_idle()  # every build's tail (its last spans) ends
            cpu = self.cpu_seconds() - cpu
        finally:
            stop.set()
            watcher.join()
        result.watcher_cpu_seconds = watcher_cpu[0] if watcher_cpu else 0.0
        result.cpu_seconds = cpu - (result.watcher_cpu_seconds if self.watcher_in_cloud else 0)
        result.active = sum(1 for uuid in done if states.get(uuid) == "active")
        result.errors += sum(1 for uuid in done if states.get(uuid) == "error")
        result.stuck = self.poll.execute(
            "SELECT COUNT(*) FROM instances WHERE deleted = 0 AND vm_state = 'building'"
        ).fetchone()[0]
        result.rss_mb = self.rss_mb()
        result.oversubscribed = self.oversubscribed()
        self.read_spans(result)
        return result

    def oversubscribed(self) -> list[str]:
        """Hosts whose instances use more than capacity x allocation ratio of vcpu, RAM
        or disk (RAM as the scheduler's RamFilter counts it: the instances' flavors)."""
        rows = self.poll.execute(
            "SELECT n.host, n.vcpus, n.cpu_allocation_ratio, n.memory_mb, "
            "n.ram_allocation_ratio, n.local_gb, n.disk_allocation_ratio, "
            "COALESCE(SUM(i.vcpus), 0), COALESCE(SUM(i.memory_mb), 0), "
            "COALESCE(SUM(i.root_gb + COALESCE(i.ephemeral_gb, 0)), 0) "
            "FROM compute_nodes n LEFT JOIN instances i ON i.host = n.host AND i.deleted = 0 "
            "WHERE n.deleted = 0 GROUP BY n.id, n.host").fetchall()
        over = []
        for host, cpu, cpu_r, ram, ram_r, disk, disk_r, ucpu, uram, udisk in rows:
            if ucpu > cpu * cpu_r or uram > ram * ram_r or udisk > disk * disk_r:
                over.append(f"{host}: vcpu {ucpu}/{cpu}x{cpu_r} ram {uram}/{ram}x{ram_r} "
                            f"disk {udisk}/{disk}x{disk_r}")
        return over

    def read_spans(self, result: RunResult) -> None:
        """Per-boot figures from the run's spans in the trace store's file.

        Only traces holding nova-api's ``POST /v2.1/servers`` are boots (heartbeats
        and periodic reports are traces of their own). Drops: what the exporter was
        not handed, and the spans ended against the spans found in the file.
        """
        # Spans ended before the flush are in the file after it, unless dropped; spans
        # ending meanwhile (heartbeats) may be there too, so count only the former.
        ended = self.telemetry._counter.ended
        self.telemetry.force_flush()
        result.spans_dropped = sum(self.telemetry.dropped().values())
        boots: dict[str, dict] = defaultdict(lambda: defaultdict(float))
        for line in self._new_lines():
            _add_spans(json.loads(line), boots)
        traces = [f for f in boots.values() if f.get("boot")]
        self._file_spans += int(sum(f["spans"] for f in boots.values()))
        # Every span the services ended is in the file, or it was dropped.
        result.spans_dropped = max(result.spans_dropped, ended - self._file_spans)
        set_span_means(result, traces)

    def _new_lines(self):
        """Lines not read yet, from the rotated segments (oldest first) and the file."""
        segments = sorted(self.trace_file.parent.glob(f"{self.trace_file.stem}.*Z.jsonl"))
        for path in [*segments, self.trace_file]:
            with open(path, "rb") as lines:
                inode = os.fstat(lines.fileno()).st_ino
                position = self._read_upto.get(inode, 0)
                lines.seek(position)
                for line in lines:
                    if not line.endswith(b"\n"):
                        break  # still being written: read it next time
                    position += len(line)
                    yield line.decode("utf-8")
                self._read_upto[inode] = position

    def close(self) -> None:
        self.http.close()
        self.cloud.stop()
        self.poll.close()
        self.telemetry.shutdown()


def set_span_means(result: RunResult, traces: list[dict]) -> None:
    """The run's per-boot figures: the mean over its boots' traces (``_add_spans``)."""
    result.traces_found = len(traces)
    if not traces:
        return

    def mean(key: str) -> float:
        return statistics.fmean(f[key] for f in traces)

    result.select_ms = mean(SCHEDULER_SPANS[0])
    result.run_instance_ms = mean(SCHEDULER_SPANS[1])
    result.conductor_ms = mean("conductor")
    result.db_ms = mean("db")
    result.db_statements = mean("db_statements")
    result.spans_per_boot = mean("spans")
    services = sorted({key.split(":", 1)[1] for f in traces for key in f if ":" in key})
    for service in services:
        result.spans_by_service[service] = statistics.fmean(
            f.get(f"spans:{service}", 0.0) for f in traces)
        sql = statistics.fmean(f.get(f"db:{service}", 0.0) for f in traces)
        if sql:
            result.db_statements_by_service[service] = sql


def _add_spans(doc: dict, boots: dict) -> None:
    """Add one OTLP JSON document's spans to the per-trace figures in ``boots``."""
    for resource_spans in doc.get("resourceSpans", ()):
        attributes = resource_spans.get("resource", {}).get("attributes", ())
        service = next((a["value"].get("stringValue") for a in attributes
                        if a["key"] == "service.name"), "")
        for scope in resource_spans.get("scopeSpans", ()):
            for span in scope.get("spans", ()):
                figures = boots[span["traceId"]]
                ms = (int(span["endTimeUnixNano"]) - int(span["startTimeUnixNano"])) / 1e6
                figures["spans"] += 1
                figures[f"spans:{service}"] += 1
                name, kind = span["name"], span.get("kind")
                if service == "nova-api" and name == "POST /v2.1/servers":
                    figures["boot"] = 1
                elif name in SCHEDULER_SPANS:
                    figures[name] += ms
                elif service == "nova-conductor" and kind in (5, "SPAN_KIND_CONSUMER"):
                    figures["conductor"] += ms
                if any(a["key"] == "db.system.name" for a in span.get("attributes", ())):
                    figures["db"] += ms
                    figures["db_statements"] += 1
                    figures[f"db:{service}"] += 1


def run_scale(workdir: Path, hosts_list: list[int], plan: list[tuple[int, int]],
              echo=print, warm: bool = True) -> tuple[list[RunResult], dict[int, dict]]:
    """Every (boots, concurrency) of ``plan`` on a cloud of each size; the results and,
    per size, how the cloud started (seconds, CPU, RSS, idle CPU per second)."""
    results: list[RunResult] = []
    clouds: dict[int, dict] = {}
    for hosts in hosts_list:
        before = rss_mb()
        echo(f"starting an embedded cloud with {hosts} compute hosts ...")
        cloud = ScaleCloud(workdir, hosts)
        try:
            cpu, started = time.process_time(), time.perf_counter()
            time.sleep(2.0)  # idle: what the hosts' heartbeats and periodic work cost
            idle = (time.process_time() - cpu) / (time.perf_counter() - started)
            clouds[hosts] = {"start_s": cloud.start_seconds, "start_cpu_s": cloud.start_cpu,
                             "rss_mb": rss_mb(), "rss_before_mb": before,
                             "threads": threading.active_count(), "idle_cpu": idle}
            echo(f"  started in {cloud.start_seconds:.1f} s ({cloud.start_cpu:.1f} s CPU), "
                 f"RSS {clouds[hosts]['rss_mb']:.0f} MB, {threading.active_count()} threads, "
                 f"idle CPU {idle:.2f} s/s")
            if warm:
                echo(f"  warm-up: one boot per host ({hosts}), not measured ...")
                warmed = cloud.warm()
                clouds[hosts]["warm_up_s"] = warmed.seconds
                echo("    " + one_line(warmed))
            for boots, concurrency in plan:
                room = cloud.capacity()
                if boots > room:
                    echo(f"  skip {boots} boots: {hosts} host(s) have room for {room} more "
                         "m1.nano servers (a run never asks for more than fits)")
                    continue
                echo(f"  {boots} boots, {concurrency} at a time ...")
                count = [0]

                def tick(count=count, boots=boots) -> None:
                    count[0] += 1
                    if boots >= 100 and count[0] % max(boots // 10, 1) == 0:
                        echo(f"    ... {count[0]}/{boots} ACTIVE")

                result = cloud.run(boots, concurrency, progress=tick)
                results.append(result)
                echo("    " + one_line(result))
                echo("    " + by_service_line(result))
        finally:
            cloud.close()
    return results, clouds


def one_line(r: RunResult) -> str:
    return (f"{r.boots_per_s:6.1f} boots/s (CPU bound {r.cpu_bound_boots_per_s:5.1f}), "
            f"CPU/boot {r.cpu_ms_per_boot:6.1f} ms, p50 {r.percentile(0.5):7.1f} ms, "
            f"p99 {r.percentile(0.99):7.1f} ms, select {r.select_ms:5.2f} ms, "
            f"run_instance {r.run_instance_ms:6.1f} ms, conductor {r.conductor_ms:5.1f} ms, "
            f"DB {r.db_ms:5.1f} ms ({r.db_statements:.0f} stmts), "
            f"watcher {r.watcher_cpu_seconds:.1f} s CPU, "
            f"oversubscribed {len(r.oversubscribed)}, stuck {r.stuck}, errors {r.errors}, "
            f"dropped {r.spans_dropped}")


def by_service_line(r: RunResult, top: int = 6) -> str:
    """The services with the most spans per boot, and their SQL statements."""
    ranked = sorted(r.spans_by_service.items(), key=lambda item: -item[1])[:top]
    return "spans (SQL) per boot: " + ", ".join(
        f"{service} {spans:.0f} ({r.db_statements_by_service.get(service, 0):.0f})"
        for service, spans in ranked)


def parse_list(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def print_report(results: list[RunResult], clouds: dict[int, dict], calibration_s: float,
                 select: dict | None, echo=print, mode: str = "embedded",
                 whole_cast: dict | None = None) -> None:
    echo("")
    if mode == "up":
        echo("scale: `novalab up`, a process per service (nova-compute one per host), "
             "RabbitMQ + PostgreSQL on 127.0.0.1; every service of the cloud runs, the "
             "runs boot the foundation request (flavor and image only), each service "
             "traced into its file in STATE/traces")
    else:
        echo("scale: embedded cloud, foundation scenario (keystone, nova, glance; no "
             "Neutron, no volume), traced into the trace store's file, SQLite, memory "
             "broker, libvirt test driver per host")
    echo(f"  machine: a 10M-addition Python loop takes {calibration_s:.2f} s CPU "
         f"(issue 13's targets are for 0.4 s); {os.cpu_count()} cores; load average "
         f"{os.getloadavg()[0]:.1f} at the end")
    if mode == "up":
        echo("  CPU per boot: the deployment's processes' CPU (/proc) over the run / boots "
             "(clients and watcher not included); CPU bound: cores / CPU per boot; "
             "1-core bound: 1 / CPU per boot")
        echo("  RSS per host: the nova-compute processes' RSS, mean; drop: spans of the "
             "boot traces whose parent is missing from the files")
    else:
        echo("  CPU per boot: the whole process's CPU over the run, less the benchmark's "
             "watcher, / boots (cloud, clients, heartbeats); CPU bound: cores / CPU per "
             "boot; GIL bound: 1 / CPU per boot")
        echo("  RSS per host: the process's RSS / hosts (one process holds the controller "
             "and every host)")
    echo("")
    header = (f"  {'hosts':>5} {'boots':>5} {'conc':>4} {'boots/s':>7} {'bound':>6} "
              f"{'CPU/boot':>8} {'p50':>7} {'p99':>7} {'select':>6} {'run_inst':>8} "
              f"{'cond':>6} {'DB':>6} {'stmts':>5} {'spans':>5} {'RSS/host':>8} "
              f"{'over':>4} {'stuck':>5} {'err':>3} {'drop':>4}")
    echo(header)
    for r in results:
        echo(f"  {r.hosts:>5} {r.boots:>5} {r.concurrency:>4} {r.boots_per_s:>7.1f} "
             f"{r.cpu_bound_boots_per_s:>6.1f} {r.cpu_ms_per_boot:>6.1f}ms "
             f"{r.percentile(0.5):>5.0f}ms {r.percentile(0.99):>5.0f}ms {r.select_ms:>4.1f}ms "
             f"{r.run_instance_ms:>6.1f}ms {r.conductor_ms:>4.1f}ms {r.db_ms:>4.1f}ms "
             f"{r.db_statements:>5.0f} {r.spans_per_boot:>5.0f} {r.rss_per_host_mb:>6.1f}MB "
             f"{len(r.oversubscribed):>4} {r.stuck:>5} {r.errors:>3} {r.spans_dropped:>4}")
    echo("  (select: FilterScheduler.select_destinations; run_inst: SchedulerManager."
         "run_instance, claim-lock wait included; cond: nova-conductor's RPC handling; "
         "DB: SQL spans; all per boot, from the spans)")
    for r in results:
        for host in r.oversubscribed[:5]:
            echo(f"  OVERSUBSCRIBED ({r.hosts} hosts, {r.boots} boots): {host}")
    echo("")
    for hosts, info in sorted(clouds.items()):
        count = (f"{info['processes']} processes" if "processes" in info
                 else f"{info['threads']} threads")
        echo(f"  {hosts:>4} hosts: started in {info['start_s']:.1f} s ({info['start_cpu_s']:.1f} s "
             f"CPU), RSS {info['rss_mb']:.0f} MB, {count}, idle CPU "
             f"{info['idle_cpu']:.2f} s/s (heartbeats)")
    if len(clouds) > 1:
        small, large = min(clouds), max(clouds)
        marginal = (clouds[large]["rss_mb"] - clouds[small]["rss_mb"]) / (large - small)
        echo(f"  marginal RSS per compute host ({small} -> {large} hosts): {marginal:.2f} MB")
    echo("")
    echo("targets (issue 13; printed, never asserted):")
    target_runs = [r for r in results if r.hosts >= 100 and r.boots >= 1000]
    best = max(target_runs or results, key=lambda r: (r.hosts, r.boots), default=None)
    if best is not None:
        echo(f"  boots/s, 100 hosts, 1,000 boots: target >= {TARGET_BOOTS_PER_S:.0f}; measured "
             f"{best.boots_per_s:.1f} ({best.hosts} hosts, {best.boots} boots, "
             f"{best.concurrency} at a time), CPU bound {best.cpu_bound_boots_per_s:.1f} "
             f"on {best.cores} cores ({best.cpu_ms_per_boot:.0f} ms CPU a boot), "
             f"{best.gil_bound_boots_per_s:.1f} on the one core a Python process's GIL "
             "lets it use" + (" (the target is the embedded cloud's)" if mode == "up" else ""))
    worst = {key: max((getattr(r, key) if key != "oversubscribed" else len(r.oversubscribed))
                      for r in results) if results else 0
             for key in ("oversubscribed", "stuck", "spans_dropped")}
    echo(f"  oversubscribed hosts: target 0; measured {worst['oversubscribed']} (worst run)")
    echo(f"  stuck in BUILD: target 0; measured {worst['stuck']} (worst run)")
    echo(f"  spans dropped: target 0; measured {worst['spans_dropped']} (worst run)")
    if select:
        classic = next(iter(select.values()))
        echo(f"  select_destinations over 10,000 host states: target <= {TARGET_SELECT_MS:.0f} ms;"
             f" measured {classic['untraced']:.1f} ms untraced, {classic['traced']:.1f} ms "
             "traced (classic); see above for placement's pre-filtering")
    if mode == "up":
        import scale_up

        if whole_cast:
            scale_up.print_up_report(whole_cast, echo)
        else:
            echo(f"  `up`, traced whole-cast boot: target <= "
                 f"{scale_up.TARGET_UP_WHOLE_CAST_MS:.0f} ms; not measured in this run "
                 "(--whole-cast 0)")
    else:
        echo("  `up` over RabbitMQ + PostgreSQL, traced whole-cast boot <= 300 ms: "
             "measured by --up only")


def write_markdown(path: Path, results: list[RunResult], clouds: dict[int, dict],
                   calibration_s: float, select: dict | None, command: str,
                   mode: str = "embedded", whole_cast: dict | None = None) -> None:
    """The numbers as a Markdown table (docs/perf/scale.md embeds it between markers)."""
    one_core = "1-core bound" if mode == "up" else "GIL bound, 1 core"
    rows = [f"| hosts | boots | at a time | boots/s | CPU bound, 2 cores | {one_core} | "
            "CPU/boot (ms) | "
            "p50 (ms) | p99 (ms) | select (ms) | run_instance (ms) | conductor (ms) | "
            "DB (ms) | SQL stmts | spans/boot | RSS/host (MB) | oversubscribed | stuck | "
            "ERROR | spans dropped |",
            "|" + "---:|" * 20]
    for r in results:
        rows.append(
            f"| {r.hosts} | {r.boots} | {r.concurrency} | {r.boots_per_s:.1f} | "
            f"{r.cpu_bound_boots_per_s:.1f} | {r.gil_bound_boots_per_s:.1f} | "
            f"{r.cpu_ms_per_boot:.0f} | "
            f"{r.percentile(0.5):.0f} | {r.percentile(0.99):.0f} | {r.select_ms:.1f} | "
            f"{r.run_instance_ms:.1f} | {r.conductor_ms:.1f} | {r.db_ms:.1f} | "
            f"{r.db_statements:.0f} | {r.spans_per_boot:.0f} | {r.rss_per_host_mb:.2f} | "
            f"{len(r.oversubscribed)} | {r.stuck} | {r.errors} | {r.spans_dropped} |")
    services = sorted({s for r in results for s in r.spans_by_service},
                      key=lambda s: -max(r.spans_by_service.get(s, 0) for r in results))
    if services:
        rows += ["", "Spans per boot by service (SQL statements in brackets):", "",
                 "| hosts | boots | " + " | ".join(services) + " |",
                 "|---:|---:|" + "---:|" * len(services)]
        rows += [f"| {r.hosts} | {r.boots} | " + " | ".join(
            f"{r.spans_by_service.get(s, 0):.0f} ({r.db_statements_by_service.get(s, 0):.0f})"
            for s in services) + " |" for r in results]
    count = "processes" if mode == "up" else "threads"
    rows += ["", f"| hosts | start (s) | start CPU (s) | RSS (MB) | {count} | idle CPU (s/s) |",
             "|---:|---:|---:|---:|---:|---:|"]
    for hosts, info in sorted(clouds.items()):
        rows.append(f"| {hosts} | {info['start_s']:.1f} | {info['start_cpu_s']:.1f} | "
                    f"{info['rss_mb']:.0f} | {info.get(count, info['threads'])} | "
                    f"{info['idle_cpu']:.2f} |")
    if whole_cast:
        import scale_up

        rows += ["", "| hosts | whole-cast boots | p50 POST->ACTIVE (ms) | min (ms) | max (ms) "
                 "| deployment CPU a boot (ms) | ERROR | target (ms) |",
                 "|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for hosts, f in sorted(whole_cast.items()):
            ms = sorted(f["latencies_ms"]) or [0.0]
            rows.append(f"| {hosts} | {len(f['latencies_ms'])} | {statistics.median(ms):.0f} | "
                        f"{ms[0]:.0f} | {ms[-1]:.0f} | {statistics.median(f['cpu_ms'] or [0]):.0f}"
                        f" | {f['errors']} | <= {scale_up.TARGET_UP_WHOLE_CAST_MS:.0f} |")
    if select:
        rows += ["", "| select_destinations, 10,000 host states | untraced (ms) | traced (ms) |",
                 "|---|---:|---:|"]
        rows += [f"| {label} | {row['untraced']:.2f} | {row['traced']:.2f} |"
                 for label, row in select.items()]
    title = ("`novalab up`: a process per service, RabbitMQ + PostgreSQL" if mode == "up"
             else "Embedded cloud: one process, SQLite, memory broker")
    section = (f"<!-- scale:{mode} -->\n## {title}\n\n"
               f"Calibration: a 10M-addition Python loop took **{calibration_s:.2f} s** CPU "
               f"({os.cpu_count()} cores). Command: `{command}`.\n\n" + "\n".join(rows)
               + f"\n<!-- /scale:{mode} -->\n")
    # One section per mode: a run replaces its own mode's section and keeps the other's.
    old = path.read_text() if path.exists() else ""
    begin, end = f"<!-- scale:{mode} -->", f"<!-- /scale:{mode} -->\n"
    if begin in old and end in old:
        text = old[:old.index(begin)] + section + old[old.index(end) + len(end):]
    elif "<!-- scale:" in old:
        text = old.rstrip("\n") + "\n\n" + section
    else:
        text = section
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def write_plots(directory: Path, results: list[RunResult], calibration_s: float,
                mode: str = "embedded") -> list[Path]:
    """cost vs hosts and cost vs concurrency, as PNGs (needs the ``bench`` extra).

    The throughput panels draw both bounds the CPU sets: every core busy
    (``cores / CPU per boot``) and one core (``1 / CPU per boot``, what one
    process's GIL allows). The concurrency plot's x axis names each run, boots
    and boots in flight, so two runs with the same concurrency are two ticks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    prefix = "scale-up-" if mode == "up" else "scale-"
    note = (f"calibration {calibration_s:.2f} s (10M additions); "
            + ("`novalab up` (a process per service, RabbitMQ + PostgreSQL), flavor + image "
               "boots, a port each" if mode == "up" else "foundation scenario, embedded"))

    def panel(ax, xs, series, xlabel, ylabel, title, ticks=None):
        for label, ys in series.items():
            style = "--" if "bound" in label else "-"
            ax.plot(xs, ys, style, marker="o", label=label)
        if ticks:
            ax.set_xticks(xs, ticks, fontsize=8)
        else:
            ax.set_xscale("log")
            ax.set_xticks(xs, [str(x) for x in xs])
            ax.minorticks_off()
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)

    def throughput(runs, cores):
        return {"boots/s": [r.boots_per_s for r in runs],
                f"CPU bound, {cores} cores": [r.cpu_bound_boots_per_s for r in runs],
                "CPU bound, 1 core": [r.gil_bound_boots_per_s for r in runs]}

    # Cost vs hosts: the runs with the most boots done on every cloud size.
    by_hosts: dict[int, RunResult] = {}
    common = set.intersection(*({(r.boots, r.concurrency) for r in results if r.hosts == h}
                                for h in {r.hosts for r in results})) if results else set()
    if common:
        boots, conc = max(common)
        for r in results:
            if (r.boots, r.concurrency) == (boots, conc):
                by_hosts[r.hosts] = r
    if len(by_hosts) > 1:
        xs = sorted(by_hosts)
        runs = [by_hosts[x] for x in xs]
        fig, axes = plt.subplots(1, 3, figsize=(14, 4))
        panel(axes[0], xs, {"CPU per boot": [r.cpu_ms_per_boot for r in runs],
                            "scheduler run_instance": [r.run_instance_ms for r in runs],
                            "select_destinations": [r.select_ms for r in runs],
                            "DB (SQL spans)": [r.db_ms for r in runs],
                            "conductor": [r.conductor_ms for r in runs]},
              "compute hosts", "ms per boot", f"cost vs hosts ({boots} boots, {conc} at a time)")
        panel(axes[1], xs, {"p50": [r.percentile(0.5) for r in runs],
                            "p99": [r.percentile(0.99) for r in runs]},
              "compute hosts", "POST->ACTIVE (ms)", "latency vs hosts")
        panel(axes[2], xs, throughput(runs, runs[0].cores),
              "compute hosts", "boots/s", "throughput vs hosts")
        fig.suptitle(note, fontsize=9)
        fig.tight_layout()
        path = directory / f"{prefix}cost-vs-hosts.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    # Cost vs concurrency: the largest cloud's runs, one tick per run.
    if results:
        largest = max(r.hosts for r in results)
        runs = sorted((r for r in results if r.hosts == largest),
                      key=lambda r: (r.concurrency, r.boots))
        if len(runs) > 1:
            xs = list(range(len(runs)))
            ticks = [f"{r.concurrency} in flight\n{r.boots} boots" for r in runs]
            xlabel = "run: boots in flight, boots in all"
            fig, axes = plt.subplots(1, 3, figsize=(14, 4.4))
            panel(axes[0], xs, {"CPU per boot": [r.cpu_ms_per_boot for r in runs],
                                "scheduler run_instance": [r.run_instance_ms for r in runs],
                                "DB (SQL spans)": [r.db_ms for r in runs],
                                "conductor": [r.conductor_ms for r in runs]},
                  xlabel, "ms per boot", f"cost vs concurrency ({largest} hosts)", ticks)
            panel(axes[1], xs, {"p50": [r.percentile(0.5) for r in runs],
                                "p99": [r.percentile(0.99) for r in runs]},
                  xlabel, "POST->ACTIVE (ms)", "latency vs concurrency", ticks)
            axes[1].set_yscale("log")
            panel(axes[2], xs, throughput(runs, runs[0].cores),
                  xlabel, "boots/s", "throughput vs concurrency", ticks)
            fig.suptitle(note, fontsize=9)
            fig.tight_layout()
            path = directory / f"{prefix}cost-vs-concurrency.png"
            fig.savefig(path, dpi=90)
            plt.close(fig)
            written.append(path)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=parse_list, default=[1, 10, 100],
                        help="compute hosts of each cloud, comma-separated (default 1,10,100)")
    parser.add_argument("--boots", type=parse_list, default=[1, 10, 100, 1000],
                        help="total boots of each run, comma-separated (default 1,10,100,1000)")
    parser.add_argument("--concurrency", type=parse_list, default=[100],
                        help="boots in flight at once (clients), comma-separated; a run per "
                             "(boots, concurrency) with concurrency <= boots (default 100)")
    parser.add_argument("--quick", action="store_true",
                        help="a small run: hosts 1,10, boots 1,10,20, 10 at a time, 1,000 "
                             "host states for select_destinations")
    parser.add_argument("--select-hosts", type=int, default=10_000,
                        help="host states for the select_destinations micro-benchmark "
                             "(0: skip it)")
    parser.add_argument("--no-warm-up", action="store_true",
                        help="measure each host's first boot too (its image download)")
    parser.add_argument("--plots", type=Path, default=None, metavar="DIR",
                        help="write scale-cost-vs-hosts.png and scale-cost-vs-concurrency.png")
    parser.add_argument("--markdown", type=Path, default=None, metavar="FILE",
                        help="write the tables as Markdown")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE",
                        help="write every run's figures as JSON")
    parser.add_argument("--from-json", type=Path, default=None, metavar="FILE",
                        help="run nothing: print the report and write --plots/--markdown "
                             "from a file --json wrote")
    parser.add_argument("--up", action="store_true",
                        help="the cloud `novalab up` starts (a process per service) on "
                             "RabbitMQ and PostgreSQL at 127.0.0.1, instead of the embedded "
                             "one; needs the standard ports free (scale_up.py)")
    parser.add_argument("--whole-cast", type=int, default=10, metavar="N",
                        help="--up: N whole-cast boots one at a time per cloud, for the "
                             "issue's `up` target (0: none)")
    args = parser.parse_args()
    if args.from_json:
        replay(args)
        return
    if args.quick:
        args.hosts, args.boots, args.concurrency = [1, 10], [1, 10, 20], [10]
        args.select_hosts = min(args.select_hosts, 1000)
    logging.basicConfig(level=logging.ERROR)
    plan = sorted({(total, min(total, conc)) for total in args.boots
                   for conc in args.concurrency}, key=lambda p: (p[0], p[1]))
    calibration_s = calibration()
    print(f"machine: a 10M-addition Python loop takes {calibration_s:.2f} s CPU", flush=True)
    select = None
    if args.select_hosts:
        import select_destinations

        select = select_destinations.run(args.select_hosts, 20 if args.quick else 50)
    series = None
    with tempfile.TemporaryDirectory(prefix="novalab-scale-") as tmp:
        if args.up:
            import scale_up

            results, clouds, series = scale_up.run_scale_up(
                Path(tmp), args.hosts, plan, echo=lambda text: print(text, flush=True),
                warm=not args.no_warm_up, whole_cast=args.whole_cast)
        else:
            results, clouds = run_scale(Path(tmp), args.hosts, plan,
                                        echo=lambda text: print(text, flush=True),
                                        warm=not args.no_warm_up)
    mode = "up" if args.up else "embedded"
    command = "benchmarks/scale.py " + " ".join(sys.argv[1:])
    report(args, results, clouds, calibration_s, select, mode, series, command)


def report(args, results: list[RunResult], clouds: dict[int, dict], calibration_s: float,
           select: dict | None, mode: str, series: dict | None, command: str) -> None:
    """Print the report and write what ``args`` asks for (--markdown, --json, --plots):
    one path for a run and for --from-json, so both write the same sections."""
    print_report(results, clouds, calibration_s, select, mode=mode, whole_cast=series)
    if args.markdown:
        write_markdown(args.markdown, results, clouds, calibration_s, select, command,
                       mode=mode, whole_cast=series)
        print(f"wrote {args.markdown}")
    if args.json and not args.from_json:
        args.json.write_text(json.dumps({"calibration_s": calibration_s, "clouds": clouds,
                                         "select_destinations": select, "mode": mode,
                                         "whole_cast": series, "command": command,
                                         "runs": [r.summary() for r in results]}, indent=1))
        print(f"wrote {args.json}")
    if args.plots:
        for path in write_plots(args.plots, results, calibration_s, mode):
            print(f"wrote {path}")


def replay(args) -> None:
    """--from-json: the report, table and plots of a stored run, without running it."""
    data = json.loads(args.from_json.read_text())
    results = [RunResult.from_summary(run) for run in data["runs"]]
    clouds = {int(hosts): info for hosts, info in data["clouds"].items()}
    series = {int(h): f for h, f in (data.get("whole_cast") or {}).items()}
    report(args, results, clouds, data["calibration_s"], data.get("select_destinations"),
           data.get("mode", "embedded"), series,
           data.get("command", f"benchmarks/scale.py (from {args.from_json})"))


if __name__ == "__main__":
    main()
