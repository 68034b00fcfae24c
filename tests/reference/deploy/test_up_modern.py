"""``novalab up --topology modern --computes 2``: placement as a process of its own, the
topology in every process and in state.json, and every unit's RPC topics in ``status``.

As in ``test_up_faults.py``, the deployment runs in a network namespace of its own
(so it binds the standard ports whatever else runs on the machine), on a RabbitMQ
node and a PostgreSQL cluster of this module's own (``tests/private_services.py``).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import loopback
import private_services
import pytest

from novalab.reference.common.credentials import Credentials
from novalab.reference.common.wiring import STANDARD_PORTS
from novalab.reference.deploy import processes
from novalab.reference.deploy.boot import BootRequest
from novalab.reference.deploy.client import CloudClient
from novalab.reference.deploy.running import boot_against_running
from novalab.reference.deploy.statedir import StateDir
from novalab.tracing.model import Trace
from novalab.tracing.otlp_json import spans_from_otlp

# e2e: `novalab up` on private RabbitMQ and PostgreSQL
pytestmark = [pytest.mark.amqp, pytest.mark.postgresql, pytest.mark.e2e]

NOVALAB = [sys.executable, "-m", "novalab.labs.cli"]


def novalab(*args, check=True) -> subprocess.CompletedProcess:
    # Wide, so rich neither wraps nor cuts the table's cells.
    result = subprocess.run([*NOVALAB, *args], capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, COLUMNS="250"))
    if check:
        assert result.returncode == 0, \
            f"novalab {' '.join(args)}:\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    return result


@pytest.fixture(scope="module")
def cloud():
    """The modern deployment, its state directory and the arguments `up` was given."""
    with contextlib.ExitStack() as stack:
        isolated = stack.enter_context(private_services.network_namespace())
        if not isolated:
            busy = sorted(p for p in STANDARD_PORTS.values() if loopback.port_open(p))
            if busy:
                pytest.skip(f"no network namespace here (not root) and standard ports {busy} "
                            "are in use; novalab up runs on the standard ports")
        mq = stack.enter_context(private_services.private_rabbitmq())
        mq.add_vhost("nova_cell1")  # cell1's broker, as DevStack's stack.sh makes it
        pg = stack.enter_context(private_services.private_postgres())
        state_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="novalab-up-")))
        args = ["--computes", "2", "--transport", mq.url, "--db", pg.url("novalab"),
                "--state-dir", str(state_dir), "--web-port", "0"]
        stack.callback(novalab, "down", "--state-dir", str(state_dir), check=False)
        up = novalab("up", *args, "--topology", "modern")
        yield {"state": StateDir(state_dir), "args": args, "up": up}


def _pids(state: StateDir) -> dict[str, int]:
    return {path.name.removesuffix(".pid"): int(path.read_text()) for path in state.pid_files()}


def _admin(state: StateDir, http: httpx.Client) -> CloudClient:
    record = state.load()
    client = CloudClient(record["os_env"]["OS_AUTH_URL"], http)
    client.authenticate("admin", Credentials.of(state.root).admin, "admin")
    return client


def test_placement_runs_as_a_process_of_its_own_in_the_catalog(cloud):
    state = cloud["state"]
    pids = _pids(state)
    assert set(pids) == {u.id for u in processes.plan(2, web=False, topology="modern")}
    assert {"placement-api", "nova-super-conductor", "nova-conductor", "nova-scheduler",
            "nova-compute-compute-1", "nova-compute-compute-2"} <= set(pids)
    assert len(set(pids.values())) == len(pids)  # each its own process
    ready = {unit: json.loads((state.root / "run" / f"{unit}.ready").read_text())
             for unit in pids}
    assert ready["placement-api"]["http"] == {"placement": "http://127.0.0.1:8778"}
    # What `up` gave each process is what each built its cloud with.
    assert {unit: r["topology"] for unit, r in ready.items()} == dict.fromkeys(pids, "modern")
    record = state.load()
    assert record["topology"] == "modern"
    assert record["urls"]["placement"] == "http://127.0.0.1:8778"
    with httpx.Client(timeout=30) as http:
        client = _admin(state, http)
        assert client.endpoint("placement") == "http://127.0.0.1:8778"
        assert http.get("http://127.0.0.1:8778/").status_code == 200
        # Each compute host's process found placement and reported its node to it.
        providers = http.get("http://127.0.0.1:8778/resource_providers",
                             headers={**client._headers(),
                                      "OpenStack-API-Version": "placement 1.14"})
        assert providers.status_code == 200, providers.text
        assert {"compute-1", "compute-2"} <= \
            {p["name"] for p in providers.json()["resource_providers"]}


def test_status_shows_the_topology_and_every_units_rpc_topics(cloud):
    state = cloud["state"]
    status = novalab("status", "--state-dir", str(state.root))
    assert "novalab services (topology modern)" in status.stderr
    assert "unhealthy" not in status.stderr and " down " not in status.stderr
    topics = {unit: json.loads((state.root / "run" / f"{unit}.ready").read_text())["topics"]
              for unit in _pids(state)}
    # Neutron's RPC servers are listed too: the server's, the DHCP agent's, and each
    # compute host's L2 agent (in its nova-compute process).
    assert {t.split(".", 1)[0] for t in topics["neutron-server"]} == \
        {"q-plugin", "q-reports-plugin"}
    assert [t.split(".", 1)[0] for t in topics["neutron-dhcp-agent"]] == ["dhcp_agent"]
    for host in ("compute-1", "compute-2"):
        assert {"compute." + host, "q-agent-notifier-port-update." + host,
                "q-agent-notifier-port-delete." + host} <= set(topics[f"nova-compute-{host}"])
    assert topics["nova-conductor"] and topics["nova-scheduler"] and topics["cinder-volume"]
    # The super conductor and cell1's conductor: the same topic on two brokers' vhosts.
    assert [t.split(".", 1)[0] for t in topics["nova-super-conductor"]] == ["conductor"]
    assert [t.split(".", 1)[0] for t in topics["nova-conductor"]] == ["conductor"]
    for unit, listed in topics.items():
        for topic in listed:
            assert topic in status.stderr, f"{unit}'s {topic} is not in status"


def test_a_boot_on_the_modern_deployment_ends_active_and_shows_the_modern_flow(cloud):
    state = cloud["state"]
    result = boot_against_running(state.root, BootRequest(name="modern-up", volume_size=None))
    assert result.active, result.server
    trace = Trace.of(spans_from_otlp(result.document))
    assert "placement-api" in trace.services
    # `flow check` with no --flow projects it onto the table of the chain that ran.
    check = subprocess.run([sys.executable, "-m", "novalab.labs.cli", "flow", "check",
                            "--state-dir", str(state.root), "--server", "modern-up"],
                           capture_output=True, text=True, timeout=120)
    head = check.stdout.splitlines()[:2]
    assert head[0].startswith("flow modern: "), check.stdout[-2000:] + check.stderr
    assert head[1].startswith("picked from the trace: span "
                              "'ComputeTaskManager.schedule_and_build_instances' of "
                              "nova-super-conductor")


def test_up_keeps_the_running_topology_and_refuses_another(cloud):
    state, args = cloud["state"], cloud["args"]
    before = _pids(state)
    refused = novalab("up", *args, "--topology", "classic", check=False)
    assert refused.returncode == 2
    assert "topology (modern there, classic asked)" in refused.stderr
    assert "novalab down" in refused.stderr
    again = novalab("up", *args)  # no --topology: the running deployment's
    assert "placement-api" in again.stderr and "already running" in again.stderr
    assert _pids(state) == before
    assert state.load()["topology"] == "modern"
