"""The shelve flow on a real shelve, offload and unshelve of one server.

One embedded cloud per topology (classic, modern), writing its spans to a trace
store as ``novalab serve`` does. A server is booted, then shelved and unshelved by a
client that sends no ``traceparent`` (as the ``openstack`` CLI): two requests,
two traces, which the flow sees as one session (``shelve.select``).
"""

from __future__ import annotations

import time

import click
import pytest
from click.testing import CliRunner
from conftest import Session

from novalab.diagrams.check import check
from novalab.diagrams.cli import register
from novalab.diagrams.flows import detect, get_flow
from novalab.diagrams.flows.model import RETURN
from novalab.diagrams.flows.shelve import SESSION_ROOT, select
from novalab.diagrams.load import load_trace
from novalab.reference.deploy.boot import BootRequest, boot
from novalab.reference.deploy.embedded import CloudConfig, EmbeddedCloud
from novalab.tracing import attributes as attr
from novalab.tracing.setup import Telemetry
from novalab.tracing.store import TraceStore

FLOW = get_flow("shelve")
TIMEOUT = 60  # seconds: bounds each wait, which fails saying what it saw


@click.group()
def novalab():
    """Stand-in for the `novalab` group of labs/cli.py."""


register(novalab)


def run(*args):
    return CliRunner().invoke(novalab, [str(a) for a in args], catch_exceptions=False)


def _act(session: Session, server_id: str, action: str, status: str) -> str:
    """POST the server action, wait for ``status``; the request id."""
    answer = session.request("POST", f"{session.compute}/servers/{server_id}/action",
                             json={action: None})
    assert answer.status_code == 202, answer.text
    _wait_status(session, server_id, status)
    return answer.headers["X-OpenStack-Request-ID"]


def _wait_status(session: Session, server_id: str, status: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while True:
        server = session.request("GET", f"{session.compute}/servers/{server_id}").json()["server"]
        seen = (server["status"], server["OS-EXT-STS:task_state"])
        if seen == (status, None):
            return
        assert server["status"] != "ERROR" and time.monotonic() < deadline, (seen, server)
        time.sleep(0.1)


@pytest.fixture(scope="module", params=["classic", "modern"])
def shelved(request, tmp_path_factory):
    """``(state_dir, server_id, {action: request id}, cloud)`` after a boot, a shelve
    (offloaded at once) and an unshelve, on each topology: the modern one adds the super
    conductor and placement's candidates and claims, which the rules must not mind."""
    state_dir = tmp_path_factory.mktemp(f"shelve-flow-{request.param}") / "cloud"
    telemetry = Telemetry(memory=True, otlp=False, file_path=state_dir / "traces" / "serve.jsonl")
    config = CloudConfig(state_dir=state_dir, topology=request.param)
    with EmbeddedCloud(config, telemetry) as cloud:
        result = boot(cloud, BootRequest(name="shelf"))
        assert result.active, result.server
        server_id = result.server["id"]
        session = Session(cloud, "demo", "demo")
        request_ids = {}
        try:
            for action, status in (("shelve", "SHELVED_OFFLOADED"), ("unshelve", "ACTIVE")):
                request_ids[action] = _act(session, server_id, action, status)
        finally:
            session.close()
        cloud.wait_idle()
        telemetry.force_flush()
        yield state_dir, server_id, request_ids, cloud
    telemetry.shutdown()


@pytest.fixture(scope="module")
def session_trace(shelved):
    state_dir, _server_id, _ids, _cloud = shelved
    return load_trace(select(TraceStore(state_dir), server="shelf", timeout=TIMEOUT))


def test_a_real_shelve_and_unshelve_match_every_step_in_order(shelved, session_trace):
    _state_dir, server_id, request_ids, cloud = shelved
    report = check(session_trace, FLOW)
    assert [r.step.number for r in report.results if not r.matched] == []
    assert report.summary == f"{len(FLOW.steps)}/{len(FLOW.steps)} steps matched, 0 out of order"
    # Two requests, two traces, joined under one synthetic root that links to both.
    root = session_trace.root
    assert (root.name, root.get(attr.NOVA_INSTANCE_UUID)) == (SESSION_ROOT, server_id)
    assert sorted(link.attributes[attr.NOVALAB_STITCH_ROLE] for link in root.links) == \
        ["shelve", "unshelve"]
    ids = {s.get(attr.OPENSTACK_REQUEST_ID) for s in session_trace}
    assert set(request_ids.values()) <= ids
    # The steps stand on what really ran: the shelve's cast went to the host, the
    # unshelve's through the conductor, which called the scheduler.
    assert report.result(4).span.get(attr.RPC_METHOD) == "shelve_instance"
    assert report.result(20).span.get(attr.NOVALAB_RPC_STYLE) == "call"
    assert report.result(26).span.host == "compute-1"
    assert detect(session_trace)[0] == "shelve"
    if cloud.config.topology == "modern":  # placement's candidates and claim, not drawn
        below = session_trace.descendants(report.result(21).span)
        assert {s.service for s in below} >= {"placement-api"}


def test_flow_check_and_diagram_find_the_session_in_the_store(shelved, session_trace, tmp_path):
    state_dir, _server_id, request_ids, _cloud = shelved
    by_name = run("flow", "check", "--flow", "shelve", "--server", "shelf",
                  "--state-dir", state_dir)
    assert by_name.exit_code == 0, by_name.output
    assert by_name.output.rstrip().endswith(
        f"{len(FLOW.steps)}/{len(FLOW.steps)} steps matched, 0 out of order")
    assert f"trace {session_trace.trace_id}" in by_name.output
    by_request = run("flow", "check", "--flow", "shelve", "--request-id",
                     request_ids["unshelve"], "--state-dir", state_dir)
    assert by_request.exit_code == 0
    assert f"trace {session_trace.trace_id}" in by_request.output
    # Without --flow, --server is the server's boot, projected onto a boot's table.
    boot_only = run("flow", "check", "--server", "shelf", "--state-dir", state_dir)
    assert boot_only.output.startswith(("flow classic", "flow modern")), boot_only.output[:200]
    svg = tmp_path / "shelve.svg"
    drawn = run("diagram", "--flow", "shelve", "--server", "shelf", "--state-dir", state_dir,
                "--format", "svg", "-o", svg)
    assert drawn.exit_code == 0, drawn.output
    text = svg.read_text()
    assert text.startswith("<svg") or "<svg" in text[:200]
    for step in (FLOW.step(1), FLOW.step(30)):
        assert step.text.split(":")[0] in text


def test_without_glance_spans_exactly_its_steps_are_missing(session_trace):
    """Steps to or from Glance (and nothing else) stand on glance-api's spans."""
    gone = load_trace([s for s in session_trace if s.service != "glance-api"])
    report = check(gone, FLOW)
    glance = {s.number for s in FLOW.steps
              if "Glance.api" in (s.source, s.target) and s.kind != RETURN}
    assert glance  # the table does draw Glance
    assert {r.step.number for r in report.results if r.missing} == glance
    assert not report.out_of_order


def test_a_server_never_offloaded_excuses_what_its_unshelve_did_not_do(shelved):
    """shelved_offload_time -1: the server stays SHELVED on its host and the unshelve is a
    start there (the conductor casts start_instance). What the conductor cast excuses the
    offload, the scheduling and the spawn; every other step still has to match."""
    state_dir, _server_id, _ids, cloud = shelved
    result = boot(cloud, BootRequest(name="kept", volume_size=None))
    assert result.active, result.server
    server_id = result.server["id"]
    compute = cloud.computes[0]
    compute.shelved_offload_time = -1
    session = Session(cloud, "demo", "demo")
    try:
        _act(session, server_id, "shelve", "SHELVED")
        _act(session, server_id, "unshelve", "ACTIVE")
    finally:
        compute.shelved_offload_time = 0
        session.close()
    cloud.wait_idle()
    report = check(load_trace(select(TraceStore(state_dir), server=server_id,
                                     timeout=TIMEOUT)), FLOW)
    excused = {r.step.number for r in report.results if r.excused}
    assert excused == {11, 12, 13, *range(19, 33)}
    assert "start_instance" in report.result(11).excused
    assert report.ok, [(r.step.number, r.precedes) for r in report.results
                       if r.missing or r.out_of_order]
    assert report.result(16).matched and report.result(18).matched


def test_the_notes_date_shelve_and_name_the_conductor_rpc():
    """Shelve and the conductor's unshelve came in Havana; the saves use Grizzly's RPC."""
    flow = get_flow("shelve")
    notes = {s.number: " ".join(s.notes) for s in flow.steps}
    assert not any("Juno" in text for text in notes.values())
    assert "Havana" in notes[16]
    assert "Grizzly" in notes[10] and "object_action" in notes[10]
