"""Labs 07-12 cannot be passed without the work: a classmate's answers, a faked file or
an earlier attempt's trace each fail; the learner's own answers pass.

Each lab is graded on a Context over a recorded boot (``boot-whole-cast``: every step
of the 58) as "mine", and the same boot with fresh ids and timings as "another
learner's": what their boot gives is what a classmate could hand over.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from novalab.diagrams.load import load_trace
from novalab.labs.cloud import Cloud
from novalab.labs.course import find
from novalab.labs.grading import Context, Fail
from novalab.tracing import attributes as attr
from novalab.tracing.model import Event, Span, Trace

RECORDED = Path(__file__).parents[1] / "diagrams" / "fixtures" / "boot-whole-cast.otlp.json"
SERVER_ID = "0f6693b2-817c-470a-ab35-29f126afd575"  # the recorded boot's instance


def another_boot(spans: list[Span], seed: int = 7) -> list[Span]:
    """The same boot made again (another learner's, or this one's next attempt): new
    trace and span ids, and its own timings."""
    rng = random.Random(seed)
    ids = {s.span_id: f"{rng.getrandbits(64):016x}" for s in spans}
    trace_id = f"{rng.getrandbits(128):032x}"
    shifted = []
    for s in spans:
        stretch = rng.uniform(0.6, 1.6)
        shifted.append(dataclasses.replace(
            s, trace_id=trace_id, span_id=ids[s.span_id],
            parent_id=ids.get(s.parent_id, s.parent_id),
            start_ns=s.start_ns + 10**9,
            end_ns=s.start_ns + 10**9 + int(s.duration_ns * stretch)))
    return shifted


@pytest.fixture(scope="module")
def mine() -> list[Span]:
    return list(load_trace(RECORDED))


@pytest.fixture(scope="module")
def theirs(mine) -> list[Span]:
    return another_boot(mine)


class Store:
    def __init__(self, spans):
        self.spans = spans

    def select(self, **words):
        return SimpleNamespace(spans=self.spans)


class Api:
    """GETs answered from a dict of path -> JSON (a function of the params, or a value)."""

    def __init__(self, answers: dict):
        self.answers = answers

    def get(self, service: str, path: str, **params):
        answer = self.answers[path]
        return answer(**params) if callable(answer) else answer

    def request(self, method: str, service: str, path: str, params=None, **kwargs):
        body = self.get(service, path, **(params or {}))
        return SimpleNamespace(json=lambda: body, raise_for_status=lambda: None)


def context(lab: str, spans, answers: dict, *, server: dict | None = None, api=None,
            admin=None, workdir: Path = Path("/nonexistent"),
            state_dir: Path = Path("/nonexistent"), parameters: dict | None = None,
            started_at: float = 0.0) -> Context:
    ctx = Context(lab=find(lab), cloud=Cloud("lab", state_dir, {}), user="ann",
                  password="pw", project="ann", workdir=workdir, answers=answers,
                  parameters=parameters or {}, started_at=started_at)
    ctx.__dict__.update(store=Store(spans), api=api or Api({}), admin_api=admin or Api({}))
    record = {"id": SERVER_ID, "status": "ACTIVE", "tenant_id": "p-ann",
              "flavor": {"id": "1"}, "OS-EXT-STS:power_state": 1, **(server or {})}
    ctx.server = lambda name: {**record, "name": name}
    return ctx


def run(ctx: Context, check: str) -> None:
    getattr(ctx.lab.module("grade"), check)(ctx)


def trace_of(spans) -> Trace:
    return Trace.of(spans)


def span_named(spans, service: str, name: str) -> Span:
    return next(s for s in spans if s.service == service and s.name == name)


def started_after(spans) -> float:
    """A time after the boot started: an attempt that began after it was made."""
    return trace_of(spans).start_ns / 1e9 + 0.5


# -- lab 08: spawn --------------------------------------------------------------------------

DOMAIN = """<domain type="test"><name>instance-00000001</name><uuid>{uuid}</uuid>
<memory unit="KiB">524288</memory><vcpu>1</vcpu><devices><interface type="bridge">
<mac address="fa:16:3e:00:00:01"/></interface></devices></domain>"""


def lab08(spans, answers, tmp_path, xml: str | None = None) -> Context:
    state = tmp_path / "state"
    kept = state / "instances" / "compute-1" / SERVER_ID
    kept.mkdir(parents=True)
    (kept / "libvirt.xml").write_text(DOMAIN.format(uuid=SERVER_ID))
    folder = tmp_path / "lab"
    folder.mkdir()
    if xml is not None:
        (folder / "domain.xml").write_text(xml)
    admin = Api({f"/servers/{SERVER_ID}": {"server": {
        "OS-EXT-SRV-ATTR:instance_name": "instance-00000001"}}})
    api = Api({"/flavors/1": {"flavor": {"name": "m1.tiny", "ram": 512, "vcpus": 1}},
               "/v2.0/ports": {"ports": [{"mac_address": "fa:16:3e:00:00:01"}]}})
    return context("08", spans, answers, api=api, admin=admin, workdir=folder,
                   state_dir=state, parameters={"flavor": "m1.tiny"})


def lab08_answers(spans) -> dict:
    define = span_named(spans, "nova-compute", "libvirt.defineXML")
    saved = [s for s in spans if s.service == "nova-conductor"
             and s.name.endswith("instance_update") and s.get(attr.NOVA_VM_STATE) == "active"]
    return {"define-span": define.span_id, "power-span": saved[-1].span_id}


def test_lab08_own_spans_pass_and_a_classmates_fail(mine, theirs, tmp_path):
    own = lab08(mine, lab08_answers(mine), tmp_path / "own")
    run(own, "define_span")
    run(own, "power_span")
    copied = lab08(mine, lab08_answers(theirs), tmp_path / "copied")
    for check in ("define_span", "power_span"):
        with pytest.raises(Fail, match="is not a span id of your boot"):
            run(copied, check)


def test_lab08_a_domain_xml_holding_only_the_uuid_and_name_fails(mine, tmp_path):
    faked = (f"<domain><name>instance-00000001</name><uuid>{SERVER_ID}</uuid>"
             "</domain>")
    with pytest.raises(Fail, match="not the XML nova-compute defined"):
        run(lab08(mine, {}, tmp_path / "faked", faked), "domain_xml")
    run(lab08(mine, {}, tmp_path / "real", DOMAIN.format(uuid=SERVER_ID)), "domain_xml")


def test_lab08_the_flavor_is_the_attempts(mine, tmp_path):
    ctx = lab08(mine, {}, tmp_path)
    ctx.parameters["flavor"] = "m1.nano"
    with pytest.raises(Fail, match="asks for m1.nano"):
        run(ctx, "server_active")


def test_lab08_an_earlier_attempts_boot_fails(mine, tmp_path):
    ctx = lab08(mine, lab08_answers(mine), tmp_path)
    ctx.started_at = started_after(mine)
    with pytest.raises(Fail, match="before this attempt"):
        run(ctx, "define_span")


# -- lab 10: failure drills -----------------------------------------------------------------

def struck(spans, service: str, name: str, fault: str) -> list[Span]:
    """The boot with ``fault``'s event on its span ``name``: a drill's boot."""
    event = Event(attr.NOVALAB_FAULT_EVENT, 0, {attr.NOVALAB_FAULT_NAME: fault})
    return [dataclasses.replace(s, events=(*s.events, event))
            if s.service == service and s.name == name else s for s in spans]


def lab10(spans, answers, started_at: float = 0.0) -> Context:
    return context("10", spans, answers, server={"status": "ERROR"}, started_at=started_at)


def drill_answers(spans) -> dict:
    """The honest answers to the first drill: the fault's span, the failing step's."""
    ctx = lab10(spans, {})
    grade = ctx.lab.module("grade")
    steps, _nearest = grade._failing_steps(ctx, grade.DRILLS["vm1"])
    fault = span_named(spans, "neutron-server", "Ml2Plugin._bind_port_if_needed")
    return {"vm1-fault": fault.span_id,
            "vm1-step": ctx.flow("lab10-ann-vm1").result(min(steps)).span.span_id}


def test_lab10_the_drills_own_spans_pass_and_a_classmates_fail(mine):
    drill = struck(mine, "neutron-server", "Ml2Plugin._bind_port_if_needed", "port-binding")
    own = lab10(drill, drill_answers(drill))
    run(own, "vm1_fault")
    run(own, "vm1_step")
    copied = lab10(drill, drill_answers(another_boot(drill)))
    for check in ("vm1_fault", "vm1_step"):
        with pytest.raises(Fail, match="is not a span id of the boot of lab10-ann-vm1"):
            run(copied, check)


def test_lab10_a_span_that_only_noticed_or_a_consequence_is_told_so(mine):
    drill = struck(mine, "neutron-server", "Ml2Plugin._bind_port_if_needed", "port-binding")
    api_span = span_named(drill, "nova-api", "POST /v2.1/servers")
    ctx = lab10(drill, {"vm1-fault": api_span.span_id, "vm1-step": api_span.span_id})
    with pytest.raises(Fail, match="is not the span that carries the novalab.fault event"):
        run(ctx, "vm1_fault")
    with pytest.raises(Fail, match="no failure at step"):
        run(ctx, "vm1_step")


def test_lab10_a_boot_another_fault_struck_does_not_count(mine):
    drill = struck(mine, "cinder-volume", "CreateVolumeFromSpecTask._create_raw_volume",
                   "volume-error")
    with pytest.raises(Fail, match="not from the fault armed for this drill"):
        run(lab10(drill, {}), "vm1_boot")


def test_lab10_an_earlier_attempts_drill_fails(mine):
    drill = struck(mine, "neutron-server", "Ml2Plugin._bind_port_if_needed", "port-binding")
    fault = span_named(drill, "neutron-server", "Ml2Plugin._bind_port_if_needed")
    ctx = lab10(drill, {"vm1-fault": fault.span_id}, started_at=started_after(drill))
    with pytest.raises(Fail, match="before this attempt"):
        run(ctx, "vm1_fault")


# -- lab 12: review -------------------------------------------------------------------------

def lab12(spans, answers, started_at: float = 0.0, **parameters) -> Context:
    api = Api({"/v2.0/ports": {"ports": [{"network_id": "n1", "fixed_ips": [
                   {"ip_address": "10.0.0.50"}]}]},
               "/v2.0/networks": {"networks": [{"id": "n1"}]}})
    return context("12", spans, answers, api=api, parameters=parameters,
                   started_at=started_at)


def lab12_answers(spans) -> dict:
    from novalab.diagrams.check import check as flow_check
    from novalab.diagrams.flows import get_flow

    result = flow_check(trace_of(spans), get_flow("classic"))
    cache = next(s for s in spans if s.get(attr.NOVA_IMAGE_CACHE_HIT) is not None)
    events = next(s.get(attr.NOVA_EVENTS) for s in spans if s.get(attr.NOVA_EVENTS))
    return {"token-span": result.result(2).span.span_id,
            "conductor-span": result.result(14).span.span_id,
            "volume-span": result.result(48).span.span_id,
            "cache-span": cache.span_id, "vif-event": events[0]}


SPAN_ANSWERS = ("token_span", "conductor_span", "volume_span", "cache_span")


def test_lab12_own_answers_pass_and_a_classmates_fail(mine, theirs):
    own = lab12(mine, lab12_answers(mine))
    for check in (*SPAN_ANSWERS, "vif_event"):
        run(own, check)
    copied = lab12(mine, {**lab12_answers(theirs),
                          "vif-event": "network-vif-plugged-" + "0" * 8 + "-0000-4000-8000-"
                                       + "0" * 12})
    for check in SPAN_ANSWERS:
        with pytest.raises(Fail, match="is not a span id of your boot"):
            run(copied, check)
    with pytest.raises(Fail, match="not an event nova-compute waited for in your boot"):
        run(copied, "vif_event")


def test_lab12_what_every_boot_shares_is_no_answer(mine):
    """The event's bare name, or another step's span, are what anyone could give."""
    answers = lab12_answers(mine)
    ctx = lab12(mine, {**answers, "vif-event": "network-vif-plugged",
                       "token-span": answers["conductor-span"]})
    with pytest.raises(Fail, match="give it whole"):
        run(ctx, "vif_event")
    with pytest.raises(Fail, match="is not the SQL INSERT that stored your token"):
        run(ctx, "token_span")


def test_lab12_the_spec_is_the_attempts(mine):
    """A classmate's spec (another address) is not this attempt's."""
    run(lab12(mine, {}, octet=50), "fixed_address")
    with pytest.raises(Fail, match=r"not 10\.0\.0\.77"):
        run(lab12(mine, {}, octet=77), "fixed_address")


def test_lab12_an_earlier_attempts_boot_fails(mine):
    ctx = lab12(mine, lab12_answers(mine), started_at=started_after(mine))
    for check in (*SPAN_ANSWERS, "vif_event"):
        with pytest.raises(Fail, match="before this attempt"):
            run(ctx, check)


# -- lab 11: Jaeger and timing ----------------------------------------------------------------

class Stores:
    """One trace per server id: the cold boot's and the warm boot's."""

    def __init__(self, by_server: dict):
        self.by_server = by_server

    def select(self, server=None, **words):
        return SimpleNamespace(spans=self.by_server[server])


def warm_boot(spans, seed: int = 11) -> list[Span]:
    """A later boot of the image, which found it in the host's cache."""
    return [dataclasses.replace(s, attributes={**s.attributes, attr.NOVA_IMAGE_CACHE_HIT: True})
            if s.get(attr.NOVA_IMAGE_CACHE_HIT) is not None else s
            for s in another_boot(spans, seed=seed)]


def lab11(cold, warm, answers, tmp_path, jaeger=None, started_at: float = 0.0) -> Context:
    (tmp_path / "lab").mkdir(parents=True, exist_ok=True)
    if jaeger is not None:
        (tmp_path / "lab" / "boots.jaeger.json").write_text(jaeger)
    api = Api({"/v2/images": {"images": [{"id": "img", "status": "active"}]}})
    ctx = context("11", cold, answers, api=api, workdir=tmp_path / "lab",
                  started_at=started_at)
    ctx.__dict__["store"] = Stores({"cold": cold, "warm": warm})
    ctx.server = lambda name: {"id": name.rsplit("-", 1)[-1], "name": name,
                               "status": "ACTIVE", "image": {"id": "img"}}
    return ctx


def jaeger_of(*boots) -> str:
    from novalab.diagrams.jaeger import dumps, to_jaeger

    return dumps({"data": [item for spans in boots for item in to_jaeger(trace_of(spans))["data"]]})


def lab11_answers(cold, warm) -> dict:
    from novalab.diagrams.check import check as flow_check
    from novalab.diagrams.flows import get_flow
    from novalab.diagrams.flows.model import RETURN

    result = flow_check(trace_of(cold), get_flow("classic"))
    slowest = max((r.span for r in result.results if r.matched and r.step.kind != RETURN),
                  key=lambda s: s.duration_ns)
    fetch = span_named(cold, "nova-compute", "fetch")
    hit = next(s for s in warm if s.get(attr.NOVA_IMAGE_CACHE_HIT))
    return {"slowest-span": slowest.span_id, "fetch-ms": f"{fetch.duration_ns / 1e6:.3f}",
            "cache-span": hit.span_id}


ANSWERED_11 = ("slowest_span", "fetch_ms", "cache_span")


def test_lab11_own_answers_pass_and_a_classmates_fail(mine, tmp_path):
    warm = warm_boot(mine)
    own = lab11(mine, warm, lab11_answers(mine, warm), tmp_path / "own", jaeger_of(mine, warm))
    for check in (*ANSWERED_11, "jaeger_file"):
        run(own, check)
    their_cold = another_boot(mine, seed=3)
    copied = lab11(mine, warm, lab11_answers(their_cold, warm_boot(mine, seed=13)),
                   tmp_path / "copied")
    with pytest.raises(Fail, match="is not a span id of the boot of lab11-ann-cold"):
        run(copied, "slowest_span")
    with pytest.raises(Fail, match="is not how long the fetch span took"):
        run(copied, "fetch_ms")
    with pytest.raises(Fail, match="is not a span id of the boot of lab11-ann-warm"):
        run(copied, "cache_span")


@pytest.mark.parametrize("faked", ["trace-id-only", "another-boot", "made-up-durations"])
def test_lab11_a_faked_jaeger_file_fails(mine, tmp_path, faked):
    import json

    warm = warm_boot(mine)
    if faked == "trace-id-only":
        text, why = trace_of(mine).trace_id, "is not a Jaeger JSON document"
    elif faked == "another-boot":
        text, why = jaeger_of(another_boot(mine, seed=5), warm), "does not hold the boot"
    else:
        doc = json.loads(jaeger_of(mine, warm))
        for item in doc["data"]:
            for span in item["spans"]:
                span["duration"] += 1000
        text, why = json.dumps(doc), "export it, do not write it"
    with pytest.raises(Fail, match=why):
        run(lab11(mine, warm, {}, tmp_path, text), "jaeger_file")


def test_lab11_an_earlier_attempts_boots_fail(mine, tmp_path):
    warm = warm_boot(mine)
    ctx = lab11(mine, warm, lab11_answers(mine, warm), tmp_path, jaeger_of(mine, warm),
                started_at=started_after(warm))
    for check in ANSWERED_11:
        with pytest.raises(Fail, match="before this attempt"):
            run(ctx, check)


# -- lab 07: volumes ------------------------------------------------------------------------

def lab07(spans, answers, started_at: float = 0.0) -> Context:
    from novalab.diagrams.check import check as flow_check
    from novalab.diagrams.flows import get_flow

    opened = span_named(spans, "qemu-kvm", "qemu rbd open")
    volume_id = str(opened.get(attr.CEPH_OBJECT)).removeprefix("volume-")
    mon = flow_check(trace_of(spans), get_flow("classic")).result(49).span
    info = {"driver_volume_type": "rbd", "name": f"volumes/volume-{volume_id}",
            "hosts": [mon.get(attr.SERVER_ADDRESS)], "ports": [mon.get(attr.SERVER_PORT)]}
    api = Api({"/volumes/detail": {"volumes": [{"id": volume_id, "name": "v", "size": 1}]},
               "/attachments/detail": {"attachments": [{"connection_info": info}]}})
    return context("07", spans, answers, api=api, started_at=started_at)


def lab07_answers(spans) -> dict:
    from novalab.diagrams.check import check as flow_check
    from novalab.diagrams.flows import get_flow

    result = flow_check(trace_of(spans), get_flow("classic"))
    header = next(str(s.get(attr.CEPH_OBJECT)) for s in spans
                  if str(s.get(attr.CEPH_OBJECT, "")).startswith("rbd_header."))
    return {"mon-span": result.result(49).span.span_id,
            "osd-span": result.result(51).span.span_id, "header": header}


def test_lab07_own_answers_pass_and_a_classmates_fail(mine, theirs):
    own = lab07(mine, lab07_answers(mine))
    for check in ("monitor", "osd", "header"):
        run(own, check)
    # Their header names their image's id; their spans are theirs.
    copied = lab07(mine, {**lab07_answers(theirs), "header": "rbd_header.5e1f00d2a4b1"})
    for check in ("monitor", "osd"):
        with pytest.raises(Fail, match="is not a span id of your boot"):
            run(copied, check)
    with pytest.raises(Fail, match="is not the header librbd read"):
        run(copied, "header")


def test_lab07_another_steps_span_is_no_answer(mine):
    answers = lab07_answers(mine)
    ctx = lab07(mine, {**answers, "mon-span": answers["osd-span"]})
    with pytest.raises(Fail, match="is not the ceph-mon SERVER span"):
        run(ctx, "monitor")


def test_lab07_the_volume_size_is_the_attempts(mine):
    ctx = lab07(mine, {})
    ctx.parameters["size"] = 3
    ctx.server = lambda name: {"id": SERVER_ID, "name": name, "status": "ACTIVE"}
    with pytest.raises(Fail, match="asks for 3"):
        run(ctx, "volume_attached")


def test_lab07_an_earlier_attempts_boot_fails(mine):
    ctx = lab07(mine, lab07_answers(mine), started_at=started_after(mine))
    for check in ("monitor", "osd", "header"):
        with pytest.raises(Fail, match="before this attempt"):
            run(ctx, check)


# -- lab 09: metadata -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def read_user_data(mine) -> list[Span]:
    """The recorded boot, whose guest's last request asked for user data (it had none)."""
    last = max((s for s in mine if s.service == "neutron-metadata-proxy" and s.kind == "SERVER"),
               key=lambda s: s.start_ns)
    return [dataclasses.replace(s, attributes={**s.attributes,
                                               attr.URL_PATH: "/openstack/latest/user_data"})
            if s is last else s for s in mine]


def lab09(spans, answers, tmp_path=None, user_data: bytes | None = None,
          started_at: float = 0.0) -> Context:
    folder = Path("/nonexistent")
    if tmp_path is not None:
        folder = tmp_path / "lab"
        folder.mkdir(parents=True, exist_ok=True)
        if user_data is not None:
            (folder / "user-data.yaml").write_bytes(user_data)
    return context("09", spans, answers, workdir=folder, started_at=started_at,
                   parameters={"course": "c0ffee", "line": "5ca1ab1e"})


def lab09_answers(spans) -> dict:
    trace = trace_of(spans)
    asked = next(s for s in spans if s.service == "neutron-metadata-proxy"
                 and s.kind == "SERVER" and str(s.get(attr.URL_PATH)).endswith("/user_data")
                 and trace.parent(s) is not None and trace.parent(s).service == "cloud-init")
    vouched = next(s for s in spans if s.get(attr.NOVA_INSTANCE_UUID) == SERVER_ID
                   and s.name.endswith("_proxy_request"))
    return {"user-data-span": asked.span_id, "vouch-span": vouched.span_id}


def test_lab09_own_answers_pass_and_a_classmates_fail(read_user_data):
    mine, theirs = read_user_data, another_boot(read_user_data)
    own = lab09(mine, lab09_answers(mine))
    run(own, "user_data_span")
    run(own, "vouch_span")
    copied = lab09(mine, lab09_answers(theirs))
    for check in ("user_data_span", "vouch_span"):
        with pytest.raises(Fail, match="is not a span id of your boot"):
            run(copied, check)


def test_lab09_the_guests_other_requests_are_no_answer(read_user_data):
    mine = read_user_data
    """meta_data.json is asked first in every boot: it is not the user data's request."""
    trace = trace_of(mine)
    first = min((s for s in mine if s.service == "neutron-metadata-proxy" and s.kind == "SERVER"
                 and trace.parent(s) is not None and trace.parent(s).service == "cloud-init"),
                key=lambda s: s.start_ns)
    with pytest.raises(Fail, match="is not the neutron-metadata-proxy SERVER span of the guest"):
        run(lab09(mine, {"user-data-span": first.span_id}), "user_data_span")


def test_lab09_a_classmates_user_data_fails(mine, tmp_path):
    """The user data must carry this attempt's line before the guest is even asked."""
    ctx = lab09(mine, {}, tmp_path, b'#cloud-config\nruncmd:\n  - echo "hello"\n')
    with pytest.raises(Fail, match="does not say 5ca1ab1e"):
        run(ctx, "user_data")


def test_lab09_a_classmates_property_fails(mine):
    ctx = lab09(mine, {})
    ctx.server = lambda name: {"id": SERVER_ID, "name": name, "status": "ACTIVE",
                               "metadata": {"course": "novalab"}}
    with pytest.raises(Fail, match="asks for course=c0ffee"):
        run(ctx, "property_served")


def test_lab09_an_earlier_attempts_boot_fails(read_user_data):
    mine = read_user_data
    ctx = lab09(mine, lab09_answers(mine), started_at=started_after(mine))
    for check in ("user_data_span", "vouch_span"):
        with pytest.raises(Fail, match="before this attempt"):
            run(ctx, check)
