"""Services on separate hosts (issue 13, item 4): one boot's trace spans three hosts.

The test makes its hosts itself: three Linux network namespaces (``ip netns``),
each with a veth into a bridge on 198.18.0.0/15 (RFC 2544's benchmarking range:
127/8 does not route between namespaces) and a UTS namespace of its own, so
each has its host name. The bridge sits in a network namespace of the test's
own (``private_services.network_namespace``), where the test is the user:

    controller 198.18.0.1   its own RabbitMQ node and PostgreSQL cluster, and
                            `novalab up --computes 0 --bind-address 198.18.0.1`
                            (keystone, glance, neutron, cinder, nova's controller
                            services, ceph)
    compute-1  198.18.0.2   `novalab service nova-compute --host compute-1
    compute-2  198.18.0.3    --bind-address ... --urls-from catalog` (with its L2 agent)

One request boots two servers (min_count 2: the scheduler spreads them, one per
host); both go ACTIVE; ``novalab trace collect`` merges the three state
directories, and the trace has spans of every host, each with its host.name and
host.ip. docs/multihost.md runs the same on real machines.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import private_services
import pytest

from novalab.diagrams import callgraph, sequence
from novalab.diagrams.load import load_trace
from novalab.reference.common.credentials import PERSONA_PASSWORD
from novalab.reference.common.metadata_secret import shared_secret
from novalab.reference.deploy.client import CloudClient
from novalab.reference.deploy.statedir import StateDir, Unit
from novalab.tracing import attributes as attr
from novalab.tracing.otlp_json import decode_attributes
from novalab.tracing.propagation import context_key

# e2e: hosts in network namespaces, private services
pytestmark = [pytest.mark.amqp, pytest.mark.postgresql, pytest.mark.e2e]

NOVALAB = [sys.executable, "-m", "novalab.labs.cli"]
TRACE = [sys.executable, "-c", "from novalab.labs.cli import main; main()", "trace"]
HOSTS = {"controller": "198.18.0.1", "compute-1": "198.18.0.2", "compute-2": "198.18.0.3"}
PREFIX = 15
TEST_ADDRESS = "198.18.0.254"  # the test's own end of the bridge: the user's machine
CLONE_NEWUTS, CLONE_NEWNET = 0x04000000, 0x40000000


def _run(command: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                            env=dict(os.environ, COLUMNS="250"))
    assert result.returncode == 0, \
        f"{' '.join(command)}:\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    return result


class Hosts:
    """Network namespaces joined by a bridge; ``inside(host)`` runs the calling thread
    (and what it starts) in a host's network namespace, under the host's name."""

    def __init__(self):
        self.tag = uuid.uuid4().hex[:6]
        self.netns = {host: f"novalab-{self.tag}-{index}"
                      for index, host in enumerate(HOSTS)}
        self.libc = ctypes.CDLL(None, use_errno=True)

    def make(self) -> Hosts:
        bridge = f"nlbr{self.tag}"
        _run(["ip", "link", "add", bridge, "type", "bridge"])
        _run(["ip", "addr", "add", f"{TEST_ADDRESS}/{PREFIX}", "dev", bridge])
        _run(["ip", "link", "set", bridge, "up"])
        for index, (host, address) in enumerate(HOSTS.items()):
            name, veth = self.netns[host], f"nl{self.tag}v{index}"
            _run(["ip", "netns", "add", name])
            _run(["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0",
                  "netns", name])
            _run(["ip", "link", "set", veth, "master", bridge, "up"])
            _run(["ip", "-n", name, "addr", "add", f"{address}/{PREFIX}", "dev", "eth0"])
            _run(["ip", "-n", name, "link", "set", "eth0", "up"])
            _run(["ip", "-n", name, "link", "set", "lo", "up"])
        return self

    def remove(self) -> None:
        for name in self.netns.values():
            subprocess.run(["ip", "netns", "del", name], capture_output=True)

    @contextlib.contextmanager
    def inside(self, host: str):
        back = {flag: os.open(f"/proc/thread-self/ns/{kind}", os.O_RDONLY)
                for flag, kind in ((CLONE_NEWNET, "net"), (CLONE_NEWUTS, "uts"))}
        target = os.open(f"/run/netns/{self.netns[host]}", os.O_RDONLY)
        try:
            if self.libc.setns(target, CLONE_NEWNET) != 0 or \
                    self.libc.unshare(CLONE_NEWUTS) != 0 or \
                    self.libc.sethostname(host.encode(), len(host)) != 0:
                raise OSError(ctypes.get_errno(), f"cannot enter host {host}")
            yield
        finally:
            for flag, fd in back.items():
                if self.libc.setns(fd, flag) != 0:
                    raise OSError(ctypes.get_errno(), "cannot leave the host's namespaces")
                os.close(fd)
            os.close(target)


def _skip_unless_namespaces() -> None:
    if os.geteuid() != 0:
        pytest.skip("the hosts are network namespaces made with `ip netns` and veth pairs, "
                    "which needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN)")
    if shutil.which("ip") is None:
        pytest.skip("iproute2's `ip` is not installed (apt-get install iproute2)")
    probe = subprocess.run(["unshare", "-n", "ip", "link", "add", "nlprobe", "type", "veth",
                            "peer", "name", "nlprobe1"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"this kernel or container refuses veth pairs: {probe.stderr.strip()}")
    name = f"novalab-probe-{uuid.uuid4().hex[:6]}"
    probe = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"`ip netns add` fails here (/run/netns): {probe.stderr.strip()}")


def _compute(hosts: Hosts, host: str, state_dir: Path, mq, pg) -> subprocess.Popen:
    """`novalab service nova-compute` on ``host`` (started; see ``_ready``)."""
    state = StateDir(state_dir).make()
    env = dict(os.environ, PYTHONUNBUFFERED="1", NOVALAB_TRANSPORT_URL=mq.url,
               NOVALAB_DB_URL=pg.url("novalab"), NOVALAB_BIND_ADDRESS=HOSTS[host],
               NOVALAB_URLS_FROM="catalog", NOVALAB_VIF_PLUGGING_TIMEOUT="10",
               NOVALAB_METADATA_SECRET=shared_secret(state_dir.parents[1] / "controller"
                                                     / ".novalab-up"))
    with hosts.inside(host), open(state.log(Unit("nova-compute", host)), "a") as log:
        return subprocess.Popen([*NOVALAB, "service", "nova-compute", "--host", host,
                                 "--state-dir", str(state_dir)], env=env, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)


def _ready(process: subprocess.Popen, host: str, state_dir: Path) -> None:
    """Until the compute host's service wrote its ready file (it is serving)."""
    state, unit = StateDir(state_dir), Unit("nova-compute", host)
    deadline = time.monotonic() + 60
    while state.ready(unit) is None:
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"nova-compute on {host} not ready:\n"
                        f"{state.log(unit).read_text()[-4000:]}")
        time.sleep(0.2)


def _stop(processes: list[subprocess.Popen]) -> None:
    """SIGTERM to all, then wait for each (SIGKILL after 20 s)."""
    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def _down(state_dir: Path) -> None:
    """SIGTERM to every controller unit at once (the test's broker and database go next,
    so their order does not matter), then `novalab down`, which checks none is left:
    `down` alone stops them one after the other, some 25 s here."""
    from novalab.reference.deploy import health

    for path in StateDir(state_dir).pid_files():
        pid, unit_id = int(path.read_text()), path.name.removesuffix(".pid")
        if health.alive(pid) and health.is_service_process(pid, unit_id):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
    _run([*NOVALAB, "down", "--state-dir", str(state_dir)])


@pytest.fixture(scope="module")
def cloud():
    """The three hosts and their services; the state directory of each."""
    _skip_unless_namespaces()
    with contextlib.ExitStack() as stack:
        started = time.monotonic()
        assert stack.enter_context(private_services.network_namespace())
        hosts = Hosts()
        stack.callback(hosts.remove)
        hosts.make()
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="novalab-hosts-")))
        dirs = {host: root / host / ".novalab-up" for host in HOSTS}
        phases = {"namespaces": time.monotonic() - started}
        with hosts.inside("controller"):
            mq = stack.enter_context(private_services.private_rabbitmq(
                host=HOSTS["controller"]))
            phases["rabbitmq"] = time.monotonic() - started - sum(phases.values())
            pg = stack.enter_context(private_services.private_postgres(
                host=HOSTS["controller"]))
            phases["postgresql"] = time.monotonic() - started - sum(phases.values())
            stack.callback(_down, dirs["controller"])
            _run([*NOVALAB, "up", "--computes", "0", "--transport", mq.url,
                  "--db", pg.url("novalab"), "--state-dir", str(dirs["controller"]),
                  "--bind-address", HOSTS["controller"], "--vif-plugging-timeout", "10"])
            phases["controller up"] = time.monotonic() - started - sum(phases.values())
        for host in dirs:  # what an operator copies to each host (docs/multihost.md)
            if host != "controller":
                StateDir(dirs[host]).make()
                shutil.copy2(dirs["controller"] / "credentials.json", dirs[host])
                (dirs[host] / "ceph").mkdir(mode=0o700, exist_ok=True)
                shutil.copy2(dirs["controller"] / "ceph" / "keyring", dirs[host] / "ceph")
        computes = {host: _compute(hosts, host, dirs[host], mq, pg)
                    for host in ("compute-1", "compute-2")}
        stack.callback(_stop, list(computes.values()))
        for host, process in computes.items():
            _ready(process, host, dirs[host])
        phases["computes"] = time.monotonic() - started - sum(phases.values())
        print("\nthree hosts up in " + ", ".join(f"{k} {v:.1f} s" for k, v in phases.items()))
        yield dirs


def _boot_two(state_dir: Path) -> tuple[str, list[dict]]:
    """One traced request for two servers, polled to ACTIVE: (trace id, servers)."""
    from novalab.tracing.http import http_client
    from novalab.tracing.setup import Telemetry

    record = StateDir(state_dir).load()
    telemetry = Telemetry(file_path=StateDir(state_dir).trace_file("novalab-client"),
                          otlp=False)
    provider = telemetry.provider("novalab-client")
    try:
        with http_client(provider, trace_key=context_key(shared_secret(state_dir))) as http:
            client = CloudClient(record["os_env"]["OS_AUTH_URL"], http)
            tracer = provider.get_tracer("novalab.client")
            with tracer.start_as_current_span("openstack server create") as root:
                client.authenticate("demo", PERSONA_PASSWORD, "demo")
                flavor, image = client.find_flavor("m1.nano"), client.find_image("cirros")
                client.create_server("spread", flavor["id"], image["id"], min_count=2)
                deadline = time.monotonic() + 60
                while True:
                    response = http.get(f"{client.endpoint('compute')}/servers/detail",
                                        params={"name": "spread"}, headers=client._headers())
                    servers = response.json()["servers"]
                    if len(servers) == 2 and all(s["status"] in ("ACTIVE", "ERROR")
                                                 for s in servers):
                        break
                    assert time.monotonic() < deadline, f"not settled in 60 s: {servers}"
                    time.sleep(0.3)
            trace_id = format(root.get_span_context().trace_id, "032x")
    finally:
        telemetry.shutdown()
    return trace_id, servers


def test_one_boot_traced_across_three_hosts(cloud, tmp_path):
    started = time.monotonic()
    trace_id, servers = _boot_two(cloud["controller"])
    assert [s["status"] for s in servers] == ["ACTIVE", "ACTIVE"], servers
    output, merged = tmp_path / "trace.json", tmp_path / "merged"
    collected = _run([*TRACE, "collect", *[a for d in cloud.values()
                                           for a in ("--state-dir", str(d))],
                      "--trace-id", trace_id, "--into", str(merged), "-o", str(output)])
    assert "on hosts compute-1, compute-2, controller" in collected.stderr, collected.stderr
    ips: dict[str, set] = {}
    services: dict[str, set] = {}
    for resource_spans in json.loads(output.read_text())["resourceSpans"]:
        resource = decode_attributes(resource_spans["resource"]["attributes"])
        if not any(scope["spans"] for scope in resource_spans["scopeSpans"]):
            continue
        host = resource.get(attr.HOST_NAME)
        ips.setdefault(host, set()).update(resource.get(attr.HOST_IP) or [])
        services.setdefault(host, set()).add(resource[attr.SERVICE_NAME])
    for host, address in HOSTS.items():
        assert ips.get(host) == {address}, (host, ips)
    assert {"keystone", "nova-api", "nova-scheduler", "nova-conductor", "glance-api",
            "neutron-server"} <= services["controller"]
    for host in ("compute-1", "compute-2"):
        assert {"nova-compute", "neutron-l2-agent"} <= services[host], services
    # Every API, and the trace page, at the controller's address.
    record = StateDir(cloud["controller"]).load()
    assert record["os_env"]["OS_AUTH_URL"] == f"http://{HOSTS['controller']}:5000/v3"
    assert record["web_url"] == f"http://{HOSTS['controller']}:8700"
    assert all(url.startswith(f"http://{HOSTS['controller']}:")
               for key, url in record["urls"].items() if key != "ceph-mon")
    # The merged store is a store like any host's: `trace list` finds the boot there.
    listed = _run([*TRACE, "list", "--state-dir", str(merged), "--json", "--no-steps"])
    assert trace_id in listed.stdout
    # The diagrams say who ran where.
    trace = load_trace(output)
    on = {p.name: p.hosts for p in sequence.from_trace(trace).participants}
    assert on["nova-compute"] == ("compute-1", "compute-2") and on["nova-api"] == \
        ("controller",), on
    assert 'label="host controller (198.18.0.1)"' in callgraph.CallGraph(trace).to_dot()
    print(f"\nboot of two servers, collect and checks: {time.monotonic() - started:.1f} s")


# -- the pieces, without namespaces -------------------------------------------------------


def test_advertised_address_defaults_to_the_bind_address():
    from novalab.reference.deploy.processes import DeployError, advertised

    assert advertised("198.18.0.1", None) == "198.18.0.1"
    assert advertised("0.0.0.0", "198.18.0.1") == "198.18.0.1"
    with pytest.raises(DeployError, match="--advertise-address"):
        advertised("0.0.0.0", None)


def test_catalog_urls_are_what_up_registered(tmp_path):
    """A compute host's --urls-from catalog reads back the URLs `up` registered."""
    from novalab.reference.deploy import migrations
    from novalab.reference.deploy.processes import catalog_urls, register_catalog

    db_url = f"sqlite:///{tmp_path / 'novalab.db'}"
    migrations.upgrade(db_url)
    served = {key: f"http://198.18.0.1:{port}" for key, port in
              (("keystone", 5000), ("nova", 8774), ("cinder", 8776), ("glance", 9292),
               ("neutron", 9696), ("placement", 8778), ("ceph-rgw", 7480))}
    register_catalog(db_url, dict(served, metadata="http://198.18.0.1:8775"))
    assert catalog_urls(db_url) == served  # the catalog has no metadata API, as upstream


def test_merge_stores_keeps_every_hosts_files(tmp_path):
    from novalab.tracing.collect import merge_stores
    from novalab.tracing.store import TraceStore

    recorded = Path(__file__).parents[2] / "diagrams" / "fixtures" / \
        "boot-rabbitmq-postgresql.otlp.jsonl"
    for host in ("controller", "compute-1"):
        (tmp_path / host / "traces").mkdir(parents=True)
        shutil.copyfile(recorded, tmp_path / host / "traces" / "nova-api.jsonl")
    merged = merge_stores([tmp_path / "controller", tmp_path / "compute-1" / "traces"],
                          tmp_path / "merged")
    assert merged.files == 2 and "compute-1" in merged.hosts
    assert sorted(p.name for p in (tmp_path / "merged" / "traces").glob("*.jsonl")) == \
        ["1-controller-nova-api.jsonl", "2-compute-1-nova-api.jsonl"]
    assert TraceStore(tmp_path / "merged").refresh().rows()
