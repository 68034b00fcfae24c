"""``novalab up``: one process per service over RabbitMQ and a SQL server, as a user runs it.

One deployment per database backend (PostgreSQL, MariaDB) for the whole module,
started and stopped with the commands themselves, in subprocesses. The
services also export over OTLP to a small receiver in this test process.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import loopback
import pytest
import sqlalchemy
import yaml
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from novalab.reference.common.wiring import STANDARD_PORTS
from novalab.reference.deploy import health, processes
from novalab.reference.deploy.boot import BootRequest
from novalab.reference.deploy.running import boot_against_running
from novalab.reference.deploy.statedir import StateDir, Unit
from novalab.tracing import collect
from novalab.tracing.otlp_json import spans_from_otlp

pytestmark = pytest.mark.e2e  # `novalab up` on RabbitMQ and PostgreSQL/MariaDB

NOVALAB = [sys.executable, "-m", "novalab.labs.cli"]
NOVALAB_CLI = [sys.executable, "-m", "novalab.labs.cli"]  # the whole `novalab` command
ROOT = Path(__file__).resolve().parents[3]


def novalab(*args, check=True, timeout=180, command=NOVALAB) -> subprocess.CompletedProcess:
    result = subprocess.run([*command, *args], capture_output=True, text=True, timeout=timeout)
    if check:
        assert result.returncode == 0, \
            f"novalab {' '.join(args)}:\n{result.stdout[-3000:]}\n{result.stderr}"
    return result


class _Receiver(BaseHTTPRequestHandler):
    """An OTLP/HTTP trace receiver: keeps (trace id, service, pid) of every span."""

    spans: list[tuple[str, str, int]] = []

    def do_POST(self):  # noqa: N802 - the http.server API
        request = ExportTraceServiceRequest()
        request.ParseFromString(self.rfile.read(int(self.headers["Content-Length"])))
        for resource_spans in request.resource_spans:
            resource = {a.key: a.value for a in resource_spans.resource.attributes}
            service = resource["service.name"].string_value
            pid = resource["process.pid"].int_value
            for scope in resource_spans.scope_spans:
                type(self).spans.extend((s.trace_id.hex(), service, pid) for s in scope.spans)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def receiver():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.fixture(scope="module", params=["postgres", "mariadb"])
def deployment(request, tmp_path_factory, receiver):
    """`novalab up --computes 2` on a scratch database that `up` itself creates."""
    backend = request.param
    loopback.require_rabbitmq()
    loopback.require_database(backend)
    busy = sorted(port for port in STANDARD_PORTS.values() if loopback.port_open(port))
    if busy:
        pytest.skip(f"standard ports {busy} are in use; novalab up runs on the standard ports")
    name = f"novalab_up_{uuid.uuid4().hex[:8]}"
    state_dir = tmp_path_factory.mktemp(f"up-{backend}")
    with contextlib.ExitStack() as stack:
        # `up` creates the database itself: only name it here, and drop it after.
        db_url = stack.enter_context(loopback.scratch_database(backend, name, create=None))
        transport = stack.enter_context(loopback.own_vhost(name))
        # A short vif_plugging_timeout, as a class cloud for lab 10's vif drill has: a
        # normal boot's network-vif-plugged comes long before it.
        args = ["--computes", "2", "--transport", transport, "--db", db_url, "--otlp",
                receiver, "--state-dir", str(state_dir), "--vif-plugging-timeout", "10"]
        stack.callback(novalab, "down", "--state-dir", str(state_dir), check=False)
        result = novalab("up", *args, check=False)
        assert result.returncode == 0, result.stderr
        assert f"created database '{name}'" in result.stderr
        yield {"state_dir": state_dir, "db_url": db_url, "args": args, "up": result,
               "transport": transport}


def _pids(state_dir) -> dict[str, int]:
    state = StateDir(state_dir)
    return {path.name.removesuffix(".pid"): int(path.read_text()) for path in state.pid_files()}


def _instance(db_url, server_id) -> dict:
    engine = sqlalchemy.create_engine(db_url)
    try:
        with engine.connect() as conn:
            row = conn.execute(sqlalchemy.text(
                "SELECT host, vm_state, task_state FROM instances WHERE uuid = :u"),
                {"u": server_id}).mappings().one()
            faults = conn.execute(sqlalchemy.text(
                "SELECT message FROM instance_faults WHERE instance_uuid = :u"),
                {"u": server_id}).scalars().all()
    finally:
        engine.dispose()
    return dict(row, faults=faults)


def test_up_prints_variables_and_status_shows_every_service(deployment):
    out = deployment["up"].stdout
    assert "export OS_AUTH_URL=http://127.0.0.1:5000/v3" in out
    pids = _pids(deployment["state_dir"])
    # Every service of the registry, nova-compute once per host.
    assert set(pids) == {unit.id for unit in processes.plan(2)}
    assert {"keystone", "nova-api", "nova-compute-compute-1", "nova-compute-compute-2"} <= \
        set(pids)
    assert len(set(pids.values())) == len(pids)  # each its own process
    status = novalab("status", "--state-dir", str(deployment["state_dir"]))
    assert "unhealthy" not in status.stderr and " down " not in status.stderr
    assert status.stderr.count("heartbeat") >= 2  # the two compute hosts
    state = json.loads((deployment["state_dir"] / "state.json").read_text())
    assert state["urls"]["nova"] == "http://127.0.0.1:8774"


def test_boot_is_one_trace_across_processes(deployment):
    result = boot_against_running(deployment["state_dir"], BootRequest(name="up-boot"))
    assert result.active, result.server
    assert _instance(deployment["db_url"], result.server["id"])["host"] in {"compute-1",
                                                                             "compute-2"}
    info = collect.summary(result.document)
    assert info["trace_ids"] == {result.trace_id_hex}
    assert len(info["pids"]) >= 5
    assert {"novalab-client", "keystone", "nova-api", "nova-scheduler", "nova-conductor",
            "nova-compute", "glance-api"} <= set(info["services"])
    # The same spans left every process over OTLP too.
    deadline = time.monotonic() + 15
    while True:
        received = {pid for trace_id, _, pid in list(_Receiver.spans)
                    if trace_id == result.trace_id_hex}
        if received >= info["pids"] or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert received == info["pids"]


def test_boot_command_against_the_running_cloud(deployment, tmp_path):
    """`novalab boot --cloud running`: the user's command, the whole flow, 58/58 steps."""
    result = subprocess.run([sys.executable, "-m", "novalab.labs.cli", "boot", "--cloud",
                             "running", "--state-dir", str(deployment["state_dir"]), "--out",
                             str(tmp_path)], capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr
    report = (tmp_path / "flow-check.txt").read_text()
    # Every step this boot implies (a host that booted the image before fetches none).
    assert "MISSING" not in report and report.rstrip().splitlines()[-1].startswith(
        ("58/58 steps matched, 0 out of order", "51/51 expected steps matched, 0 out of")), \
        report[-3000:]
    assert (tmp_path / "sequence.html").exists() and (tmp_path / "trace.jaeger.json").exists()


def test_trace_collect_command_writes_one_trace(deployment, tmp_path):
    result = boot_against_running(deployment["state_dir"], BootRequest(name="collect-me"))
    out = tmp_path / "trace.json"
    novalab("trace", "collect", "--state-dir", str(deployment["state_dir"]), "--trace-id",
            result.trace_id_hex, "-o", str(out), command=NOVALAB_CLI)
    document = json.loads(out.read_text())
    assert collect.summary(document)["trace_ids"] == {result.trace_id_hex}
    by_server = tmp_path / "server.json"
    novalab("trace", "collect", "--state-dir", str(deployment["state_dir"]), "--server",
            result.server["id"], "-o", str(by_server), command=NOVALAB_CLI)
    # A traced client needs no stitching: the server's trace is the client's trace.
    assert collect.summary(json.loads(by_server.read_text()))["trace_ids"] == \
        {result.trace_id_hex}


def _openstack(deployment, *args) -> dict:
    openstack = Path(sys.executable).with_name("openstack")
    if not openstack.exists():
        pytest.skip("python-openstackclient is not installed (it is a test dependency)")
    state = json.loads((deployment["state_dir"] / "state.json").read_text())
    done = subprocess.run([str(openstack), *args, "-f", "json"],
                          env=dict(os.environ, **state["os_env"]), capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_openstack_cli_boots_are_found_by_name_and_stitched(deployment, tmp_path):
    """The user's path on `up`: boot twice with the unmodified CLI (once with a volume),
    then find each boot by the server's name, check it and draw it."""
    state_dir = str(deployment["state_dir"])
    plain = _openstack(deployment, "server", "create", "--image", "cirros", "--flavor",
                       "m1.nano", "--wait", "cli-server")
    with_volume = _openstack(deployment, "server", "create", "--image", "cirros", "--flavor",
                             "m1.nano", "--block-device",
                             "source_type=blank,destination_type=volume,volume_size=1,"
                             "delete_on_termination=true", "--wait", "cli-server-vol")
    assert plain["status"] == with_volume["status"] == "ACTIVE"
    for server in (plain, with_volume):
        listed = novalab("trace", "list", "--state-dir", state_dir, "--server", server["name"],
                         "--json", command=NOVALAB_CLI)
        (row,) = json.loads(listed.stdout)
        assert row["kind"] == "boot" and row["stitched"] and row["status"] == "ACTIVE"
        assert row["servers"] == [{"id": server["id"], "name": server["name"]}]
        matched, expected = map(int, row["steps"].split("/"))
        assert matched == expected
        check = novalab("flow", "check", "--state-dir", state_dir, "--server", server["name"],
                        command=NOVALAB_CLI)
        assert "MISSING" not in check.stdout
        drawn = tmp_path / f"{server['name']}.svg"
        novalab("diagram", "--state-dir", state_dir, "--server", server["name"], "--format",
                "svg", "-o", str(drawn), command=NOVALAB_CLI)
        assert drawn.read_text().lstrip().startswith("<svg")
    # The volume's steps were implied, and found, for the boot that asked for one.
    report = json.loads(novalab("flow", "check", "--state-dir", state_dir, "--server",
                                "cli-server-vol", "--format", "json",
                                command=NOVALAB_CLI).stdout)
    assert report["steps"][38]["status"] == "matched"  # 39: nova-compute -> cinder-api

    out = tmp_path / "stitched.json"
    novalab("trace", "collect", "--state-dir", state_dir, "--server", plain["id"], "-o",
            str(out), command=NOVALAB_CLI)
    document = json.loads(out.read_text())
    info = collect.summary(document)
    assert len(info["trace_ids"]) == 1 and len(info["pids"]) >= 5
    spans = spans_from_otlp(document)
    (root,) = collect.roots(spans)
    assert root.name == "openstack client session (stitched)"
    roles = [link.attributes["novalab.stitch.role"] for link in root.links]
    assert {"token", "create", "poll"} <= set(roles) and roles.count("create") == 1
    # Every original trace is kept, named on its spans, and is one link of the root.
    originals = {s.get("novalab.original_trace_id") for s in spans if s is not root}
    assert originals == {link.trace_id for link in root.links}
    assert not collect.orphans(spans)
    for server in (plain, with_volume):
        _openstack_delete(deployment, server["id"])


def _openstack_delete(deployment, server_id) -> None:
    openstack = Path(sys.executable).with_name("openstack")
    state = json.loads((deployment["state_dir"] / "state.json").read_text())
    subprocess.run([str(openstack), "server", "delete", "--wait", server_id],
                   env=dict(os.environ, **state["os_env"]), capture_output=True, timeout=180)


def test_queues_lists_what_novalab_declared(deployment):
    result = subprocess.run([*NOVALAB, "queues", "--transport", deployment["transport"]],
                            capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        pytest.skip(f"the broker cannot be listed here: {result.stderr.strip()}")
    for name in ("nova", "compute.compute-1", "compute.compute-2", "conductor", "scheduler"):
        assert name in result.stdout


def test_a_second_consumer_on_our_queues_is_noticed(deployment):
    """Another cloud on the same vhost would steal messages: `up` warns about it."""
    import pika

    from novalab.reference.deploy.queues import expected_consumers, foreign_consumers

    topics = [t for path in (deployment["state_dir"] / "run").glob("*.ready")
              for t in json.loads(path.read_text())["topics"]]
    expected = expected_consumers(topics)
    assert expected["compute"] == 2 and expected["conductor"] == 1
    # Neutron's RPC servers are built on Wiring too: their queues are counted.
    assert expected["q-plugin"] == 1 and expected["dhcp_agent"] == 1
    assert expected["q-agent-notifier-port-update"] == 2  # an L2 agent per compute host
    assert foreign_consumers(deployment["transport"], expected) == {}
    url = "amqp://" + deployment["transport"].split("://", 1)[1]
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        connection.channel().basic_consume("conductor", lambda *args: None)
        assert foreign_consumers(deployment["transport"], expected) == {"conductor": (2, 1)}
    finally:
        connection.close()


def _demo_service(deployment):
    """demo's session with the deployment's lab service."""
    from novalab.labs.client import LabService
    from novalab.reference.common.credentials import PERSONA_PASSWORD

    state = json.loads((deployment["state_dir"] / "state.json").read_text())
    return LabService(state["os_env"]["OS_AUTH_URL"], "demo", PERSONA_PASSWORD, "demo")


def _attempt_values(deployment, lab) -> dict:
    """What demo's attempt at ``lab`` drew (the written solution is rendered with it)."""
    service = _demo_service(deployment)
    values = service.current(lab.name)["parameters"]
    service.close()
    return values


def test_lab_03_from_start_to_finish_on_the_running_cloud(deployment, tmp_path):
    """Lab 03 (messaging) as a learner runs it on `novalab up`, over RabbitMQ: the same
    guide, checks and written solution as on the lab cloud's in-memory broker."""
    if not deployment["db_url"].startswith("postgresql"):
        pytest.skip("the lab runs once, on the PostgreSQL deployment")
    from novalab.labs.course import find

    lab = find("03")
    home = tmp_path / "lab-home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.pop("NOVALAB_STATE_DIR", None)
    env.update(NOVALAB_LAB_HOME=str(home), PATH=f"{Path(sys.executable).parent}:{env['PATH']}")

    def lab_cli(*args, expect=0):
        done = subprocess.run([*NOVALAB_CLI, "lab", *args], env=env, capture_output=True,
                              text=True, timeout=300, cwd=home)
        assert done.returncode == expect, f"lab {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    lab_cli("start", lab.name, "--cloud", "running", "--state-dir",
            str(deployment["state_dir"]))
    before = lab_cli("grade", lab.name, expect=1).splitlines()
    assert any(line.startswith("FAIL") for line in before)
    for number, line in enumerate(before):
        if line.startswith("FAIL"):
            assert before[number + 1].startswith("      ") and before[number + 1].strip()
    service = _demo_service(deployment)
    for script in lab.solution_scripts("demo", _attempt_values(deployment, lab)):
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], env=env, cwd=home,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"solution:\n{script}\n{done.stdout}\n{done.stderr}"
    after = lab_cli("grade", lab.name)
    assert "FAIL" not in after and f"{lab.name} done" in after
    assert service.current(lab.name)["passed_at"]  # the cloud's record, not a file
    service.close()
    shown = subprocess.run(["bash", "-c", 'eval "$(novalab lab env)" && novalab trace show '
                            "--server lab03-demo-vm --attributes"], env=env,
                           capture_output=True, text=True, timeout=120)
    assert "messaging.system = rabbitmq" in shown.stdout, shown.stderr
    # `lab env` names the deployment's broker, so `novalab queues` lists its queues
    # (where the broker can be listed at all).
    queues = subprocess.run(["bash", "-c", 'eval "$(novalab lab env)" && novalab queues'],
                            env=env, capture_output=True, text=True, timeout=60)
    if queues.returncode == 0:
        assert "conductor" in queues.stdout
    finished = lab_cli("finish", lab.name)
    assert "removed: servers: lab03-demo-vm" in finished
    assert not (home / "work" / lab.name).exists()
    state = json.loads((deployment["state_dir"] / "state.json").read_text())
    left = subprocess.run(["openstack", "server", "list", "-f", "value", "-c", "Name"],
                          env=dict(env, **state["os_env"]), capture_output=True, text=True,
                          timeout=120)
    assert left.returncode == 0 and "lab03-" not in left.stdout
    # A running cloud is the class's: finishing a lab never stops it.
    assert novalab("status", "--state-dir", str(deployment["state_dir"]),
                   check=False).returncode == 0


def test_lab_10_failure_drills_on_the_running_cloud(deployment, tmp_path):
    """Lab 10 (failure drills) on `novalab up`: the four drills of the lab cloud over
    RabbitMQ and PostgreSQL, and compute-crash, which only a cloud of one process per
    service can run (its nova-compute really dies, and `novalab up` restarts it)."""
    if not deployment["db_url"].startswith("postgresql"):
        pytest.skip("the lab runs once, on the PostgreSQL deployment")
    from novalab.labs.course import find
    from novalab.reference.common.faults import Faults

    lab = find("10")
    state_dir = deployment["state_dir"]
    home = tmp_path / "lab-home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OS_", "NOVALAB_TRANSPORT", "NOVALAB_DB"))}
    env.pop("NOVALAB_STATE_DIR", None)
    env.update(NOVALAB_LAB_HOME=str(home), PATH=f"{Path(sys.executable).parent}:{env['PATH']}")

    def lab_cli(*args, expect=0):
        done = subprocess.run([*NOVALAB_CLI, "lab", *args], env=env, capture_output=True,
                              text=True, timeout=300, cwd=home)
        assert done.returncode == expect, f"lab {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    lab_cli("start", lab.name, "--cloud", "running", "--state-dir", str(state_dir))
    before = lab_cli("grade", lab.name, expect=1).splitlines()
    assert any(line.startswith("FAIL") for line in before)
    for number, line in enumerate(before):
        if line.startswith("FAIL"):
            assert before[number + 1].startswith("      ") and before[number + 1].strip()
    pids = _pids(state_dir)
    for script in lab.solution_scripts("demo", _attempt_values(deployment, lab)):
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], env=env, cwd=home,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"solution:\n{script}\n{done.stdout}\n{done.stderr}"
    after = lab_cli("grade", lab.name)
    # On `up` the crash drill is graded, not skipped.
    assert "FAIL" not in after and "SKIP" not in after and f"{lab.name} done" in after
    # One nova-compute died in the crash drill and was started again; nothing else was.
    restarted = {unit for unit, pid in _pids(state_dir).items() if pids.get(unit) != pid}
    assert len(restarted) == 1 and next(iter(restarted)).startswith("nova-compute-")
    finished = lab_cli("finish", lab.name)
    assert "lab10-demo-vm5" in finished and "lab10-demo-image" in finished
    assert not Faults(state_dir).injected()  # what lab start armed, finish cleared
    # The class's cloud runs on, whole.
    assert novalab("status", "--state-dir", str(state_dir), check=False).returncode == 0


def test_killed_compute_restarts_without_leaving_build(deployment):
    state_dir, db_url = deployment["state_dir"], deployment["db_url"]
    result = boot_against_running(state_dir, BootRequest(name="crash-victim"))
    assert result.active
    host = _instance(db_url, result.server["id"])["host"]
    unit_id = f"nova-compute-{host}"
    before = _pids(state_dir)
    os.kill(before[unit_id], signal.SIGKILL)
    deadline = time.monotonic() + 10
    while health.alive(before[unit_id]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not health.alive(before[unit_id])
    # The crash caught the instance mid-build, as far as the database knows.
    engine = sqlalchemy.create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(sqlalchemy.text("UPDATE instances SET vm_state = 'building', "
                                     "task_state = 'spawning' WHERE uuid = :u"),
                     {"u": result.server["id"]})
    engine.dispose()
    status = novalab("status", "--state-dir", str(state_dir), check=False)
    assert status.returncode == 1
    restart = novalab("up", *deployment["args"])
    assert f"{unit_id:<24} up" in restart.stderr
    after = _pids(state_dir)
    assert after[unit_id] != before[unit_id]
    assert {k: v for k, v in after.items() if k != unit_id} == \
        {k: v for k, v in before.items() if k != unit_id}
    instance = _instance(db_url, result.server["id"])
    assert instance["vm_state"] == "error" and instance["task_state"] is None
    assert any("restarted during the build" in message for message in instance["faults"])


def test_down_leaves_no_process_behind(deployment):
    pids = _pids(deployment["state_dir"])
    result = novalab("down", "--state-dir", str(deployment["state_dir"]))
    assert "all novalab services stopped" in result.stderr
    assert not any(health.alive(pid) for pid in pids.values())
    assert _pids(deployment["state_dir"]) == {}
    assert novalab("status", "--state-dir", str(deployment["state_dir"]),
                   check=False).returncode == 1


def test_up_explains_an_unreachable_broker(tmp_path):
    result = novalab("up", "--transport", "amqp://guest:guest@127.0.0.1:1/", "--db",
                     f"sqlite:///{tmp_path / 'x.db'}", "--state-dir", str(tmp_path),
                     check=False)
    assert result.returncode == 2
    assert "amqp://guest:***@127.0.0.1:1/" in result.stderr
    assert "rabbitmq-server -detached" in result.stderr
    assert not StateDir(tmp_path).pid_files()


def test_up_explains_an_unreachable_database(tmp_path, amqp_url):
    result = novalab("up", "--transport", amqp_url, "--db",
                     "postgresql+psycopg://postgres@127.0.0.1:1/novalab", "--state-dir",
                     str(tmp_path), check=False)
    assert result.returncode == 2
    assert "127.0.0.1:1" in result.stderr and "pg_ctlcluster" in result.stderr
    mariadb = novalab("up", "--transport", amqp_url, "--db",
                      "mysql+pymysql://root@127.0.0.1:1/novalab", "--state-dir",
                      str(tmp_path), check=False)
    assert mariadb.returncode == 2 and "mariadbd" in mariadb.stderr


def test_service_refuses_unknown_names_and_missing_hosts(tmp_path):
    db = f"sqlite:///{tmp_path / 'x.db'}"
    novalab("db", "sync", "--db", db)
    unknown = novalab("service", "nova-nothing", "--db", db, "--state-dir", str(tmp_path),
                      check=False)
    assert unknown.returncode == 2 and "known: keystone" in unknown.stderr
    hostless = novalab("service", "nova-compute", "--db", db, "--state-dir", str(tmp_path),
                       check=False)
    assert hostless.returncode == 2 and "--host" in hostless.stderr


def test_plan_follows_the_registry(monkeypatch):
    from novalab.reference.deploy import services

    def per_host_agent(w, host):
        """A made-up per-host service, as neutron's agents will be."""

    monkeypatch.setitem(services.BUILDERS, "test-agent", per_host_agent)
    units = processes.plan(2)
    assert units[0] == Unit("keystone")
    assert [u for u in units if u.name == "test-agent"] == [Unit("test-agent", "compute-1"),
                                                            Unit("test-agent", "compute-2")]


def test_a_service_started_after_others_builds_once_they_are_ready(tmp_path):
    """`up` starts every process at once; each waits for the ready files of the units
    before it (a live pid in each) and gives up quietly when told to stop."""
    state = StateDir(tmp_path).make()
    stop = threading.Event()
    result = {}
    waiter = threading.Thread(target=lambda: result.setdefault(
        "ready", processes._await_units(state, ["keystone", "ceph"], stop)))
    waiter.start()
    write = processes.write_json
    write(state.ready_file(Unit("keystone")), {"pid": os.getpid()})
    write(state.ready_file(Unit("ceph")), {"pid": 2 ** 22 + 1})  # no such process
    waiter.join(0.5)
    assert waiter.is_alive(), "a ready file whose process is gone is no ready service"
    write(state.ready_file(Unit("ceph")), {"pid": os.getpid()})
    waiter.join(10)
    assert result == {"ready": True}

    stop.set()
    assert processes._await_units(state, ["glance-api"], stop) is False


def test_compose_file_describes_jaeger_rabbitmq_and_postgres():
    compose = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
    services = compose["services"]
    assert {"jaeger", "rabbitmq", "postgres"} <= set(services)
    ports = {p for s in services.values() for p in s.get("ports", [])}
    for port in ("4317", "4318", "16686", "5672", "15672", "5432"):
        assert any(str(p).endswith(f":{port}") for p in ports), port
