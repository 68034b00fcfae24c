"""scale.py's ``--up`` mode: the cloud ``novalab up`` starts, one process per service.

The benchmark starts the cloud as a user would (``novalab up --computes N`` in
a subprocess) on the machine's RabbitMQ, in a virtual host of its own when
``rabbitmqctl`` may make one, and on PostgreSQL, in a database of its own that
``up`` creates and the benchmark drops. ``novalab down`` stops it, always; any
pid of the deployment still alive after that is killed by its id.

What differs from the embedded runs (the same ``ScaleCloud.run`` measures both):

- CPU per boot is the deployment's processes' CPU (``/proc/PID/stat``,
  utime + stime) over the run, / boots. The clients and the watcher are in the
  benchmark's process and are not counted.
- RSS per compute host is the mean RSS of the ``nova-compute`` processes.
- The watcher reads ``vm_state`` from PostgreSQL.
- Spans come from every process's file in ``STATE/traces``. The exporters'
  drop counters live in the services' processes, so "dropped" here counts the
  spans of the boot traces whose parent is missing from the files. A busy
  neutron-server rotates its file every half minute and prunes its oldest
  segments, so a ``SpanFileKeeper`` hard-links every span file as it appears:
  a pruned segment stays readable, and "dropped" counts only the exporters'
  losses.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from collections import defaultdict
from pathlib import Path

import psycopg
import sqlalchemy
from scale import (
    RunResult,
    ScaleCloud,
    _add_spans,
    by_service_line,
    one_line,
    set_span_means,
)

from novalab.reference.common.credentials import PERSONA_PASSWORD, Credentials
from novalab.reference.common.wiring import STANDARD_PORTS
from novalab.reference.deploy import health
from novalab.reference.deploy.boot import BootRequest, server_extra
from novalab.reference.deploy.client import CloudClient
from novalab.reference.deploy.statedir import StateDir
from novalab.tracing.http import http_client

AMQP_URL = os.environ.get("NOVALAB_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
PG_ADMIN_URL = os.environ.get("NOVALAB_POSTGRES_URL",
                              "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
NOVALAB = [sys.executable, "-m", "novalab.reference.deploy.commands"]
TARGET_UP_WHOLE_CAST_MS = 300.0  # issue 13: `up`, traced whole-cast boot
TICK = os.sysconf("SC_CLK_TCK")


class SpanFileKeeper(threading.Thread):
    """Keep every span file the cloud writes until the benchmark has read it.

    Each process rotates its file (renames it, same inode) and deletes its oldest
    segments (tracing/otlp_json.py). Every ``interval`` this thread hard-links each
    ``*.jsonl`` whose inode it has not seen into ``keep/<inode>.jsonl``: the link
    keeps the bytes after the writer's unlink, for no copy and no parse. A file
    is pruned only after eight newer ones of its process, so none goes unseen.
    """

    def __init__(self, traces: Path, keep: Path, interval: float = 0.25):
        super().__init__(name="span-file-keeper", daemon=True)
        self.traces, self.keep, self.interval = traces, keep, interval
        self.keep.mkdir(parents=True, exist_ok=True)
        self._seen: set[int] = set()
        self._lock = threading.Lock()
        self.error: OSError | None = None
        self._stopping = threading.Event()

    def sweep(self) -> None:
        with self._lock:  # the thread and files() both sweep
            for path in self.traces.glob("*.jsonl"):
                try:
                    if path.stat().st_ino not in self._seen:
                        self._keep(path)
                except FileNotFoundError:
                    continue  # renamed or pruned meanwhile: the next sweep finds it
                except OSError as error:  # no hard links here: the figures would lie
                    self.error = error

    def _keep(self, path: Path) -> None:
        """Link ``path`` under its inode. The inode is read from the link itself: a
        rotation between a stat and a link would file the new live file under the
        old segment's inode, and that segment would never be read."""
        staging = self.keep / ".staging"
        staging.unlink(missing_ok=True)
        os.link(path, staging)
        inode = staging.stat().st_ino
        if inode in self._seen:
            staging.unlink()
        else:
            staging.replace(self.keep / f"{inode}.jsonl")
            self._seen.add(inode)

    def files(self) -> list[Path]:
        self.sweep()
        if self.error is not None:
            raise RuntimeError(f"cannot keep the span files in {self.keep}: {self.error}")
        return sorted(self.keep.glob("*.jsonl"))

    def run(self) -> None:
        while not self._stopping.wait(self.interval):
            self.sweep()

    def stop(self) -> None:
        self._stopping.set()
        self.join(timeout=5)


class PortsBusy(Exception):
    """A standard port is taken: `up` serves on the standard ports only."""


def busy_ports() -> dict[str, int]:
    import socket

    busy = {}
    for name, port in STANDARD_PORTS.items():
        with socket.socket() as sock:
            sock.settimeout(1)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                busy[name] = port
    return busy


def proc_cpu(pid: int) -> float:
    """utime + stime of ``pid`` in seconds (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def proc_rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class _PgPoll:
    """The watcher's plain connection, with sqlite3's ``?`` placeholders (scale.py's SQL)."""

    def __init__(self, url: str):
        self.conn = psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"),
                                    autocommit=True)

    def execute(self, sql: str, params=()):
        return self.conn.execute(sql.replace("?", "%s"), list(params))

    def close(self) -> None:
        self.conn.close()


def _rabbitmqctl(*args: str) -> bool:
    if shutil.which("rabbitmqctl") is None:
        return False
    try:
        return subprocess.run(["rabbitmqctl", "-q", *args], capture_output=True,
                              timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _autocommit(statement: str) -> None:
    engine = sqlalchemy.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(sqlalchemy.text(statement))
    finally:
        engine.dispose()


class UpScaleCloud(ScaleCloud):
    """``novalab up --computes hosts`` on RabbitMQ + PostgreSQL, and a client as demo.

    Use as a context manager, or call ``close()``: it stops the cloud, drops the
    database and the virtual host, and kills any of the deployment's pids left.
    """

    watcher_in_cloud = False  # the watcher runs in the benchmark, not in the cloud

    def __init__(self, workdir: Path, hosts: int, echo=print, timeout: float = 180.0):
        busy = busy_ports()
        if busy:
            raise PortsBusy("standard ports in use, `novalab up` cannot serve on them: "
                            + ", ".join(f"{n} {p}" for n, p in busy.items()))
        self.hosts = hosts
        self.echo = echo
        self.name = f"novalab_scale_{uuid.uuid4().hex[:8]}"
        self.state_dir = workdir / f"up-{hosts}"
        self.state = StateDir(self.state_dir)
        self.traces = self.state_dir / "traces"
        self.keeper = SpanFileKeeper(self.traces, self.state_dir / "traces-kept")
        self.db_url = sqlalchemy.engine.make_url(PG_ADMIN_URL).set(
            database=self.name).render_as_string(hide_password=False)
        self.vhost = self.name if (_rabbitmqctl("add_vhost", self.name) and _rabbitmqctl(
            "set_permissions", "-p", self.name,
            urllib.parse.urlsplit(AMQP_URL).username or "guest", ".*", ".*", ".*")) else None
        self.transport = f"{AMQP_URL.rstrip('/')}/{self.vhost}" if self.vhost else AMQP_URL
        if not self.vhost:
            echo("  (no virtual host of our own: rabbitmqctl missing or refused; sharing /)")
        self.poll = self.http = None
        self._pids: dict[str, int] = {}
        self._read_upto: dict[int, int] = {}
        self._orphans = 0
        try:
            self.keeper.start()
            self._up(timeout)
            self._login()
        except BaseException:
            self.close()
            raise

    def _up(self, timeout: float) -> None:
        started = time.perf_counter()
        command = [*NOVALAB, "up", "--computes", str(self.hosts), "--transport",
                   self.transport, "--db", self.db_url, "--state-dir", str(self.state_dir),
                   "--web-port", "0", "--timeout", "120"]
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout
                                + 30 * self.hosts, stdin=subprocess.DEVNULL)
        self._pids = self.pids()  # before raising: close() stops what did start
        if result.returncode != 0:
            raise RuntimeError(f"novalab up failed ({result.returncode}):\n"
                               f"{result.stderr[-3000:]}")
        self.start_seconds = time.perf_counter() - started
        self.start_cpu = sum(proc_cpu(pid) for pid in self._pids.values())
        self.record = json.loads((self.state_dir / "state.json").read_text())

    def _login(self) -> None:
        self.http = http_client()
        env = self.record["os_env"]
        admin = CloudClient(env["OS_AUTH_URL"], self.http)
        admin.authenticate("admin", Credentials.of(self.state_dir).admin, "admin")
        self.client = CloudClient(env["OS_AUTH_URL"], self.http)
        self.client.authenticate("demo", PERSONA_PASSWORD, "demo")
        headers = {"X-Auth-Token": admin.token}
        pid = self.client.project_id
        for service, path, key, values in (
                ("compute", "os-quota-sets", "quota_set",
                 {"instances": -1, "cores": -1, "ram": -1}),
                ("volumev3", "os-quota-sets", "quota_set", {"volumes": -1, "gigabytes": -1}),
                ("network", "v2.0/quotas", "quota", {"port": -1})):
            if service in admin.catalog:
                self.http.put(f"{admin.endpoint(service)}/{path}/{pid}", headers=headers,
                              json={key: values}).raise_for_status()
        self.flavor = self.client.find_flavor("m1.nano")
        self.image = self.client.find_image("cirros")["id"]
        self.poll = _PgPoll(self.db_url)

    # The deployment's processes -------------------------------------------------------

    def pids(self) -> dict[str, int]:
        pids = {}
        for path in self.state.pid_files():
            with contextlib.suppress(OSError, ValueError):
                pids[path.name.removesuffix(".pid")] = int(path.read_text())
        return pids

    def cpu_seconds(self) -> float:
        return sum(proc_cpu(pid) for pid in self._pids.values())

    def compute_pids(self) -> list[int]:
        return [pid for unit, pid in self._pids.items() if unit.startswith("nova-compute-")]

    def rss_mb(self) -> float:
        """The nova-compute processes' RSS together (RunResult divides by the hosts)."""
        return sum(proc_rss_mb(pid) for pid in self.compute_pids())

    def total_rss_mb(self) -> float:
        return sum(proc_rss_mb(pid) for pid in self._pids.values())

    def wait_idle(self, tail: float = 1.5) -> None:
        """``tail`` seconds: a build's last spans are out once the services' batch
        processors have run (every 0.5 s). Not "until the files stop growing": with
        20 hosts the heartbeats' spans keep them growing, and the wait (and the idle
        CPU counted in it) would run to any timeout."""
        time.sleep(tail)

    # Spans ------------------------------------------------------------------------------

    def _new_lines(self):
        """Every process's new lines, from the keeper's links (one per file, by inode)."""
        for path in self.keeper.files():
            with open(path, "rb") as lines:
                inode = os.fstat(lines.fileno()).st_ino
                position = self._read_upto.get(inode, 0)
                lines.seek(position)
                for line in lines:
                    if not line.endswith(b"\n"):
                        break
                    position += len(line)
                    yield line.decode("utf-8")
                self._read_upto[inode] = position

    def read_spans(self, result: RunResult) -> None:
        """Per-boot figures from every process's file; drops as spans missing a parent."""
        self.wait_idle()
        boots: dict[str, dict] = defaultdict(lambda: defaultdict(float))
        ids: dict[str, set[str]] = defaultdict(set)
        parents: dict[str, set[str]] = defaultdict(set)
        for line in self._new_lines():
            doc = json.loads(line)
            _add_spans(doc, boots)
            for resource_spans in doc.get("resourceSpans", ()):
                for scope in resource_spans.get("scopeSpans", ()):
                    for span in scope.get("spans", ()):
                        ids[span["traceId"]].add(span["spanId"])
                        if span.get("parentSpanId"):
                            parents[span["traceId"]].add(span["parentSpanId"])
        traces = {t: f for t, f in boots.items() if f.get("boot")}
        # The client is untraced: nova-api's SERVER span is the root, so every parent
        # named in a boot's trace must be in the files.
        result.spans_dropped = sum(len(parents[t] - ids[t]) for t in traces)
        set_span_means(result, list(traces.values()))

    # The issue's `up` target -----------------------------------------------------------

    def whole_cast_series(self, boots: int) -> dict:
        """Boots one after the other with a port and a 1 GB volume (as `novalab boot`),
        POST->ACTIVE as the watcher sees it; every service traced (the client not)."""
        latencies, cpu = [], []
        extra = server_extra(BootRequest(volume_size=1), self.image)
        compute = self.client.endpoint("compute")
        headers = {"X-Auth-Token": self.client.token}
        errors = 0
        for index in range(boots):
            before = self.cpu_seconds()
            started = time.perf_counter()
            response = self.http.post(f"{compute}/servers", headers=headers, json={"server": {
                "name": f"whole-cast-{index}", "flavorRef": self.flavor["id"],
                "imageRef": self.image, **extra}})
            response.raise_for_status()
            server = response.json()["server"]["id"]
            state = None
            deadline = time.perf_counter() + 120
            while time.perf_counter() < deadline:
                row = self.poll.execute("SELECT vm_state FROM instances WHERE uuid = ?",
                                        (server,)).fetchone()
                state = row[0] if row else None
                if state in ("active", "error"):
                    break
                time.sleep(0.002)
            if state == "active":
                latencies.append(1000 * (time.perf_counter() - started))
            else:
                errors += 1
            self.wait_idle(1.0)
            cpu.append(1000 * (self.cpu_seconds() - before))
        return {"boots": boots, "errors": errors, "latencies_ms": latencies,
                "cpu_ms": cpu}

    # Stop and clean up -------------------------------------------------------------------

    def close(self) -> None:
        """`novalab down`; kill by pid whatever of the deployment outlived it; drop the
        database and the virtual host. Each step runs whatever the one before did."""
        try:
            self.keeper.stop()
            shutil.rmtree(self.keeper.keep, ignore_errors=True)  # links: the cloud's bytes
            if self.http is not None:
                self.http.close()
            if self.poll is not None:
                self.poll.close()
        finally:
            try:
                known = {**self._pids, **self.pids()}
                if self.state_dir.exists():
                    subprocess.run([*NOVALAB, "down", "--state-dir", str(self.state_dir)],
                                   capture_output=True, text=True, timeout=120,
                                   stdin=subprocess.DEVNULL)
                for unit, pid in known.items():
                    if health.alive(pid) and health.is_service_process(pid, unit):
                        self.echo(f"  killing {unit} (pid {pid}), left after `novalab down`")
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, 9)
            finally:
                with contextlib.suppress(Exception):
                    _autocommit(f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)")
                if self.vhost:
                    _rabbitmqctl("delete_vhost", self.vhost)
                    _rabbitmqctl("delete_vhost", f"{self.vhost}_cell1")


def run_scale_up(workdir: Path, hosts_list: list[int], plan: list[tuple[int, int]],
                 echo=print, warm: bool = True, whole_cast: int = 10
                 ) -> tuple[list[RunResult], dict[int, dict], dict[int, dict]]:
    """scale.run_scale for `up`: the runs, per size how the cloud started, and per size
    the whole-cast series (the issue's `up` target), measured after the runs."""
    results: list[RunResult] = []
    clouds: dict[int, dict] = {}
    series: dict[int, dict] = {}
    for hosts in hosts_list:
        echo(f"starting `novalab up --computes {hosts}` (RabbitMQ + PostgreSQL) ...")
        cloud = UpScaleCloud(workdir, hosts, echo=echo)
        try:
            cpu, started = cloud.cpu_seconds(), time.perf_counter()
            time.sleep(5.0)  # idle: heartbeats and periodic work
            idle = (cloud.cpu_seconds() - cpu) / (time.perf_counter() - started)
            clouds[hosts] = {"start_s": cloud.start_seconds, "start_cpu_s": cloud.start_cpu,
                             "rss_mb": cloud.total_rss_mb(),
                             "compute_rss_mb": cloud.rss_mb() / hosts,
                             "threads": len(cloud._pids), "idle_cpu": idle,
                             "processes": len(cloud._pids)}
            echo(f"  up in {cloud.start_seconds:.0f} s, {len(cloud._pids)} processes, "
                 f"RSS {clouds[hosts]['rss_mb']:.0f} MB together "
                 f"({clouds[hosts]['compute_rss_mb']:.0f} MB a nova-compute), "
                 f"idle CPU {idle:.2f} s/s")
            if warm:
                echo(f"  warm-up: one boot per host ({hosts}), not measured ...")
                echo("    " + one_line(cloud.warm()))
            for boots, concurrency in plan:
                room = cloud.capacity()
                if boots > room:
                    echo(f"  skip {boots} boots: room for {room} more m1.nano servers")
                    continue
                echo(f"  {boots} boots, {concurrency} at a time ...")
                result = cloud.run(boots, concurrency)
                results.append(result)
                echo("    " + one_line(result))
                echo("    " + by_service_line(result))
            if whole_cast:
                echo(f"  whole cast: {whole_cast} boots one at a time (port + 1 GB volume) ...")
                series[hosts] = cloud.whole_cast_series(whole_cast)
                echo("    " + whole_cast_line(series[hosts]))
        finally:
            cloud.close()
            left = [f"{u} ({p})" for u, p in cloud._pids.items()
                    if health.alive(p) and health.is_service_process(p, u)]
            if left:
                echo(f"  WARNING: still running after clean-up: {', '.join(left)}")
    return results, clouds, series


def whole_cast_line(figures: dict) -> str:
    ms = sorted(figures["latencies_ms"])
    if not ms:
        return f"no boot got to ACTIVE ({figures['errors']} errors)"
    return (f"p50 {statistics.median(ms):.0f} ms, min {ms[0]:.0f} ms, max {ms[-1]:.0f} ms "
            f"POST->ACTIVE (n={len(ms)}, {figures['errors']} errors); deployment CPU "
            f"{statistics.median(figures['cpu_ms']):.0f} ms a boot (median)")


def print_up_report(series: dict[int, dict], echo=print) -> None:
    echo(f"  `up` over RabbitMQ + PostgreSQL, traced whole-cast boot: target <= "
         f"{TARGET_UP_WHOLE_CAST_MS:.0f} ms; measured (POST->ACTIVE, one boot at a time, "
         "services traced, client untraced):")
    for hosts, figures in sorted(series.items()):
        echo(f"    {hosts} hosts: {whole_cast_line(figures)}")
