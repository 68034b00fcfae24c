"""Per-process trace files read back as one trace; an untraced client's session stitched."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from span_files import SECOND, SERVER_ID, Process, cli_session, flush

from novalab.tracing import collect, stitch
from novalab.tracing.model import Link, Span, frozen
from novalab.tracing.otlp_json import decode_attributes, spans_from_otlp


def test_one_trace_from_many_files_regrouped_by_resource(traces_dir, processes):
    api, conductor = processes("nova-api"), processes("nova-conductor")
    with api.tracer.start_as_current_span("POST /v2.1/servers") as root:
        with conductor.tracer.start_as_current_span("ConductorManager.instance_update"):
            pass
        with api.tracer.start_as_current_span("API.create"):
            pass
    with api.tracer.start_as_current_span("unrelated"):
        pass
    flush(processes, "nova-api", "nova-conductor")
    trace_id = format(root.get_span_context().trace_id, "032x")
    document = collect.to_document(collect.wait_for_trace(traces_dir, trace_id, timeout=2,
                                                          settle=0.01))
    services = {decode_attributes(rs["resource"]["attributes"])["service.name"]: rs
                for rs in document["resourceSpans"]}
    assert set(services) == {"nova-api", "nova-conductor"}
    names = [s["name"] for ss in services["nova-api"]["scopeSpans"] for s in ss["spans"]]
    assert sorted(names) == ["API.create", "POST /v2.1/servers"]
    assert collect.summary(document)["trace_ids"] == {trace_id}


def test_a_span_exported_twice_counts_once(traces_dir, processes):
    api = processes("nova-api")
    with api.tracer.start_as_current_span("GET /v2.1/servers/<server_id>"):
        pass
    flush(processes, "nova-api")
    path = traces_dir / "nova-api.jsonl"
    path.write_text(path.read_text() * 2)
    assert collect.summary(collect.to_document(collect.read_dir(traces_dir)))["spans"] == 1


def test_an_unknown_trace_reads_as_no_spans(traces_dir, processes):
    processes("keystone")
    assert collect.wait_for_trace(traces_dir, "0" * 32, timeout=0.05, settle=0.01) == []


def test_latest_skips_health_probes_and_periodic_work(traces_dir, processes):
    api, compute = processes("nova-api"), processes("nova-compute")
    user = api.request("GET", "/v2.1/servers", "/v2.1/servers", 10 * SECOND)
    api.request("GET", "/", "/", 20 * SECOND, agent="novalab-health/1")
    compute.tracer.start_span("ComputeManager.report_state",
                              start_time=30 * SECOND).end(end_time=31 * SECOND)
    flush(processes, "nova-api", "nova-compute")
    assert collect.latest_trace_id(collect.read_dir(traces_dir)) == \
        format(user.get_span_context().trace_id, "032x")


def test_orphans_are_spans_whose_parent_is_missing(traces_dir, processes):
    api = processes("nova-api")
    with api.tracer.start_as_current_span("parent"):
        with api.tracer.start_as_current_span("child"):
            pass
    flush(processes, "nova-api")
    spans = collect.read_dir(traces_dir)
    assert collect.orphans(spans) == []
    (child,) = collect.orphans([s for s in spans if s.name == "child"])
    assert child.name == "child"


def test_untraced_cli_session_is_stitched_with_links_and_provenance(traces_dir, processes):
    traces = cli_session(processes)
    spans = stitch.server_trace(traces_dir, SERVER_ID, timeout=2, settle=0.01)
    (root,) = collect.roots(spans)
    assert root.name == stitch.STITCHED_ROOT
    assert root.service == stitch.STITCHED_SERVICE
    assert root.get("novalab.synthetic") is True
    links = {link.trace_id: link.attributes["novalab.stitch.role"] for link in root.links}
    assert links == {traces["discovery"]: "discovery", traces["token"]: "token",
                     traces["flavor"]: "lookup", traces["image"]: "lookup",
                     traces["create"]: "create", traces["poll-1"]: "poll",
                     traces["poll-2"]: "poll", traces["read"]: "read"}
    assert {s.trace_id for s in spans} == {root.trace_id}
    assert root.trace_id not in traces.values()
    # Every other span says where it came from; only the former roots got a new parent.
    others = [s for s in spans if s is not root]
    assert {s.get(stitch.ORIGINAL_TRACE_ID) for s in others} == set(links)
    assert all(s.parent_id for s in others)
    reparented = [s for s in others if s.get(stitch.PARENT_INFERRED)]
    assert {s.parent_id for s in reparented} == {root.span_id}
    assert len(reparented) == len(links)
    assert not collect.orphans(spans)
    assert root.start_ns == min(s.start_ns for s in others)
    # Written out and read back, the stitched trace is the same trace.
    again = spans_from_otlp(collect.to_document(spans))
    assert {(s.span_id, s.parent_id) for s in again} == {(s.span_id, s.parent_id) for s in spans}


def test_a_traced_client_needs_no_stitching(traces_dir, processes):
    client, api = processes("novalab-client"), processes("nova-api")
    with client.tracer.start_as_current_span("openstack server create") as root:
        api.request("POST", "/v2.1/servers", "/v2.1/servers", 5 * SECOND, parent=root,
                    children=[("API.create", {"nova.instance.uuid": SERVER_ID})])
    flush(processes, "novalab-client", "nova-api")
    spans = stitch.server_trace(traces_dir, SERVER_ID, timeout=2, settle=0.01)
    assert {s.trace_id for s in spans} == {format(root.get_span_context().trace_id, "032x")}
    assert not any(s.get(stitch.ORIGINAL_TRACE_ID) for s in spans)


def test_unknown_server_is_an_error(traces_dir, processes):
    cli_session(processes)
    with pytest.raises(LookupError, match="created server"):
        stitch.server_trace(traces_dir, "no-such-server", timeout=0.05, settle=0.01)


def test_a_trace_with_a_message_still_queued_is_incomplete(traces_dir):
    """No orphan, yet not whole: a cast was sent and nobody has processed it yet."""
    nova = Process(traces_dir, "nova-scheduler")
    with nova.tracer.start_as_current_span("SchedulerManager.run_instance"):
        send = nova.tracer.start_span("send compute.compute-1", kind=trace.SpanKind.PRODUCER)
        send.end()
    nova.telemetry.shutdown()
    spans = collect.read_dir(traces_dir)
    assert not collect.orphans(spans)
    assert collect.unanswered(spans) == {format(send.context.span_id, "016x")}
    assert collect.incomplete(spans)

    compute = Process(traces_dir, "nova-compute")
    compute.tracer.start_span("process compute.compute-1", kind=trace.SpanKind.CONSUMER,
                              context=trace.set_span_in_context(send)).end()
    compute.telemetry.shutdown()
    assert not collect.incomplete(collect.read_dir(traces_dir))


def _span(span_id, parent, kind, links=(), **attributes):
    return Span(trace_id="t" * 32, span_id=span_id, parent_id=parent, name=span_id, kind=kind,
                service="x", start_ns=0, end_ns=1, attributes=frozen(attributes),
                links=tuple(Link("t" * 32, link) for link in links))


def test_a_reply_is_consumed_through_its_link():
    """RPC replies: the caller's receive span links to the reply's send, not a child."""
    spans = [_span("a1", None, "PRODUCER"), _span("b2", "zz", "CONSUMER", ["a1"])]
    assert collect.unanswered(spans) == set()
    assert collect.unanswered(spans[:1]) == {"a1"}


def test_an_http_request_waits_for_its_server_span():
    """An HTTP CLIENT span is answered by a SERVER child; other CLIENT spans (a SQL
    query, a libvirt call) reach peers that record nothing and wait for nothing."""
    request = _span("c1", "r0", "CLIENT", **{"http.request.method": "GET"})
    query = _span("q1", "r0", "CLIENT")
    assert collect.unanswered([request, query]) == {"c1"}
    served = _span("s1", "c1", "SERVER")
    assert collect.unanswered([request, query, served]) == set()
