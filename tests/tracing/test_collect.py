"""Per-process trace files merged into one trace; an untraced client's session stitched."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from opentelemetry import trace

from novalab.tracing import collect, stitch
from novalab.tracing.setup import Telemetry

CLI = "openstacksdk/4.0 keystoneauth1/5.0 python-requests/2.32 CPython/3.11"
SERVER_ID = "5d3c0a8e-0000-4000-8000-00000000abcd"
SECOND = 1_000_000_000


class Process:
    """One service process writing its own trace file, as `novalab service` does."""

    def __init__(self, directory, service):
        self.telemetry = Telemetry(file_path=directory / f"{service}.jsonl", otlp=False)
        self.tracer = self.telemetry.tracer(service)

    def request(self, method, route, path, start, *, agent=CLI, parent=None, children=()):
        """A SERVER span (a new trace unless ``parent``), with INTERNAL children."""
        context = trace.set_span_in_context(parent) if parent else None
        span = self.tracer.start_span(f"{method} {route}", context=context,
                                      kind=trace.SpanKind.SERVER, start_time=start, attributes={
                                          "http.request.method": method, "http.route": route,
                                          "url.path": path, "user_agent.original": agent,
                                          "client.address": "127.0.0.1"})
        for name, attributes in children:
            self.tracer.start_span(name, context=trace.set_span_in_context(span),
                                   start_time=start + 1000,
                                   attributes=attributes).end(end_time=start + 2000)
        span.end(end_time=start + SECOND // 10)
        return span

    def close(self):
        self.telemetry.shutdown()


@pytest.fixture
def processes(tmp_path):
    made = {}

    def get(service):
        if service not in made:
            made[service] = Process(tmp_path, service)
        return made[service]

    yield get
    for process in made.values():
        process.close()


def _flush(processes, *services):
    for service in services:
        processes(service).telemetry.force_flush()


def _records(document):
    return [collect.SpanRecord(rs["resource"], ss["scope"], span)
            for rs in document["resourceSpans"] for ss in rs["scopeSpans"]
            for span in ss["spans"]]


def test_one_trace_from_many_files_regrouped_by_resource(tmp_path, processes):
    api, conductor = processes("nova-api"), processes("nova-conductor")
    with api.tracer.start_as_current_span("POST /v2.1/servers") as root:
        with conductor.tracer.start_as_current_span("ConductorManager.instance_update"):
            pass
        with api.tracer.start_as_current_span("API.create"):
            pass
    with api.tracer.start_as_current_span("unrelated"):
        pass
    _flush(processes, "nova-api", "nova-conductor")
    trace_id = format(root.get_span_context().trace_id, "032x")
    document = collect.collect(tmp_path, trace_id=trace_id, timeout=2)
    services = {collect.attributes(rs["resource"])["service.name"]: rs
                for rs in document["resourceSpans"]}
    assert set(services) == {"nova-api", "nova-conductor"}
    names = [s["name"] for ss in services["nova-api"]["scopeSpans"] for s in ss["spans"]]
    assert sorted(names) == ["API.create", "POST /v2.1/servers"]
    assert collect.summary(document)["trace_ids"] == {trace_id}


def test_a_span_exported_twice_counts_once(tmp_path, processes):
    api = processes("nova-api")
    with api.tracer.start_as_current_span("GET /v2.1/servers/<server_id>"):
        pass
    _flush(processes, "nova-api")
    path = tmp_path / "nova-api.jsonl"
    path.write_text(path.read_text() * 2)
    assert collect.summary(collect.to_document(collect.read_dir(tmp_path)))["spans"] == 1


def test_unknown_trace_and_missing_choice_are_errors(tmp_path, processes):
    processes("keystone")
    with pytest.raises(LookupError, match="no span of trace"):
        collect.collect(tmp_path, trace_id="0" * 32, timeout=0.1)
    with pytest.raises(LookupError, match="choose a trace"):
        collect.collect(tmp_path)


def test_latest_skips_health_probes_and_periodic_work(tmp_path, processes):
    api, compute = processes("nova-api"), processes("nova-compute")
    user = api.request("GET", "/v2.1/servers", "/v2.1/servers", 10 * SECOND)
    api.request("GET", "/", "/", 20 * SECOND, agent="novalab-health/1")
    compute.tracer.start_span("ComputeManager.report_state",
                              start_time=30 * SECOND).end(end_time=31 * SECOND)
    _flush(processes, "nova-api", "nova-compute")
    assert collect.latest_trace_id(collect.read_dir(tmp_path)) == \
        format(user.get_span_context().trace_id, "032x")


def test_orphans_are_spans_whose_parent_is_missing(tmp_path, processes):
    api = processes("nova-api")
    with api.tracer.start_as_current_span("parent"):
        with api.tracer.start_as_current_span("child"):
            pass
    _flush(processes, "nova-api")
    records = collect.read_dir(tmp_path)
    assert collect.orphans(records) == []
    (child,) = collect.orphans([r for r in records if r.name == "child"])
    assert child.name == "child"


def _cli_session(processes):
    """What `openstack server create --wait` leaves behind: one trace per request."""
    keystone, api, glance = processes("keystone"), processes("nova-api"), processes("glance-api")
    spans = {
        "old-token": keystone.request("POST", "/v3/auth/tokens", "/v3/auth/tokens", 1 * SECOND),
        "discovery": keystone.request("GET", "/v3", "/v3", 99 * SECOND),
        "token": keystone.request("POST", "/v3/auth/tokens", "/v3/auth/tokens", 100 * SECOND),
        "flavor": api.request("GET", "/v2.1/flavors/<flavor_id>", "/v2.1/flavors/m1.nano",
                              101 * SECOND),
        "image": glance.request("GET", "/v2/images", "/v2/images", 102 * SECOND),
        "create": api.request("POST", "/v2.1/servers", "/v2.1/servers", 103 * SECOND,
                              children=[("API._provision_instances",
                                         {"nova.instance.uuid": SERVER_ID})]),
        "poll-1": api.request("GET", "/v2.1/servers/<server_id>", f"/v2.1/servers/{SERVER_ID}",
                              104 * SECOND),
        "poll-2": api.request("GET", "/v2.1/servers/<server_id>", f"/v2.1/servers/{SERVER_ID}",
                              106 * SECOND),
        "read": glance.request("GET", "/v2/images/<image_id>", "/v2/images/x", 107 * SECOND),
        # Not this session: another client, a health probe, and much later work.
        "other-agent": api.request("GET", "/v2.1/servers/<server_id>",
                                   f"/v2.1/servers/{SERVER_ID}", 105 * SECOND,
                                   agent="python-novaclient"),
        "probe": api.request("GET", "/", "/", 102 * SECOND, agent="novalab-health/1"),
        "later": api.request("GET", "/v2.1/flavors/detail", "/v2.1/flavors/detail",
                             200 * SECOND),
    }
    _flush(processes, "keystone", "nova-api", "glance-api")
    return {name: format(span.get_span_context().trace_id, "032x")
            for name, span in spans.items()}


def test_untraced_cli_session_is_stitched_with_links_and_provenance(tmp_path, processes):
    traces = _cli_session(processes)
    records = stitch.server_trace(tmp_path, SERVER_ID, timeout=2, settle=0.01)
    (root,) = collect.roots(records)
    assert root.name == stitch.STITCHED_ROOT
    assert root.resource_attr("service.name") == stitch.STITCHED_SERVICE
    assert root.attr("novalab.synthetic") is True
    links = {link["traceId"]: collect.attributes(link)["novalab.stitch.role"]
             for link in root.span["links"]}
    assert links == {traces["discovery"]: "discovery", traces["token"]: "token",
                     traces["flavor"]: "lookup", traces["image"]: "lookup",
                     traces["create"]: "create", traces["poll-1"]: "poll",
                     traces["poll-2"]: "poll", traces["read"]: "read"}
    assert {r.trace_id for r in records} == {root.trace_id}
    assert root.trace_id not in traces.values()
    # Every other span says where it came from; only the former roots got a new parent.
    others = [r for r in records if r is not root]
    assert {r.attr(stitch.ORIGINAL_TRACE_ID) for r in others} == set(links)
    assert all(r.parent_span_id for r in others)
    reparented = [r for r in others if r.attr(stitch.PARENT_INFERRED)]
    assert {r.parent_span_id for r in reparented} == {root.span_id}
    assert len(reparented) == len(links)
    assert not collect.orphans(records)
    assert root.start == min(r.start for r in others)


def test_a_traced_client_needs_no_stitching(tmp_path, processes):
    client, api = processes("novalab-client"), processes("nova-api")
    with client.tracer.start_as_current_span("openstack server create") as root:
        api.request("POST", "/v2.1/servers", "/v2.1/servers", 5 * SECOND, parent=root,
                    children=[("API.create", {"nova.instance.uuid": SERVER_ID})])
    _flush(processes, "novalab-client", "nova-api")
    records = stitch.server_trace(tmp_path, SERVER_ID, timeout=2, settle=0.01)
    assert {r.trace_id for r in records} == {format(root.get_span_context().trace_id, "032x")}
    assert not any(r.attr(stitch.ORIGINAL_TRACE_ID) for r in records)


def test_unknown_server_is_an_error(tmp_path, processes):
    _cli_session(processes)
    with pytest.raises(LookupError, match="created server"):
        stitch.server_trace(tmp_path, "no-such-server", timeout=0.05, settle=0.01)


def test_trace_collect_command(tmp_path, processes):
    from novalab.reference.deploy.commands import trace as trace_group

    traces = _cli_session(processes)
    state = tmp_path.parent / f"{tmp_path.name}-state"
    (state / "traces").parent.mkdir(exist_ok=True)
    (state / "traces").symlink_to(tmp_path)
    out = tmp_path.parent / f"{tmp_path.name}-trace.json"
    result = CliRunner().invoke(trace_group, ["collect", "--state-dir", str(state), "--latest",
                                              "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert collect.summary(json.loads(out.read_text()))["trace_ids"] == {traces["later"]}
    both = CliRunner().invoke(trace_group, ["collect", "--state-dir", str(state), "--latest",
                                            "--server", SERVER_ID])
    assert both.exit_code == 2


def test_a_trace_with_a_message_still_queued_is_incomplete(tmp_path):
    """No orphan, yet not whole: a cast was sent and nobody has processed it yet."""
    nova = Process(tmp_path, "nova-scheduler")
    with nova.tracer.start_as_current_span("SchedulerManager.run_instance"):
        send = nova.tracer.start_span("send compute.compute-1", kind=trace.SpanKind.PRODUCER)
        send.end()
    nova.telemetry.shutdown()
    records = collect.read_dir(tmp_path)
    assert not collect.orphans(records)
    assert collect.unanswered(r.hop for r in records) == {format(send.context.span_id, "016x")}
    assert collect.incomplete(r.hop for r in records)

    compute = Process(tmp_path, "nova-compute")
    compute.tracer.start_span("process compute.compute-1", kind=trace.SpanKind.CONSUMER,
                              context=trace.set_span_in_context(send)).end()
    compute.telemetry.shutdown()
    assert not collect.incomplete(r.hop for r in collect.read_dir(tmp_path))


def test_a_reply_is_consumed_through_its_link():
    """RPC replies: the caller's receive span links to the reply's send, not a child."""
    hops = [collect.Hop("a1", None, collect.SPAN_KIND_PRODUCER),
            collect.Hop("b2", "zz", collect.SPAN_KIND_CONSUMER, ["a1"])]
    assert collect.unanswered(hops) == set()
    assert collect.unanswered(hops[:1]) == {"a1"}


def test_an_http_request_waits_for_its_server_span():
    """An HTTP CLIENT span is answered by a SERVER child; other CLIENT spans (a SQL
    query, a libvirt call) reach peers that record nothing and wait for nothing."""
    request = collect.Hop("c1", "r0", collect.SPAN_KIND_CLIENT, http=True)
    query = collect.Hop("q1", "r0", collect.SPAN_KIND_CLIENT)
    assert collect.unanswered([request, query]) == {"c1"}
    served = collect.Hop("s1", "c1", collect.SPAN_KIND_SERVER)
    assert collect.unanswered([request, query, served]) == set()
