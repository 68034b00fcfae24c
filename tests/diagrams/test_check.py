"""Projecting traces onto the 58-step table: matches, misses, causal order, notes."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from pathlib import Path

import pytest

from novalab.diagrams.causal import END, START, Causality
from novalab.diagrams.check import check, format_text, to_dict
from novalab.diagrams.flows import get_flow
from novalab.diagrams.load import spans_from_otlp
from novalab.diagrams.model import Span, Trace, frozen
from novalab.diagrams.semantics import describe

FLOW = get_flow("classic")
RECORDED_WHOLE_CAST = Path(__file__).parent / "fixtures" / "boot-whole-cast.otlp.json"
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
    assert result.warnings == 0
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
                              "warnings": 0, "ok": False}
    assert doc["warnings"] == [] and "WARNING" not in text
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


# -- fidelity of single rules --------------------------------------------------------------

@pytest.fixture(scope="module")
def recorded_whole_cast_doc() -> dict:
    return json.loads(RECORDED_WHOLE_CAST.read_text())


def _ancestor_names(trace: Trace, span: Span) -> list[str]:
    return [a.name for a in trace.ancestors(span) if a.service == span.service]


def test_step_35_is_the_l2_agent_plugging_the_tap_not_its_connection(recorded_whole_cast_trace):
    """The agent's first libvirt call is the connection's open inside the wait for the tap;
    step 35 is the call that puts the tap on the bridge."""
    trace = recorded_whole_cast_trace
    agent_calls = [s for s in trace if s.service == "neutron-l2-agent" and
                   s.get("rpc.system") == "libvirt"]
    assert agent_calls[0].name == "libvirt.open"  # what step 35 used to match
    span = check(trace, FLOW).result(35).span
    assert (span.service, span.name) == ("neutron-l2-agent", "libvirt.networkUpdate")
    assert "LinuxBridgeManager.plug_interface" in _ancestor_names(trace, span)


def _renamed(trace: Trace, old: str, new: str) -> Trace:
    return Trace.of(dataclasses.replace(s, name=new) if s.name == old else s for s in trace)


@pytest.mark.parametrize("name", ["ComputeManager._report_state", "ImageCache.import_image",
                                  "LibvirtDriver._supports_start_paused"])
def test_step_44_wants_whole_words_not_report_import_or_support(embedded_trace, name):
    """The recorded boot had no port, so no VIF call: a caller whose name merely contains
    "port" does not make one."""
    assert not check(_renamed(embedded_trace, "LibvirtDriver._create_domain", name),
                     FLOW).result(44).matched


@pytest.mark.parametrize("name", ["LibvirtDriver.plug_vifs", "LibvirtDriver.attach_interface",
                                  "Host.attachInterface", "NetworkAPI.update_port"])
def test_step_44_takes_a_libvirt_call_below_a_vif_interface_or_port(embedded_trace, name):
    trace = _renamed(embedded_trace, "LibvirtDriver._create_domain", name)
    span = check(trace, FLOW).result(44).span
    assert span.get("rpc.system") == "libvirt" and name in _ancestor_names(trace, span)


def test_step_37_falls_back_to_the_neutron_ports_table(recorded_whole_cast_doc):
    """Without the L2 agent's spans there is no step 36 to follow: the fallback finds the
    port's last UPDATE of neutron_ports (it looked for a "ports" table, which is not there),
    and says the match is only a fallback."""
    result = check(_without(recorded_whole_cast_doc, "neutron-l2-agent"), FLOW)
    assert {r.step.number for r in result.results if r.missing} == {34, 35, 36}
    step = result.result(37)
    assert describe(step.span) == "UPDATE neutron_ports"
    assert step.warning.startswith("matched only through a fallback")


# -- warnings: a step matched only through a fallback or from an orphaned span --------------

def test_a_whole_recorded_boot_has_no_warnings(recorded_whole_cast_trace):
    result = check(recorded_whole_cast_trace, FLOW)
    assert result.ok and result.warnings == 0
    assert result.summary == "58/58 steps matched, 0 out of order"
    # The hypervisor (the QEMU stand-in, qemu-kvm) talks to Ceph in 49-51, not nova-compute.
    for number in (49, 51):
        span = result.result(number).span
        assert recorded_whole_cast_trace.parent(span).service == "qemu-kvm"


@pytest.mark.parametrize("service, flagged", [
    ("ceph-osd", {24, 51}),
    ("ceph-mon", {21, 49}),
    ("cloud-init", {52}),
])
def test_removing_a_leaf_service_flags_exactly_its_steps(recorded_whole_cast_doc, service,
                                                         flagged):
    """Ceph's daemons and the guest are the leaves of their calls: without their spans the
    steps still match (on the caller's CLIENT span, or on a span whose caller is gone), and
    the check says that the match is only a stand-in, step by step."""
    result = check(_without(recorded_whole_cast_doc, service), FLOW)
    assert result.matched == 58 and result.out_of_order == 0
    warned = {r.step.number: r.warning for r in result.results if r.warning}
    assert set(warned) == flagged
    for number in flagged:
        assert result.result(number).span.service != service
    text = format_text(result)
    for number in flagged:
        assert f"step {number} ({FLOW.step(number).text}): {warned[number]}" in text
    assert text.count("       WARNING: ") == len(flagged)
    assert text.endswith(f"58/58 steps matched, 0 out of order, {len(flagged)} matched only "
                         "through a fallback or an orphaned span\n")
    doc = to_dict(result)
    assert doc["warnings"] == [{"step": n, "warning": warned[n]} for n in sorted(flagged)]
    assert doc["summary"]["warnings"] == len(flagged)
    for number in flagged:
        assert doc["steps"][number - 1]["warning"] == warned[number]
        assert f"Warning: {warned[number]}" in doc["steps"][number - 1]["notes"]


def test_the_warnings_say_why(recorded_whole_cast_doc):
    osd = check(_without(recorded_whole_cast_doc, "ceph-osd"), FLOW)
    assert osd.result(24).span.service == "ceph-rgw" and osd.result(24).span.kind == "CLIENT"
    assert osd.result(51).span.service == "qemu-kvm" and osd.result(51).span.kind == "CLIENT"
    assert "ceph-osd left no span of this call" in osd.result(24).warning
    guest = check(_without(recorded_whole_cast_doc, "cloud-init"), FLOW)
    assert guest.result(52).span.service == "neutron-metadata-proxy"
    assert "matched from an orphaned span" in guest.result(52).warning
    assert guest.result(54).matched and not guest.result(54).warning  # the answer: as 52


def test_ceph_called_by_nova_compute_below_libvirt_is_only_a_fallback(
        recorded_whole_cast_doc):
    """A trace recorded before the hypervisor had a service of its own (its Ceph calls made
    as nova-compute's) still matches 49 and 51, with a warning."""
    doc = copy.deepcopy(recorded_whole_cast_doc)
    for rs in doc["resourceSpans"]:
        for item in rs["resource"]["attributes"]:
            if item["key"] == "service.name" and item["value"] == {"stringValue": "qemu-kvm"}:
                item["value"] = {"stringValue": "nova-compute"}
    result = check(Trace.of(spans_from_otlp(doc)), FLOW)
    assert result.matched == 58
    assert {r.step.number for r in result.results if r.warning} == {49, 51}
    assert "no span of the hypervisor (qemu-kvm)" in result.result(49).warning


def test_notes_say_ipam_allocated_the_address_and_juno_moved_the_scheduling():
    notes = {s.number: " ".join(s.notes) for s in FLOW.steps}
    assert all(notes[n] for n in (5, 26, 27, 29, 30, 32, 33))
    assert "allocated here, by neutron-server's IPAM" in notes[26]
    for number in (27, 29, 30, 32, 33):  # the table's "request/allocate/reply IP address"
        assert re.search(r"(?i)IPAM|already chosen|no IP address", notes[number]), number
    assert "since Juno the conductor calls the scheduler's select_destinations" in notes[6]
    assert not any("since Icehouse" in note.lower() for note in notes.values())
