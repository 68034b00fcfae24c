"""Faults under `novalab up` while boots are in flight (issue 10, item 7).

The broker restarts, nova-conductor or a nova-compute is killed with SIGKILL (then
`novalab up` starts it again), the database restarts, the OTLP endpoint goes
away. After each: every server ends ACTIVE, or ERROR with a fault, within
``SETTLE_BOUND``; deleting them leaves no port and no volume behind; and
`novalab status` tells what happened.

RabbitMQ and PostgreSQL are a node and a cluster of this module's own
(``tests/private_services.py``): restarting the machine's would break every other
test and cloud on it. The whole deployment runs in a network namespace of its
own, so it binds the standard ports whatever else runs on the machine. One
deployment serves the five scenarios in turn: each starts from a whole cloud
and checks that it leaves one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import loopback
import private_services
import pytest
import sqlalchemy

from novalab.reference.common.credentials import PERSONA_PASSWORD
from novalab.reference.common.wiring import STANDARD_PORTS
from novalab.reference.deploy import health
from novalab.reference.deploy.boot import BootRequest, server_extra
from novalab.reference.deploy.client import CloudClient
from novalab.reference.deploy.statedir import StateDir

# e2e: `novalab up` on private RabbitMQ and PostgreSQL
pytestmark = [pytest.mark.amqp, pytest.mark.postgresql, pytest.mark.e2e]

NOVALAB = [sys.executable, "-m", "novalab.labs.cli"]
# Twice rpc_response_timeout (60 s): a call lost with a killed service times out,
# then the build fails and says so.
SETTLE_BOUND = 120.0
IN_FLIGHT = {"networking", "block_device_mapping", "spawning"}


def novalab(*args, check=True) -> subprocess.CompletedProcess:
    # Wide, so rich neither wraps nor cuts the table's cells.
    result = subprocess.run([*NOVALAB, *args], capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, COLUMNS="250"))
    if check:
        assert result.returncode == 0, \
            f"novalab {' '.join(args)}:\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    return result


class _Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP endpoint that takes every export (a Collector, for our purpose)."""

    def do_POST(self):  # noqa: N802 - the http.server API
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


class Cloud:
    """The deployment, its private broker and database, and a user's view of it."""

    def __init__(self, state_dir: Path, args: list[str], mq, pg, collector):
        self.state_dir, self.args, self.mq, self.pg = state_dir, args, mq, pg
        self.collector = collector
        self.state = StateDir(state_dir)
        self.engine = sqlalchemy.create_engine(pg.url("novalab"), pool_pre_ping=True)
        self.http = httpx.Client(timeout=30)
        self._client: CloudClient | None = None
        self.booted: list[str] = []  # deleted after each test, however it ended

    # -- the user's side, tolerant of an API that errs while a fault lasts ----------

    def client(self) -> CloudClient:
        if self._client is None:
            record = self.state.load()
            client = CloudClient(record["os_env"]["OS_AUTH_URL"], self.http)
            client.authenticate("demo", PERSONA_PASSWORD, "demo")
            self._client = client
        return self._client

    def boot(self, prefix: str, count: int) -> dict[str, str]:
        """Post ``count`` servers with a port and a 1 GB volume; {id: name}, not waited on."""
        client = self.client()
        flavor, image = client.find_flavor("m1.nano"), client.find_image("cirros")
        servers = {}
        for index in range(count):
            name = f"{prefix}-{index}"
            created = client.create_server(name, flavor["id"], image["id"],
                                           **server_extra(BootRequest(), image["id"]))
            servers[created["id"]] = name
            self.booted.append(created["id"])
        return servers

    def look(self, ids) -> dict[str, dict | str]:
        """Each server as the API shows it now, or why it could not be read."""
        seen: dict[str, dict | str] = {}
        for server_id in ids:
            try:
                seen[server_id] = self.client().get_server(server_id)
            except Exception as exc:  # the API may err while the fault lasts
                seen[server_id] = f"unreadable: {type(exc).__name__}: {exc}"
        return seen

    def wait_in_flight(self, ids, timeout: float = 60.0) -> None:
        """Until a build is past the scheduler (networking, volumes or spawning)."""
        deadline = time.monotonic() + timeout
        while True:
            seen = self.look(ids)
            if any(isinstance(s, dict) and s["status"] == "BUILD" and
                   s.get("OS-EXT-STS:task_state") in IN_FLIGHT for s in seen.values()):
                return
            if time.monotonic() > deadline:
                pytest.fail(f"no build got past the scheduler in {timeout:.0f} s: {seen}")
            time.sleep(0.1)

    def wait_settled(self, ids, bound: float = SETTLE_BOUND) -> dict[str, dict]:
        """Until every server is ACTIVE or ERROR; fail listing those that are not."""
        deadline = time.monotonic() + bound
        while True:
            seen = self.look(ids)
            stuck = {i: s for i, s in seen.items()
                     if not (isinstance(s, dict) and s["status"] in ("ACTIVE", "ERROR"))}
            if not stuck:
                return seen
            if time.monotonic() > deadline:
                pytest.fail(f"{len(stuck)} of {len(ids)} servers neither ACTIVE nor ERROR "
                            f"{bound:.0f} s after the fault:\n" + "\n".join(
                                f"  {i}: {_state(s)}" for i, s in stuck.items()))
            time.sleep(1)

    def volume_ids(self) -> set[str]:
        url = f"{self.client().endpoint('volumev3')}/volumes/detail"
        response = self.http.get(url, headers=self.client()._headers())
        response.raise_for_status()
        return {v["id"] for v in response.json()["volumes"]}

    def delete(self, ids) -> None:
        for server_id in ids:
            with contextlib.suppress(Exception):  # already gone: fine
                self.client().delete_server(server_id)

    def delete_and_check_nothing_left(self, ids, volumes_before: set[str],
                                      bound: float = SETTLE_BOUND) -> None:
        """Delete the servers; then no server, port or volume of theirs may be left."""
        self.delete(ids)
        client = self.client()
        network = client.endpoint("network")
        deadline = time.monotonic() + bound
        while True:
            left = {}
            for server_id in ids:
                gone = self.http.get(f"{client.endpoint('compute')}/servers/{server_id}",
                                     headers=client._headers()).status_code == 404
                ports = self.http.get(f"{network}/v2.0/ports", params={"device_id": server_id},
                                      headers=client._headers()).json()["ports"]
                if not gone or ports:
                    left[server_id] = f"server deleted: {gone}, ports: " \
                                      f"{[p['id'] for p in ports]}"
            volumes = self.volume_ids() - volumes_before
            if not left and not volumes:
                return
            if time.monotonic() > deadline:
                pytest.fail(f"{bound:.0f} s after deleting the servers, left behind:\n" +
                            "\n".join(f"  {i}: {what}" for i, what in left.items()) +
                            f"\n  volumes made by these boots: {self._describe(volumes)}")
            time.sleep(1)

    def _describe(self, volume_ids) -> list[str]:
        url = f"{self.client().endpoint('volumev3')}/volumes"
        described = []
        for volume_id in sorted(volume_ids):
            volume = self.http.get(f"{url}/{volume_id}",
                                   headers=self.client()._headers()).json().get("volume", {})
            described.append(f"{volume_id} {volume.get('name')} {volume.get('status')}")
        return described

    # -- the operator's side --------------------------------------------------------

    def pids(self) -> dict[str, int]:
        return {path.name.removesuffix(".pid"): int(path.read_text())
                for path in self.state.pid_files()}

    def kill(self, unit_id: str) -> int:
        pid = self.pids()[unit_id]
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while health.alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not health.alive(pid), f"{unit_id} (pid {pid}) outlived SIGKILL"
        return pid

    def status(self) -> subprocess.CompletedProcess:
        return novalab("status", "--state-dir", str(self.state_dir), check=False)

    def up(self) -> subprocess.CompletedProcess:
        return novalab("up", *self.args)

    def building_on_a_host(self, ids, timeout: float = 60.0) -> dict[str, str]:
        """{uuid: host} of the builds a compute host is working on, once there is one."""
        query = sqlalchemy.text(
            "SELECT uuid, host FROM instances WHERE vm_state = 'building' AND host IS NOT NULL "
            "AND task_state IN ('networking', 'block_device_mapping', 'spawning') "
            "AND uuid IN :ids").bindparams(sqlalchemy.bindparam("ids", expanding=True))
        deadline = time.monotonic() + timeout
        while True:
            with self.engine.connect() as conn:
                rows = dict(conn.execute(query, {"ids": list(ids)}).all())
            if rows or time.monotonic() > deadline:
                return rows
            time.sleep(0.05)

    def close(self) -> None:
        self.http.close()
        self.engine.dispose()


def _state(server: dict | str) -> str:
    if isinstance(server, str):
        return server
    return (f"{server['status']} task_state={server.get('OS-EXT-STS:task_state')} "
            f"fault={server.get('fault', {}).get('message')!r}")


def _assert_settled_well(settled: dict[str, dict]) -> None:
    """ACTIVE, or ERROR with a fault that says why."""
    bad = {i: s for i, s in settled.items()
           if not (s["status"] == "ACTIVE" or s.get("fault", {}).get("message"))}
    assert not bad, "ERROR without a fault:\n" + "\n".join(
        f"  {i}: {_state(s)}" for i, s in bad.items())


def _notes(status: subprocess.CompletedProcess, unit_id: str) -> str:
    """The status's 'what happened' lines of one unit."""
    return "\n".join(line for line in status.stderr.splitlines()
                     if line.startswith(f"  {unit_id} "))


@pytest.fixture(scope="module")
def cloud():
    """`novalab up --computes 2` in a network namespace, on a private RabbitMQ and
    PostgreSQL, exporting over OTLP to a collector in this process."""
    with contextlib.ExitStack() as stack:
        isolated = stack.enter_context(private_services.network_namespace())
        if not isolated:
            busy = sorted(p for p in STANDARD_PORTS.values() if loopback.port_open(p))
            if busy:
                pytest.skip(f"no network namespace here (not root) and standard ports {busy} "
                            "are in use; novalab up runs on the standard ports")
        mq = stack.enter_context(private_services.private_rabbitmq())
        pg = stack.enter_context(private_services.private_postgres())
        collector = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
        threading.Thread(target=collector.serve_forever, daemon=True).start()
        stack.callback(collector.server_close)
        stack.callback(collector.shutdown)
        state_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="novalab-up-")))
        args = ["--computes", "2", "--transport", mq.url, "--db", pg.url("novalab"),
                "--otlp", f"http://127.0.0.1:{collector.server_port}", "--state-dir",
                str(state_dir), "--vif-plugging-timeout", "10", "--web-port", "0"]
        stack.callback(novalab, "down", "--state-dir", str(state_dir), check=False)
        novalab("up", *args)
        running = Cloud(state_dir, args, mq, pg, collector)
        stack.callback(running.close)
        yield running


@pytest.fixture
def scenario(cloud):
    """The cloud, and after the test, however it ended: what it killed started again
    and its servers deleted (the scenarios share one cloud and its quota)."""
    yield cloud
    if not all(health.alive(pid) for pid in cloud.pids().values()):
        novalab("up", *cloud.args, check=False)
    cloud.delete(cloud.booted)
    cloud.booted.clear()


def test_rabbitmq_restarted_while_boots_are_in_flight(scenario):
    cloud = scenario
    volumes = cloud.volume_ids()
    servers = cloud.boot("mq", 3)
    cloud.wait_in_flight(servers)
    cloud.mq.restart(down_for=2)
    _assert_settled_well(cloud.wait_settled(servers))
    status = cloud.status()
    assert status.returncode == 0, status.stderr
    # The services' RPC clients lost the broker and found it again, and say so.
    assert "Reconnected to RabbitMQ" in status.stderr, status.stderr
    cloud.delete_and_check_nothing_left(servers, volumes)


def test_conductor_killed_mid_boot_then_up_again(scenario):
    cloud = scenario
    volumes = cloud.volume_ids()
    servers = cloud.boot("conductor", 3)
    cloud.wait_in_flight(servers)
    before = cloud.pids()
    killed = cloud.kill("nova-conductor")
    status = cloud.status()
    assert status.returncode == 1, status.stderr
    notes = _notes(status, "nova-conductor")
    assert f"pid {killed} ended without a clean stop" in notes, status.stderr
    assert "log last written" in notes
    restart = cloud.up()
    assert f"{'nova-conductor':<24} was not running (killed or crashed" in restart.stderr, \
        restart.stderr
    after = cloud.pids()
    assert after["nova-conductor"] != killed
    # Nothing else had died, so nothing else was started.
    others = {unit for unit, pid in after.items()
              if unit != "nova-conductor" and before.get(unit) != pid}
    assert not others, restart.stderr
    _assert_settled_well(cloud.wait_settled(servers))
    status = cloud.status()
    assert status.returncode == 0, status.stderr
    assert "restarted by `novalab up` at" in _notes(status, "nova-conductor"), status.stderr
    assert f"before: pid {killed} ended without a clean stop" in status.stderr
    cloud.delete_and_check_nothing_left(servers, volumes)


def test_compute_killed_mid_boot_then_up_again(scenario):
    cloud = scenario
    volumes = cloud.volume_ids()
    servers = cloud.boot("compute", 4)
    building = cloud.building_on_a_host(servers)
    assert building, "no build reached a compute host"
    host = next(iter(building.values()))
    unit_id = f"nova-compute-{host}"
    killed = cloud.kill(unit_id)
    # What the killed host was building when it died, as the database knows it.
    caught = cloud.building_on_a_host(servers, timeout=0)
    caught = {uuid for uuid, on in caught.items() if on == host}
    assert caught, f"{unit_id} finished its builds before SIGKILL landed; nothing to check"
    status = cloud.status()
    assert status.returncode == 1, status.stderr
    assert f"pid {killed} ended without a clean stop" in _notes(status, unit_id), status.stderr
    restart = cloud.up()
    assert f"{unit_id:<24} was not running (killed or crashed" in restart.stderr, \
        restart.stderr
    settled = cloud.wait_settled(servers)
    _assert_settled_well(settled)
    for uuid in caught:  # the restarted host failed them, and said why
        assert settled[uuid]["status"] == "ERROR", _state(settled[uuid])
    status = cloud.status()
    assert status.returncode == 0, status.stderr
    assert "restarted by `novalab up` at" in _notes(status, unit_id), status.stderr
    cloud.delete_and_check_nothing_left(servers, volumes)


@pytest.fixture(scope="module")
def postgres_restarted(cloud):
    """Boots in flight while the database goes away for 5 s; deleted (not waited on)
    after the tests that use them, whatever state they are in."""
    volumes = cloud.volume_ids()
    servers = cloud.boot("postgres", 4)
    cloud.booted.clear()  # the module's, not one test's
    cloud.wait_in_flight(servers)
    cloud.pg.restart(down_for=5)
    yield servers, volumes
    cloud.delete(servers)


def test_postgres_restart_is_told_by_status(cloud, postgres_restarted):
    status = cloud.status()
    # Those whose queries the restart cut off say so, with the driver's error.
    assert "OperationalError" in status.stderr.split("what happened", 1)[-1], status.stderr


def test_postgres_restart_every_server_settles_and_nothing_leaks(cloud, postgres_restarted):
    """A build whose conductor calls fail while the database is down must still end
    ERROR with its fault (recorded through that same database), and a volume whose
    create met the outage must not stay 'creating', which nobody can delete."""
    servers, volumes = postgres_restarted
    _assert_settled_well(cloud.wait_settled(servers))
    cloud.delete_and_check_nothing_left(servers, volumes)


def test_otlp_endpoint_gone_mid_boot(scenario):
    cloud = scenario
    volumes = cloud.volume_ids()
    servers = cloud.boot("otlp", 3)
    cloud.wait_in_flight(servers)
    cloud.collector.shutdown()
    cloud.collector.server_close()  # connection refused from now on
    settled = cloud.wait_settled(servers)
    # Tracing is an extra: losing the endpoint costs no boot.
    assert all(s["status"] == "ACTIVE" for s in settled.values()), \
        [_state(s) for s in settled.values()]
    deadline = time.monotonic() + 30  # the next batch of spans finds the endpoint gone
    while True:
        status = cloud.status()
        if "is not taking spans" in status.stderr or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert status.returncode == 0, status.stderr
    assert "OTLP endpoint" in status.stderr and "is not taking spans" in status.stderr, \
        status.stderr
    # The spans still reach each service's own trace file.
    traces = "".join(path.read_text() for path in (cloud.state_dir / "traces").glob("*.jsonl"))
    assert all(server_id in traces for server_id in servers)
    cloud.delete_and_check_nothing_left(servers, volumes)


# -- what `status` reads, without a cloud ------------------------------------------------


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_status_tells_how_a_unit_ended_and_its_restart(tmp_path):
    from novalab.reference.deploy import processes
    from novalab.reference.deploy.statedir import Unit, write_json

    state, unit = StateDir(tmp_path).make(), Unit("nova-conductor")
    state.log(unit).write_text("--- 2026-11-26T03:00:00+00:00 novalab up starts nova-conductor\n"
                               "2026-11-26 03:00:01,000 INFO nova-conductor x: ready\n")
    pid = _dead_pid()
    killed = processes.how_it_ended(state, unit, pid)
    assert killed.short == "killed or crashed"
    assert killed.full.startswith(f"pid {pid} ended without a clean stop")
    assert killed.full.endswith("INFO nova-conductor x: ready")  # its last word
    write_json(processes.exit_file(state, unit),
               {"pid": pid, "how": "stopped by SIGTERM", "at": "2026-11-26T03:00:02+00:00"})
    assert processes.how_it_ended(state, unit, pid).full.startswith(
        f"pid {pid} stopped by SIGTERM at 2026-11-26T03:00:02")
    # `up` starting it again keeps how the one before ended, for the new pid only.
    processes._record_restart(state, unit, killed, 4242)
    note = processes.restart_note(state, unit, 4242)
    assert note.startswith("restarted by `novalab up` at ") and killed.full in note
    assert processes.restart_note(state, unit, 4343) is None


def test_last_warning_is_of_this_run_and_names_the_cause(tmp_path):
    from novalab.reference.deploy.processes import last_warning

    log = tmp_path / "cinder-volume.log"
    log.write_text(
        "2026-11-26 02:00:00,000 WARNING cinder-volume old: from the run before\n"
        "--- 2026-11-26T03:00:00+00:00 novalab up starts cinder-volume\n"
        "2026-11-26 03:41:36,253 ERROR cinder-volume novalab.rpc: RPC cast create_volume "
        "on cinder-volume failed\n"
        "Traceback (most recent call last):\n"
        "psycopg.OperationalError: server closed the connection unexpectedly\n"
        "The above exception was the direct cause of the following exception:\n"
        "sqlalchemy.exc.OperationalError: (psycopg.OperationalError) server closed\n"
        "2026-11-26 03:41:40,000 INFO cinder-volume x: later, and harmless\n")
    assert last_warning(log) == (
        "2026-11-26 03:41:36 ERROR novalab.rpc: RPC cast create_volume on cinder-volume "
        "failed (sqlalchemy.exc.OperationalError: (psycopg.OperationalError) server closed)")
    log.write_text("--- 2026-11-26T03:00:00+00:00 novalab up starts keystone\n"
                   "2026-11-26 03:00:01,000 INFO keystone x: fine\n")
    assert last_warning(log) is None
    assert last_warning(tmp_path / "missing.log") is None
