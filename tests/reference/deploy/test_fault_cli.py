"""``novalab fault``: each fault, injected with the command, really breaks an embedded boot.

For every fault: the boot ends ERROR (never BUILD) with the fault message the
catalog promises, the trace has the catalog's span with ERROR status in the
service it names, and after ``novalab fault clear`` the next boot is ACTIVE.
compute-crash needs processes of their own (``novalab up``): here its refusal
on an embedded cloud and the recovery that follows a crash, driven directly.
"""

from __future__ import annotations

import os
import re
import threading

import pytest
from click.testing import CliRunner
from opentelemetry.trace import StatusCode

from novalab.reference.common.context import get_admin_context
from novalab.reference.common.faults import CATALOG, EVENT, EVENT_NAME, Faults
from novalab.reference.deploy import fault_cli
from novalab.reference.deploy.boot import BootRequest, boot
from novalab.reference.deploy.client import ClientError
from novalab.reference.deploy.statedir import StateDir
from novalab.reference.nova.compute import manager as compute_manager

UUID = "[0-9a-f-]{36}"
# What `server show` says for each fault; <...> in the catalog's text, as patterns.
FAULT_MESSAGES = {
    "image-checksum": rf"^Build of instance {UUID} aborted: Image {UUID} is unacceptable: "
                      r"checksum mismatch$",
    "port-binding": rf"^Build of instance {UUID} aborted: Failed to allocate the network\(s\), "
                    rf"not rescheduling: Binding failed for port {UUID}, please check neutron "
                    r"logs for more information\.$",
    "volume-error": rf"^Build of instance {UUID} aborted: Failure prepping block device: "
                    rf"Volume {UUID} did not finish being created .* And its status is error\.$",
    "vif-plugged-timeout": rf"^Build of instance {UUID} aborted: Failed to allocate the "
                           r"network\(s\), not rescheduling: Virtual Interface creation failed: "
                           r"network-vif-plugged did not arrive within vif_plugging_timeout "
                           r"\(3 s\)$",
}


def run(*args, env=None):
    return CliRunner().invoke(fault_cli.fault, list(args), env=env, catch_exceptions=False)


def error_spans(spans, service):
    return {s.name for s in spans if s.status.status_code == StatusCode.ERROR
            and s.resource.attributes.get("service.name") == service}


def fault_events(spans):
    return [(s.resource.attributes.get("service.name"), s.name, e.attributes[EVENT_NAME])
            for s in spans for e in s.events if e.name == EVENT]


@pytest.mark.parametrize("name", sorted(FAULT_MESSAGES))
def test_each_fault_breaks_its_hop_until_cleared(name, cloud_factory):
    # A lab cloud waits a few seconds for network-vif-plugged, not upstream's 300.
    cloud = cloud_factory(vif_plugging_timeout=3) if name == "vif-plugged-timeout" \
        else cloud_factory()
    state_dir = str(cloud.config.state_dir)
    injected = run("inject", name, "--state-dir", state_dir)
    assert injected.exit_code == 0, injected.output
    assert f"injected {name}" in injected.output

    failed = boot(cloud, BootRequest(name=f"{name}-drill"))
    assert failed.server["status"] == "ERROR"
    assert re.match(FAULT_MESSAGES[name], failed.server["fault"]["message"]), \
        failed.server["fault"]["message"]
    service, span = CATALOG[name].error_span
    assert span in error_spans(failed.spans, service)
    assert [event[2] for event in fault_events(failed.spans)] == [name]
    assert fault_events(failed.spans)[0][0] == CATALOG[name].service

    cleared = run("clear", name, "--state-dir", state_dir)
    assert cleared.exit_code == 0 and f"cleared {name}" in cleared.output
    again = boot(cloud, BootRequest(name=f"{name}-after"))
    assert again.server["status"] == "ACTIVE", again.server.get("fault")
    assert fault_events(again.spans) == []


def test_an_unreachable_broker_fails_the_create_and_the_instance(cloud):
    state_dir = str(cloud.config.state_dir)
    assert run("inject", "broker-unreachable", "--state-dir", state_dir).exit_code == 0
    # nova-api's cast waits its RPC timeout (60 s) for the broker, as over RabbitMQ;
    # a shorter wait keeps the test short and changes nothing else.
    cloud.compute_api.scheduler_rpcapi.client.timeout = 0.5
    with pytest.raises(ClientError) as caught:
        boot(cloud, BootRequest(name="no-broker"))
    assert caught.value.status == 500  # nova-api's computeFault, as upstream's 500
    assert "the broker is unreachable" in str(caught.value)
    (instance,) = cloud.compute_api.get_all(get_admin_context(), all_tenants=True,
                                            name_match=lambda name: name == "no-broker")
    assert (instance["vm_state"], instance["task_state"]) == ("error", None)
    fault = cloud.compute_api.faults_for([instance])[instance["uuid"]]
    assert re.match(r"^Could not deliver a message to memory:///\w+: not confirmed within "
                    r"0\.5s; the broker is unreachable and the transport is reconnecting\.",
                    fault["message"]), fault["message"]
    spans = cloud.telemetry.finished_spans()
    assert "send scheduler" in error_spans(spans, "nova-api")
    assert ("nova-api", "send scheduler", "broker-unreachable") in fault_events(spans)

    assert run("clear", "--state-dir", state_dir).exit_code == 0
    cloud.compute_api.scheduler_rpcapi.client.timeout = 60
    assert boot(cloud, BootRequest(name="broker-back")).server["status"] == "ACTIVE"


def test_no_vif_plugging_timeout_means_no_wait(cloud_factory):
    cloud = cloud_factory(vif_plugging_timeout=0)
    Faults(cloud.config.state_dir).inject("vif-plugged-timeout")
    result = boot(cloud, BootRequest(name="no-wait", volume_size=None))
    assert result.server["status"] == "ACTIVE"  # upstream: vif_plugging_timeout = 0


# compute-crash -----------------------------------------------------------------------


def test_compute_crash_is_refused_on_an_embedded_cloud(tmp_path):
    result = run("inject", "compute-crash", "--state-dir", str(tmp_path))
    assert result.exit_code == 2
    assert "novalab up" in result.output and "embedded cloud" in result.output
    assert Faults(tmp_path).injected() == {}


def test_compute_crash_is_injected_on_novalab_up(tmp_path):
    StateDir(tmp_path).save({"transport_url": "amqp://guest:guest@127.0.0.1:5672/"})
    result = run("inject", "compute-crash", "--once", "--state-dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert Faults(tmp_path).injected()["compute-crash"]["once"] is True


def test_a_crashed_build_ends_error_when_compute_starts_again(cloud, login, monkeypatch):
    """What `novalab up` sees: the crash loses the build; the restart's init_host ends it.
    A crash scoped to a server's name strikes that server's build."""
    compute = cloud.computes[0]
    crashed = threading.Event()
    monkeypatch.setattr(compute_manager, "_crash", crashed.set)  # instead of os._exit
    compute.faults = Faults(cloud.config.state_dir, deployment="up")
    # As lab 10's service arms it: for the learner's fifth server alone, which
    # nova-compute knows by the name the build carries.
    compute.faults.inject("compute-crash", once=True, scope={"server": "crash-victim"})
    session = login(cloud)
    created = session.request("POST", f"{session.compute}/servers", json={"server": {
        "name": "crash-victim", "flavorRef": "42", "imageRef": cloud.cirros["id"]}})
    assert created.status_code == 202, created.text
    server_id = created.json()["server"]["id"]
    assert crashed.wait(30)
    assert compute.wait_for_builds()
    stale = cloud.compute_api.get(get_admin_context(), server_id)
    assert stale["vm_state"] == "building"  # nobody builds it: the process "died"

    compute.init_host()  # nova-compute starting again

    server = session.request("GET", f"{session.compute}/servers/{server_id}").json()["server"]
    assert server["status"] == "ERROR"
    assert re.match(rf"^Build of instance {server_id} aborted: nova-compute restarted during "
                    r"the build$", server["fault"]["message"])


# The command ---------------------------------------------------------------------------


def test_unknown_fault_names_the_known_ones(tmp_path):
    result = run("inject", "disk-full", "--state-dir", str(tmp_path))
    assert result.exit_code == 2
    assert "no fault 'disk-full'" in result.output
    for name in CATALOG:
        assert name in result.output
    assert run("clear", "disk-full", "--state-dir", str(tmp_path)).exit_code == 2


def test_broker_unreachable_on_rabbitmq_says_to_stop_rabbitmq(tmp_path):
    StateDir(tmp_path).save({"transport_url": "amqp://guest:guest@127.0.0.1:5672/"})
    result = run("inject", "broker-unreachable", "--state-dir", str(tmp_path))
    assert result.exit_code == 2
    assert "rabbitmqctl stop_app" in result.output


def test_list_shows_each_fault_and_what_is_on(tmp_path):
    Faults(tmp_path).inject("image-checksum")
    Faults(tmp_path).inject("volume-error", once=True)
    for project in ("ann", "bob"):  # two learners' drills (lab 10)
        Faults(tmp_path).inject("port-binding", once=True, scope={"project_id": project})
    result = CliRunner().invoke(fault_cli.fault, ["list", "--state-dir", str(tmp_path)],
                                env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): line for line in result.output.splitlines()
            if line.startswith("│") and line.split("│")[1].strip() in CATALOG}
    assert set(rows) == set(CATALOG)
    assert rows["image-checksum"].rstrip("│ ").endswith("active")
    assert rows["volume-error"].rstrip("│ ").endswith("once")
    assert rows["port-binding"].rstrip("│ ").endswith("2 scoped")
    assert rows["vif-plugged-timeout"].rstrip("│ ").endswith("-")
    assert "23-25" in rows["image-checksum"] and "ceph-rgw" in rows["image-checksum"]


def test_without_state_dir_the_deployment_is_located(tmp_path):
    (tmp_path / "traces").mkdir()
    result = run("inject", "port-binding", env={"NOVALAB_STATE_DIR": str(tmp_path)})
    assert result.exit_code == 0, result.output
    assert "port-binding" in Faults(tmp_path).injected()
    result = run("clear", env={"NOVALAB_STATE_DIR": str(tmp_path)})
    assert "cleared port-binding" in result.output


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes any directory")
def test_injecting_needs_write_access_to_the_state_dir(tmp_path):
    tmp_path.chmod(0o555)
    try:
        result = run("inject", "port-binding", "--state-dir", str(tmp_path))
    finally:
        tmp_path.chmod(0o755)
    assert result.exit_code == 1
    assert "administrator" in result.output


def test_novalab_has_the_fault_command():
    from novalab.labs.cli import main

    result = CliRunner().invoke(main, ["fault", "inject", "--help"])
    assert result.exit_code == 0
    assert "administrator" in result.output


def test_names_and_paths_print_as_written(tmp_path):
    """Issue 21, finding 15: rich read what the user typed as markup: an unknown fault
    named ``[/]`` crashed the command (MarkupError), ``[red]`` in a path vanished."""
    result = run("inject", "[/]x", "--state-dir", str(tmp_path))
    assert result.exit_code == 2
    assert "no fault '[/]x'" in result.output
    odd = tmp_path / "[red]lab:thumbs_up:"
    odd.mkdir()
    listed = CliRunner().invoke(fault_cli.fault, ["list", "--state-dir", str(odd)],
                                env={"COLUMNS": "250"})
    assert listed.exit_code == 0, listed.output
    assert f"faults of {odd}" in listed.output
