"""Sequence diagrams: the model, the four renderers, golden files, and the tools' parsers."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from novalab.diagrams import sequence
from novalab.diagrams.check import check
from novalab.diagrams.flows import get_flow

FLOW = get_flow("classic")
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def flow_view(embedded_trace):
    return sequence.from_check(check(embedded_trace, FLOW))


@pytest.fixture(scope="module")
def full_view(embedded_trace):
    return sequence.from_trace(embedded_trace, FLOW)


@pytest.mark.parametrize("fmt, name", [("svg", "sequence.svg"), ("html", "sequence.html"),
                                       ("mermaid", "sequence.mmd"),
                                       ("plantuml", "sequence.puml")])
def test_flow_view_goldens(flow_view, golden, fmt, name):
    golden(name, sequence.render(flow_view, fmt))


@pytest.mark.parametrize("fmt, name", [("mermaid", "sequence-full.mmd"),
                                       ("plantuml", "sequence-full.puml")])
def test_full_view_goldens(full_view, golden, fmt, name):
    golden(name, sequence.render(full_view, fmt))


def test_whole_cast_golden(whole_cast_trace, golden):
    view = sequence.from_check(check(whole_cast_trace, FLOW))
    golden("sequence-whole-cast.mmd", sequence.render(view, "mermaid"))


def test_flow_view_model(flow_view):
    assert len(flow_view.participants) == 22
    assert [a.number for a in flow_view.arrows] == sorted(
        [*range(1, 21), 43, 45, 46, 47, 55, 56, 57, 58])
    arrow16 = next(a for a in flow_view.arrows if a.number == 16)
    assert (arrow16.source, arrow16.target) == ("Nova-conductor", "Database")
    assert arrow16.request == "Nova-conductor -> RabbitMQ"
    assert {n for n, _ in flow_view.missing} == set(range(21, 43)) | {44, *range(48, 55)}
    bars = {(b.participant, b.first, b.last) for b in flow_view.activations}
    rows = {a.number: i for i, a in enumerate(flow_view.arrows)}
    assert ("Nova.api", rows[4], rows[7]) in bars  # called until it answered
    assert ("Nova.scheduler", rows[8], rows[12]) in bars  # consuming the cast


def test_svg_structure(flow_view):
    svg = sequence.render(flow_view, "svg")
    root = ET.fromstring(svg)  # well-formed XML
    groups = root.iter(f"{SVG}g")
    classes = [g.get("class", "") for g in groups]
    assert classes.count("lifeline") == 22
    arrows = [c for c in classes if c.startswith("arrow ")]
    assert len(arrows) == 28
    assert arrows.count("arrow return") == 5  # 3, 7, 20, 57, 58
    assert arrows.count("arrow async") == 9  # 6, 8, 12, 13, 15, 17, 18, 46, 47
    assert 'stroke-dasharray:6 4' in svg  # answers are dashed
    assert 'id="head-open"' in svg and 'id="head-filled"' in svg
    assert "+104.314 ms" in svg  # the time of step 5
    assert "21. Nova-compute -&gt; Ceph_mon: Retrieve cluster map" in svg  # listed as missing


def test_out_of_order_steps_are_red(embedded_doc):
    from novalab.diagrams.load import spans_from_otlp
    from novalab.diagrams.model import Trace

    doc = json.loads(json.dumps(embedded_doc))
    by_name = {s["name"]: s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"]
               for s in ss["spans"]}
    process, provision = by_name["process scheduler"], by_name["API._provision_instances"]
    process["parentSpanId"] = provision["spanId"]
    process["startTimeUnixNano"] = str(int(provision["startTimeUnixNano"]) + 1)
    view = sequence.from_check(check(Trace.of(spans_from_otlp(doc)), FLOW))
    svg = sequence.render(view, "svg")
    assert svg.count('class="arrow async out-of-order"') == 1
    assert "8. Subscribe new instance request (out of order)" in svg
    assert "-[#c62828]>>" in sequence.render(view, "plantuml")


def test_html_is_self_contained(flow_view):
    html = sequence.render(flow_view, "html")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # no CDN, no remote
    assert "<svg" in html and "<script>" in html
    data = json.loads(re.search(r'<script type="application/json" id="arrow-data">(.*?)'
                                r"</script>", html, re.S).group(1))
    assert sorted(map(int, data)) == [a.number for a in flow_view.arrows]
    step4 = data["4"]
    assert step4["span"]["service"] == "nova-api"
    assert step4["span"]["attributes"]["http.route"] == "/v2.1/servers"
    assert step4["upstream"]["function"] == \
        "nova.api.openstack.compute.servers.ServersController.create"
    assert step4["upstream"]["url"].startswith("https://opendev.org/openstack/nova/")
    assert data["16"]["notes"] and data["16"]["request"] == "Nova-conductor -> RabbitMQ"


def test_text_formats(flow_view):
    mermaid = sequence.render(flow_view, "mermaid")
    assert mermaid.startswith("sequenceDiagram\n")
    assert "    nova_api-)rabbitmq: 6. Make rpc.cast" in mermaid
    assert "    nova_api-->>client: 7. Instance request complete" in mermaid
    assert "    client->>nova_api: 4. Start instance" in mermaid
    assert "    %% MISSING 21. Nova-compute -> Ceph_mon: Retrieve cluster map" in mermaid
    plantuml = sequence.render(flow_view, "plantuml")
    assert plantuml.startswith("@startuml\n") and plantuml.endswith("@enduml\n")
    assert "nova_api ->> rabbitmq : 6. Make rpc.cast" in plantuml
    assert "nova_api --> client : 7. Instance request complete" in plantuml
    assert 'database "Database" as database' in plantuml
    assert 'queue "RabbitMQ" as rabbitmq' in plantuml


def test_full_view(full_view, embedded_trace):
    names = [p.name for p in full_view.participants]
    assert names[0] == "novalab-client" and full_view.participants[0].kind == "actor"
    assert {"keystone", "nova-api", "nova-scheduler", "nova-compute", "nova-conductor",
            "glance-api", "database (sqlite)", "broker (novalab.memory)", "libvirt"} <= set(names)
    times = [a.offset_ms for a in full_view.arrows]
    assert times == sorted(times)
    sends = [a for a in full_view.arrows if a.span is not None and a.span.kind == "PRODUCER"]
    assert len(sends) == sum(1 for s in embedded_trace if s.kind == "PRODUCER")
    assert all(a.target == "broker (novalab.memory)" and a.style == "async" for a in sends)
    servers = [s for s in embedded_trace if s.kind == "SERVER"]
    answers = [a for a in full_view.arrows if a.style == "return" and a.span in servers]
    assert len(answers) == len(servers)


def test_unknown_format(flow_view):
    with pytest.raises(ValueError, match="choose one of svg, html, mermaid, plantuml"):
        sequence.render(flow_view, "pdf")


# -- the tools' own parsers -------------------------------------------------------------------

def test_plantuml_accepts_the_text(flow_view, full_view, tmp_path):
    plantuml = shutil.which("plantuml")
    if plantuml is None:
        pytest.skip("plantuml is not installed (Debian: apt-get install -y plantuml); "
                    "the syntax check needs it")
    for view in (flow_view, full_view):
        done = subprocess.run([plantuml, "-syntax"], input=sequence.render(view, "plantuml"),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and done.stdout.startswith("SEQUENCE"), done.stdout
        assert f"({len(view.participants)} participants)" in done.stdout


def test_full_view_draws_the_hypervisor_on_libvirts_lifeline(recorded_whole_cast_trace):
    """qemu-kvm (the QEMU stand-in) stands beside libvirt, as the classic flow's Libvirt
    lifeline, and it is what calls the Ceph monitor and OSD as the guest starts."""
    diagram = sequence.from_trace(recorded_whole_cast_trace, get_flow())
    names = [p.name for p in diagram.participants]
    assert names.index("qemu-kvm") == names.index("libvirt") + 1
    calls = {(a.source, a.target) for a in diagram.arrows if a.style == "sync"}
    assert {("qemu-kvm", "ceph-mon"), ("qemu-kvm", "ceph-osd")} <= calls
