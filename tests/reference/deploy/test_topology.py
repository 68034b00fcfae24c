"""``--topology classic|modern`` on boot, serve, up and service: parsing, errors, and
what the option guarantees (the services that run, the catalog, what is recorded).

The whole modern deployment under ``novalab up`` is in ``test_up_modern.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx
import pytest
from click.testing import CliRunner

from novalab.labs.cli import main
from novalab.reference.common.credentials import PERSONA_PASSWORD
from novalab.reference.deploy import boot as boot_module
from novalab.reference.deploy import migrations, processes
from novalab.reference.deploy.client import CloudClient
from novalab.reference.deploy.embedded import create_schema
from novalab.reference.deploy.statedir import ENV_TOPOLOGY, StateDir, Unit

COMMANDS = (["boot"], ["serve"], ["up"], ["service", "keystone"])


def invoke(*args, **kwargs):
    return CliRunner().invoke(main, [str(a) for a in args], **kwargs)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_help_says_what_each_topology_is(command):
    text = " ".join(invoke(*command, "--help").output.split())
    assert "--topology [classic|modern]" in text
    assert "classic: the Grizzly-era chain the 58-step table draws: nova-api casts " \
           "run_instance to the scheduler" in text
    assert "modern: Nova as since Pike" in text
    for words in ("API database", "super conductor", "select_destinations", "placement"):
        assert words in text


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_topology_that_does_not_exist_is_refused(command, tmp_path):
    result = invoke(*command, "--topology", "havana", "--state-dir", tmp_path)
    assert result.exit_code == 2
    assert "Invalid value for '--topology': 'havana' is not one of 'classic', 'modern'" \
        in result.output


def test_boot_on_the_running_cloud_takes_its_topology_from_it(tmp_path):
    result = invoke("boot", "--cloud", "running", "--topology", "modern", "--state-dir",
                    tmp_path)
    assert result.exit_code == 2
    assert "--topology: only for the embedded cloud" in result.output


@pytest.mark.parametrize("topology", ["classic", "modern"])
def test_boot_with_a_topology(topology, tmp_path, monkeypatch):
    """What --topology guarantees of the embedded cloud, seen while the boot runs:
    placement-api served and in keystone's catalog exactly when modern; ACTIVE."""
    seen = {}
    original = boot_module.boot

    def probing_boot(cloud, request, **kwargs):
        seen["topology"] = cloud.config.topology
        with httpx.Client(timeout=10) as http:
            client = CloudClient(cloud.identity_url, http)
            client.authenticate("demo", PERSONA_PASSWORD, "demo")
            seen["catalog"] = dict(client.catalog)
            if "placement" in cloud.urls:
                seen["placement"] = http.get(f"{cloud.urls['placement']}/").status_code
        return original(cloud, request, **kwargs)

    monkeypatch.setattr(boot_module, "boot", probing_boot)
    args = ["boot", "--out", tmp_path / "out", "--state-dir", tmp_path / "state",
            "--no-diagrams", "--no-volume"]
    if topology == "modern":
        args += ["--topology", "modern"]  # classic: the default
    result = invoke(*args)
    assert result.exit_code == 0, result.output  # 0 only when the server is ACTIVE
    assert "ACTIVE" in result.output and f"topology {topology})" in result.output
    assert seen["topology"] == topology
    if topology == "modern":
        assert seen["placement"] == 200
        assert seen["catalog"]["placement"].startswith("http://127.0.0.1:")
    else:
        assert "placement" not in seen and "placement" not in seen["catalog"]
    assert {"compute", "image", "network", "volumev3"} <= set(seen["catalog"])


# -- up and service: what reaches each process, what state.json keeps -----------------------


def _fake_service(unit: Unit) -> subprocess.Popen:
    """A process that `status` and `up` take for ``unit``'s (its argv says so)."""
    words = ["service", unit.name] + (["--host", unit.host] if unit.host else [])
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", *words])


@pytest.fixture
def running(tmp_path):
    """A state directory where a classic deployment's keystone is "running"."""
    state = StateDir(tmp_path / "up").make()
    db_url = f"sqlite:///{tmp_path / 'novalab.db'}"
    unit = Unit("keystone")
    process = _fake_service(unit)
    state.pid_file(unit).write_text(f"{process.pid}\n")
    state.save({"version": 1, "state_dir": str(state.root), "computes": 1,
                "transport_url": "amqp://guest:guest@127.0.0.1:1/", "db_url": db_url,
                "topology": "classic", "units": [unit.to_dict()]})
    yield state, db_url, process
    process.kill()
    process.wait()


def test_up_refuses_another_topology_on_a_running_deployment(running):
    state, db_url, _process = running
    result = invoke("up", "--topology", "modern", "--state-dir", state.root, "--db", db_url,
                    "--transport", "amqp://guest:guest@127.0.0.1:1/")
    assert result.exit_code == 2
    assert "a deployment already runs in" in result.output
    assert "topology (classic there, modern asked)" in result.output
    assert "novalab down" in result.output
    assert json.loads(state.state_file.read_text())["topology"] == "classic"  # untouched


def test_up_without_topology_keeps_the_running_one(running, monkeypatch):
    state, db_url, _process = running

    class Stop(Exception):
        pass

    def stop_at_broker(url):  # the first step after the options are settled
        raise Stop

    monkeypatch.setattr(processes.preflight, "check_broker", stop_at_broker)
    options = processes.UpOptions(transport_url="amqp://guest:guest@127.0.0.1:1/",
                                  db_url=db_url, state_dir=state.root)
    with pytest.raises(Stop):
        processes.up(options, echo=lambda line: None)
    assert options.topology == "classic"


def test_up_plans_placement_and_the_super_conductor_only_for_modern():
    classic = {u.id for u in processes.plan(2, web=False)}
    modern = {u.id for u in processes.plan(2, web=False, topology="modern")}
    assert modern - classic == {"placement-api", "nova-super-conductor"}
    assert {"nova-conductor", "nova-scheduler", "nova-compute-compute-2"} <= classic


def test_up_passes_the_topology_to_every_process(tmp_path, monkeypatch):
    started = {}

    class FakePopen:
        pid = 4242

        def __init__(self, command, env, **kwargs):
            started[command[command.index("service") + 1]] = env

    monkeypatch.setattr(processes.subprocess, "Popen", FakePopen)
    state = StateDir(tmp_path).make()
    for topology in ("modern", "classic"):
        options = processes.UpOptions(topology=topology)
        for unit in processes.plan(1, web=False, topology=topology):
            processes._spawn(unit, state, options)
        assert {env[ENV_TOPOLOGY] for env in started.values()} == {topology}
        assert ("placement-api" in started) == (topology == "modern")
        started.clear()


def test_service_reads_the_topology_up_gives_it(monkeypatch, tmp_path):
    given = {}
    monkeypatch.setattr(migrations, "current", lambda url: "head")
    monkeypatch.setattr(migrations, "head", lambda: "head")
    monkeypatch.setattr(processes, "run_service",
                        lambda name, host, **kwargs: given.update(kwargs, name=name))
    runner = CliRunner()
    result = runner.invoke(main, ["service", "placement-api", "--state-dir",
                                          str(tmp_path)], env={ENV_TOPOLOGY: "modern"})
    assert result.exit_code == 0, result.output
    assert given["topology"] == "modern" and given["name"] == "placement-api"
    result = runner.invoke(main, ["service", "keystone", "--state-dir", str(tmp_path)],
                           env={ENV_TOPOLOGY: None})
    assert result.exit_code == 0 and given["topology"] == "classic"


def test_placement_is_no_part_of_a_classic_cloud(tmp_path):
    with pytest.raises(processes.DeployError, match="placement-api is no part of a classic "
                                                    "cloud .--topology modern"):
        processes.run_service("placement-api", None, transport_url="memory:///x",
                              db_url="sqlite://", state_dir=tmp_path, topology="classic")
    with pytest.raises(processes.DeployError, match="no topology 'havana'"):
        processes.run_service("keystone", None, transport_url="memory:///x",
                              db_url="sqlite://", state_dir=tmp_path, topology="havana")


def test_status_shows_the_topology_and_each_units_topics(tmp_path):
    """What `status` prints, from what the units' ready files say (the real ones:
    test_up_modern.py)."""
    state = StateDir(tmp_path / "up").make()
    db_url = f"sqlite:///{tmp_path / 'novalab.db'}"
    create_schema(db_url)
    units = {Unit("neutron-server"): ["q-plugin.ctl", "q-reports-plugin.ctl"],
             Unit("nova-compute", "compute-1"): ["compute.compute-1",
                                                 "q-agent-notifier-port-update.compute-1"]}
    fakes = []
    try:
        for unit, topics in units.items():
            fakes.append(process := _fake_service(unit))
            state.pid_file(unit).write_text(f"{process.pid}\n")
            state.ready_file(unit).write_text(json.dumps(
                {"pid": process.pid, "unit": unit.id, "topics": topics, "http": {}}))
        state.save({"db_url": db_url, "topology": "modern", "state_dir": str(state.root),
                    "units": [u.to_dict() for u in units]})
        deadline = time.monotonic() + 10  # until /proc shows the fakes' argv
        while not all(processes._running(state, u) for u in units):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        rows = {row.unit: row for row in processes.status(state.root)}
        assert {unit: rows[unit].topics for unit in units} == units
        result = CliRunner().invoke(main, ["status", "--state-dir", str(state.root)],
                                    env={"COLUMNS": "250"})  # rich wraps no cell
        assert "novalab services (topology modern)" in result.output
        for topics in units.values():
            for topic in topics:
                assert topic in result.output
    finally:
        for process in fakes:
            process.kill()
            process.wait()
