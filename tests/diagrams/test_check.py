"""Projecting traces onto the 58-step table: matches, misses, causal order, notes."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest

from novalab.diagrams.causal import END, START, Causality
from novalab.diagrams.check import check, format_text, to_dict
from novalab.diagrams.flows import get_flow
from novalab.diagrams.load import spans_from_otlp
from novalab.diagrams.model import Span, Trace, frozen
from novalab.diagrams.semantics import describe

FLOW = get_flow("classic")
# What the recorded boots match today: the services of the other steps do not exist yet.
MATCHED_TODAY = frozenset([*range(1, 21), 43, 45, 46, 47, 55, 56, 57, 58])


def _matched(result) -> set[int]:
    return {r.step.number for r in result.results if r.matched}


def test_the_table_is_kept_as_data():
    assert len(FLOW.lifelines) == 22
    assert [line.name for line in FLOW.lifelines][:6] == \
        ["Client", "Keystone", "Token Store", "Nova.api", "Database", "RabbitMQ"]
    assert [s.number for s in FLOW.steps] == list(range(1, 59))
    assert FLOW.step(8).request == "Nova.schedular -> RabbitMQ"  # the table's spelling
    assert FLOW.step(8).source == "Nova.scheduler"
    assert FLOW.step(14).text == "Rpc.call to Nova-conductor to fetch the instance information"
    assert FLOW.step(58).source == "Nova.api" and FLOW.step(58).returns == 55
    assert {s.kind for s in FLOW.steps} == {"sync", "async", "return"}
    assert FLOW.step(6).kind == "async" and FLOW.step(7).kind == "return"
    assert FLOW.step(16).drawn == ("Nova-conductor", "Database") and FLOW.step(16).notes
    assert FLOW.may_precede(8, 7) and FLOW.may_precede(48, 43)
    assert FLOW.may_precede(6, 5) is None


@pytest.mark.parametrize("fixture", ["embedded_trace", "rabbitmq_trace"])
def test_recorded_boots_match_the_steps_of_existing_services(fixture, request):
    result = check(request.getfixturevalue(fixture), FLOW)
    assert _matched(result) == MATCHED_TODAY
    assert result.out_of_order == 0
    assert result.summary == f"{len(MATCHED_TODAY)}/58 steps matched, 0 out of order"
    assert not result.ok


def test_each_step_comes_from_the_right_span(embedded_trace):
    result = check(embedded_trace, FLOW)

    def span(n) -> Span:
        return result.result(n).span

    assert (span(1).service, span(1).name) == ("keystone", "POST /v3/auth/tokens")
    assert describe(span(2)) == "INSERT keystone_tokens"
    assert result.result(3).found.edge == END and span(3) is span(1)
    assert (span(4).service, span(4).name) == ("nova-api", "POST /v2.1/servers")
    assert describe(span(5)) == "INSERT instances" and span(5).service == "nova-api"
    assert (span(6).kind, span(6).get("rpc.method")) == ("PRODUCER", "run_instance")
    assert span(8).service == "nova-scheduler" and span(8).links[0].span_id == span(6).span_id
    assert [describe(span(n)) for n in (9, 10, 11)] == \
        ["SELECT services", "SELECT compute_nodes", "UPDATE instances"]
    assert span(12).get("rpc.method") == "build_and_run_instance"
    assert span(13).service == "nova-compute" and span(13).host == "compute-1"
    assert span(14).get("rpc.method") == "instance_get_by_uuid"
    assert result.result(16).drawn == ("Nova-conductor", "Database")
    assert span(17).get("novalab.rpc.style") == "reply"
    assert span(18).name.startswith("receive reply_") and result.result(18).found.edge == END
    assert (span(19).service, span(19).get("http.route")) == ("glance-api",
                                                              "/v2/images/<image_id>")
    assert span(43).get("rpc.method") == "createWithFlags"
    assert span(45) is not span(14) and span(45).get("rpc.method") == "instance_update"
    assert span(55).get("http.route") == "/v2.1/servers/<server_id>"
    assert span(55) is max((s for s in embedded_trace if s.name == span(55).name),
                           key=lambda s: s.start_ns)  # the last poll
    assert describe(span(56)) == "SELECT instances"


def _without(doc: dict, service: str) -> Trace:
    doc = copy.deepcopy(doc)
    doc["resourceSpans"] = [
        rs for rs in doc["resourceSpans"]
        if {"key": "service.name", "value": {"stringValue": service}}
        not in rs["resource"]["attributes"]]
    return Trace.of(spans_from_otlp(doc))


@pytest.mark.parametrize("service, its_steps", [
    ("nova-scheduler", {8, 9, 10, 11, 12}),
    ("glance-api", {19, 20}),
    ("nova-conductor", {15, 16, 17, 18, 46, 47}),
])
def test_removing_a_service_loses_exactly_its_steps(embedded_doc, service, its_steps):
    result = check(_without(embedded_doc, service), FLOW)
    assert _matched(result) == MATCHED_TODAY - its_steps
    assert result.out_of_order == 0


def _reordered(doc: dict) -> Trace:
    """The scheduler's process span moved before nova-api's send and re-parented there."""
    doc = copy.deepcopy(doc)
    spans = {}
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                spans.setdefault(span["name"], span)
    send, process = spans["send scheduler"], spans["process scheduler"]
    provision = spans["API._provision_instances"]  # nova-api's work before the send
    assert int(provision["endTimeUnixNano"]) < int(send["startTimeUnixNano"])
    process["parentSpanId"] = provision["spanId"]
    process["startTimeUnixNano"] = str((int(provision["startTimeUnixNano"]) +
                                        int(provision["endTimeUnixNano"])) // 2)
    return Trace.of(spans_from_otlp(doc))


def test_a_message_processed_before_it_was_sent_is_out_of_order(embedded_doc):
    result = check(_reordered(embedded_doc), FLOW)
    assert _matched(result) == MATCHED_TODAY
    flagged = {r.step.number: r.precedes for r in result.results if r.out_of_order}
    assert flagged == {8: (6,)}
    text = format_text(result)
    assert "OUT OF ORDER: causally before step(s) 6" in text
    assert text.endswith(f"{len(MATCHED_TODAY)}/58 steps matched, 1 out of order\n")
    assert to_dict(result)["out_of_order"] == [{"step": 8, "precedes": [6]}]


def test_wall_clock_alone_is_not_disorder(embedded_doc):
    """A consumer whose clock says it started before the send, but which is causally after
    it (parent, link, message id), is clock skew, not disorder."""
    doc = copy.deepcopy(embedded_doc)
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                if span["name"] == "process scheduler":
                    span["startTimeUnixNano"] = str(int(span["startTimeUnixNano"]) - 5_000_000)
    result = check(Trace.of(spans_from_otlp(doc)), FLOW)
    assert result.out_of_order == 0


def test_whole_cast_synthetic_trace_matches_all_58_steps(whole_cast_trace):
    """Spans shaped by the conventions for the services still to come meet every rule."""
    result = check(whole_cast_trace, FLOW)
    assert result.summary == "58/58 steps matched, 0 out of order" and result.ok
    assert result.result(38).drawn == ("Neutron-server", "Nova.api")
    assert result.result(21).span.service == "ceph-mon"
    assert result.result(49).span.service == "ceph-mon"
    assert result.result(21).span is not result.result(49).span
    assert result.result(24).span.service == result.result(51).span.service == "ceph-osd"
    assert result.result(44).span.get("rpc.method") == "updateDeviceFlags"
    assert result.result(48).span.get("rpc.method") == "attachDeviceFlags"
    assert result.result(52).span.service == "neutron-metadata-proxy"


def test_documented_interleavings_are_what_allows_real_nova_order(whole_cast_trace):
    """Without the flow's "may interleave" data, real Nova's order is reported."""
    strict = dataclasses.replace(FLOW, interleave=())
    result = check(whole_cast_trace, strict)
    flagged = {r.step.number for r in result.results if r.out_of_order}
    assert {26, 39, 48, 49, 51} <= flagged  # networks/volumes before the image, volumes first
    assert flagged <= set(range(26, 55))


def test_text_and_json_reports(embedded_trace):
    result = check(embedded_trace, FLOW)
    text = format_text(result)
    assert " 21  Nova-compute -> Ceph_mon" in text and "MISSING" in text
    assert "drawn as Nova-conductor -> Database" in text
    assert "16: The table draws this read as an arrow to RabbitMQ" in text
    assert "messaging.system = novalab.memory" in text
    doc = json.loads(json.dumps(to_dict(result)))
    assert doc["summary"] == {"matched": 28, "total": 58, "expected": 58,
                              "matched_expected": 28, "missing": 30, "out_of_order": 0,
                              "ok": False}
    step5 = doc["steps"][4]
    assert step5["status"] == "matched" and step5["span"]["service"] == "nova-api"
    assert step5["offset_ms"] == pytest.approx(104.314, abs=0.001)
    assert doc["steps"][20]["status"] == "missing" and "span" not in doc["steps"][20]


# -- the happens-before graph on its own -------------------------------------------------

def _span(span_id, parent=None, start=0, end=10, service="a", kind="INTERNAL", **attributes):
    return Span("t" * 32, span_id, parent, span_id, kind, service, start, end,
                attributes=attributes)


def test_causality_parent_children_and_program_order():
    trace = Trace.of([
        _span("root", start=0, end=100),
        _span("first", "root", 10, 20),
        _span("second", "root", 30, 40),
        _span("other", "root", 15, 35, service="b"),  # another service: no program order
    ])
    c = Causality(trace)
    assert c.precedes(("first", END), ("second", START))
    assert c.precedes(("root", START), ("second", END))
    assert c.precedes(("second", START), ("root", END))
    assert not c.precedes(("second", START), ("first", START))
    assert not c.precedes(("other", START), ("second", START))
    assert not c.precedes(("first", START), ("other", START))


def test_causality_messages():
    trace = Trace.of([
        _span("root", start=0, end=100),
        _span("send", "root", 10, 12, kind="PRODUCER", **{"messaging.message.id": "m"}),
        _span("process", "send", 50, 90, service="b", kind="CONSUMER",
              **{"messaging.message.id": "m", "messaging.operation.type": "process"}),
        _span("later", "root", 60, 70),
    ])
    c = Causality(trace)
    assert c.precedes(("send", START), ("process", START))
    assert not c.precedes(("process", END), ("root", END))  # the sender did not wait
    assert not c.precedes(("process", START), ("later", START))  # concurrent
    assert not c.precedes(("later", START), ("process", START))


def _recording(trace: Trace, span_name: str, **attributes) -> Trace:
    """``trace`` with ``attributes`` added to its first span called ``span_name``."""
    target = next(s for s in trace if s.name == span_name)
    return Trace.of(dataclasses.replace(s, attributes=frozen({**s.attributes, **attributes}))
                    if s is target else s for s in trace)


NETWORK_STEPS = {*range(26, 39), 44, 52, 53, 54}
VOLUME_STEPS = {39, 40, 41, 42, 48, 49, 50, 51}


def test_steps_a_boot_did_not_ask_for_are_not_expected(embedded_trace):
    """The recorded foundation boot asked for no port and no volume: once the build
    says so, those steps are not expected, and the boot is whole but for the image."""
    said = _recording(embedded_trace, "ComputeManager._build_and_run_instance",
                      **{"nova.build.networks": 0, "nova.build.volumes": 0})
    result = check(said, FLOW)
    excused = {r.step.number for r in result.results if r.excused}
    assert excused == NETWORK_STEPS | VOLUME_STEPS
    assert {r.step.number for r in result.results if r.missing} == \
        set(range(1, 59)) - MATCHED_TODAY - excused  # 21-25: this old boot had no Ceph
    text = format_text(result)
    assert "NOT EXPECTED: the boot mapped no volume" in text
    assert "NOT EXPECTED (as step 26)" in text
    assert text.endswith(f"{len(MATCHED_TODAY)}/{58 - len(excused)} expected steps matched, "
                         f"0 out of order ({len(excused)} of 58 not expected for this boot)\n")
    report = to_dict(result)
    assert report["steps"][38]["status"] == "not_expected"
    assert report["summary"]["missing"] == 5 and report["summary"]["ok"] is False


def test_a_cached_image_excuses_the_download_and_only_it(embedded_trace):
    said = _recording(embedded_trace, "ComputeManager._build_and_run_instance",
                      **{"nova.build.networks": 0, "nova.build.volumes": 0,
                         "nova.image.cache_hit": True})
    result = check(said, FLOW)
    assert result.ok and result.missing == 0
    (first,) = [r for r in result.results if r.step.number == 21]
    assert "already in the cache of" in first.excused
    # A boot from a volume fetches no image either, and says why.
    bfv = check(_recording(said, "ComputeManager._build_and_run_instance",
                           **{"nova.build.boot_from_volume": True,
                              "nova.image.cache_hit": False}), FLOW)
    assert "boots from a volume" in bfv.result(19).excused


def test_a_step_is_excused_only_by_evidence(embedded_trace):
    """No record of the request: every step is expected (old traces keep their misses).
    A request that asked for a volume keeps its volume steps MISSING when they did not
    happen."""
    assert not any(r.excused for r in check(embedded_trace, FLOW).results)
    asked = check(_recording(embedded_trace, "ComputeManager._build_and_run_instance",
                             **{"nova.build.volumes": 1}), FLOW)
    assert {r.step.number for r in asked.results if r.missing} >= VOLUME_STEPS
