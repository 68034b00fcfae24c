"""Labs 00-06 cannot be passed without the work: shortcuts fail, the honest path passes.

Each lab is graded on a Context whose trace store holds one recorded whole boot
(the learner's, ``tests/diagrams/fixtures/boot-whole-cast.otlp.json``) and whose
APIs answer what that boot's cloud holds. A classmate's boot is the same recording
with every id, MAC and time its own (:func:`another_boot`): what differs between
two real boots. The shortcuts: a classmate's answers (every question must fail),
a faked artifact, an old trace or token.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from novalab.diagrams import sequence
from novalab.diagrams.check import check as flow_check
from novalab.diagrams.flows import get_flow
from novalab.diagrams.load import load_trace
from novalab.labs.cloud import Cloud
from novalab.labs.course import find
from novalab.labs.grading import Context, grade
from novalab.tracing import attributes as attr

RECORDED = Path(__file__).parents[1] / "diagrams" / "fixtures" / "boot-whole-cast.otlp.json"
_IDS = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
                  r"|\b[0-9a-f]{32}\b|\b[0-9a-f]{16}\b|fa:16:3e(?::[0-9a-f]{2}){3}")
_TIMES = ("startTimeUnixNano", "endTimeUnixNano", "timeUnixNano")


def another_boot(path: Path, out: Path, seed: int) -> Path:
    """``path`` as another learner's boot: new ids (trace, span, message, request,
    server, port, image), new MACs, each interval stretched. The same code path, so
    every answer that is the same for every boot stays the same."""
    rng = random.Random(seed)
    mapped: dict[str, str] = {}

    def new_id(found: re.Match) -> str:
        old = found.group()
        if old not in mapped:
            mapped[old] = re.sub(r"[0-9a-f]", lambda _: rng.choice("0123456789abcdef"),
                                 old[9:] if old.startswith("fa:16:3e") else old)
            if old.startswith("fa:16:3e"):
                mapped[old] = old[:9] + mapped[old]
        return mapped[old]

    data = json.loads(path.read_text())
    first = min(int(s["startTimeUnixNano"]) for r in data["resourceSpans"]
                for sc in r["scopeSpans"] for s in sc["spans"])

    def walk(value, key=""):
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if key in _TIMES:
            return str(first + 7 * 10**9 + int((int(value) - first) * 1.37))
        if isinstance(value, str):
            text = _IDS.sub(new_id, value)
            # a tap is named after its port: "tap" + the port id's first 11 characters
            return re.sub(r"\btap([0-9a-f]{8}-[0-9a-f]{2})\b",
                          lambda m: "tap" + next((new[:11] for old, new in mapped.items()
                                                  if old.startswith(m.group(1))), m.group(1)),
                          text)
        return value

    out.write_text(json.dumps(walk(data)))
    return out


class Store:
    def __init__(self, spans):
        self.spans = spans

    def select(self, **words):
        if "request_id" in words:
            if not any(s.get(attr.OPENSTACK_REQUEST_ID) == words["request_id"]
                       for s in self.spans):
                from novalab.tracing.store import NoTrace
                raise NoTrace(words["request_id"])
        return SimpleNamespace(spans=self.spans)


class Cloudlike:
    """What a boot's cloud answers about it, read from the boot itself."""

    def __init__(self, trace):
        self.trace = trace
        self.server_id = next(s.get(attr.NOVA_INSTANCE_UUID) for s in trace
                              if s.get(attr.NOVA_INSTANCE_UUID))
        events = [str(e) for s in trace for e in (s.get(attr.NOVA_EVENTS) or ())]
        self.port_id = events[0].removeprefix("network-vif-plugged-")
        entries = _step(trace, 30).get(attr.NOVALAB_DNSMASQ_HOST_ENTRIES)
        self.entry = entries[-1]  # mac,name,ip
        self.mac, _, self.ip = self.entry.split(",")
        self.network_id = next(s.get(attr.NEUTRON_NETWORK_ID) for s in trace
                               if s.get(attr.NEUTRON_NETWORK_ID))
        self.image_id = next(str(s.get(attr.CEPH_OBJECT)).removeprefix("glance/")
                             for s in trace if str(s.get(attr.CEPH_OBJECT)).startswith("glance/"))

    def get(self, service, path, **params):
        if path == "/v2/images":
            return {"images": [{"id": self.image_id, "name": params["name"], "status": "active",
                                "owner": "p", "disk_format": "raw",
                                "checksum": hashlib.md5(self.image_id.encode()).hexdigest()}]}
        if path == "/v2.0/ports":
            return {"ports": [{"id": self.port_id, "mac_address": self.mac, "status": "ACTIVE",
                               "network_id": self.network_id,
                               "fixed_ips": [{"ip_address": self.ip}]}]}
        if path == "/v2.0/networks":
            return {"networks": [{"id": self.network_id, "name": params["name"]}]}
        raise AssertionError(f"no fake for {service} {path}")

    issued_at = "2026-01-01T10:00:00.000000Z"  # when keystone issued the learner's token

    def request(self, method, service, path, **kwargs):
        token = {"user": {"name": "demo", "id": "u1"}, "issued_at": self.issued_at,
                 "expires_at": "2026-01-01T11:00:00.000000Z"}
        return SimpleNamespace(status_code=200, json=lambda: {"token": token})

    def server(self, name):
        return {"id": self.server_id, "name": name, "status": "ACTIVE",
                "image": {"id": self.image_id},
                "os-extended-volumes:volumes_attached": [{"id": "v"}]}


@pytest.fixture(scope="module")
def boots(tmp_path_factory):
    """(the learner's boot, a classmate's boot), as traces."""
    folder = tmp_path_factory.mktemp("boots")
    return load_trace(RECORDED), load_trace(another_boot(RECORDED, folder / "other.json", 7))


def context(lab_name: str, trace, tmp_path: Path, answers: dict, values: dict | None = None,
            started_at: float = 0.0) -> Context:
    lab = find(lab_name)
    cloud = Cloudlike(trace)
    (tmp_path / "state").mkdir(exist_ok=True)
    ctx = Context(lab=lab, cloud=Cloud("lab", tmp_path / "state", {}), user="demo",
                  password="pw", project="demo", workdir=tmp_path, answers=answers,
                  parameters=values or {}, started_at=started_at)
    ctx.__dict__["store"] = Store(list(trace))
    ctx.__dict__["api"] = cloud
    ctx.__dict__["admin_api"] = cloud
    ctx.server = cloud.server
    return ctx


def _flow(trace):
    return flow_check(trace, get_flow("classic"))


def _step(trace, number):
    return _flow(trace).result(number).span


def _offset(trace, number) -> float:
    result = _flow(trace)
    return result.offset_ms(result.result(number))


# What a learner answers, read from a boot (the written solutions do the same) -------------

def answers_00(trace, values):
    return {"start-span": _step(trace, 43).span_id,
            "start-ms": f"{_offset(trace, 43):.3f}"}


def answers_01(trace, values):
    cinder = next(a for a in trace.ancestors(_step(trace, 40))
                  if a.service != "keystone" and a.get(attr.OPENSTACK_REQUEST_ID))
    return {"token-insert": _step(trace, 2).span_id,
            "token-ms": f"{_step(trace, 1).duration_ns / 1e6:.1f}",
            "validated-for": cinder.get(attr.OPENSTACK_REQUEST_ID)}


def answers_02(trace, values):
    lab = find("02").module("grade")
    writes = lab._writes(trace)
    state = next(s for s in writes if s.get(attr.NOVA_TASK_STATE) == values["state"])
    owner = next(a for a in trace.ancestors(_step(trace, 5)) if a.get(attr.NOVA_TASK_STATE))
    shows = sorted((s for s in trace if s.name == "ServersController.show"
                    and s.get(attr.NOVA_VM_STATE) == "active"), key=lambda s: s.start_ns)
    poll = next(a for a in trace.ancestors(shows[0]) if a.get(attr.OPENSTACK_REQUEST_ID))
    return {"create-request-id": _step(trace, 4).get(attr.OPENSTACK_REQUEST_ID),
            "row-span": owner.span_id, "state-span": state.span_id,
            "race-ms": f"{_offset(trace, 8) - _offset(trace, 7):.3f}",
            "active-poll": poll.get(attr.OPENSTACK_REQUEST_ID)}


def _conductor_calls(trace):
    return sorted((s for s in trace if s.service == "nova-compute" and s.kind == "PRODUCER"
                   and s.get(attr.NOVALAB_RPC_STYLE) == "call"
                   and s.get(attr.RPC_SERVICE) == "conductor"), key=lambda s: s.start_ns)


def answers_03(trace, values):
    return {"compute-message": _step(trace, 12).get(attr.MESSAGING_MESSAGE_ID),
            "correlation-id": _step(trace, 14).get(attr.MESSAGING_CONVERSATION_ID),
            "reply-span": _step(trace, 17).span_id,
            "call-correlation-id": _conductor_calls(trace)[values["call"] - 1]
            .get(attr.MESSAGING_CONVERSATION_ID)}


def answers_04(trace, values):
    return {"cast-message": _step(trace, 12).get(attr.MESSAGING_MESSAGE_ID)}


def answers_05(trace, values):
    image = Cloudlike(trace).image_id
    read = next(s for s in trace if s.get(attr.CEPH_OBJECT) == f"glance/{image}"
                and s.get(attr.RPC_METHOD) == "read")
    return {"checksum": hashlib.md5(image.encode()).hexdigest(),
            "object-read": read.span_id,
            "rgw-ms": f"{_step(trace, 23).duration_ns / 1e6:.1f}"}


def answers_06(trace, values):
    cloud = Cloudlike(trace)
    return {"dhcp-ms": f"{_offset(trace, 30) - _offset(trace, 26):.3f}",
            "l2-message": _step(trace, 34).get(attr.MESSAGING_MESSAGE_ID),
            "dhcp-entry": cloud.entry,
            "vif-event": f"network-vif-plugged-{cloud.port_id}"}


ANSWERS = {"00": answers_00, "01": answers_01, "02": answers_02, "03": answers_03,
           "04": answers_04, "05": answers_05, "06": answers_06}
VALUES = {"02": {"state": "networking"}, "03": {"call": 5}}


def _answer_results(ctx) -> dict[str, object]:
    """The result of each check that grades an answer, by the question it grades."""
    found = {}
    for result in grade(ctx):
        asked = re.search(r"\(answer ([a-z0-9-]+)\)", result.text)
        if asked:
            found[asked.group(1)] = result
    return found


@pytest.mark.parametrize("number", sorted(ANSWERS))
def test_a_classmates_answers_fail_and_ones_own_pass(boots, tmp_path, number):
    """Every question of the lab, answered with what a classmate's boot shows, fails;
    answered from one's own boot, passes (where this recording can answer it)."""
    mine, theirs = boots
    lab = find(number)
    values = VALUES.get(number, {})
    copied = _answer_results(context(lab.name, mine, tmp_path,
                                     ANSWERS[number](theirs, values), values))
    assert set(copied) == set(lab.questions), "every question is graded"
    passed = {key: r.why for key, r in copied.items() if r.passed}
    assert passed == {}, f"{lab.name}: a classmate's answers pass: {sorted(passed)}"
    own = _answer_results(context(lab.name, mine, tmp_path, ANSWERS[number](mine, values),
                                  values))
    answered = ANSWERS[number](mine, values)
    failed = {key: r.why for key, r in own.items() if key in answered and not r.passed}
    assert failed == {}, f"{lab.name}: one's own answers fail: {failed}"


# Faked artifacts and old work ---------------------------------------------------------------

def _diagram_check(ctx):
    return next(r for r in grade(ctx) if r.text.startswith("sequence.html"))


def test_lab_00_reads_the_diagram_it_is_given_not_a_word_in_it(boots, tmp_path):
    """sequence.html must draw the learner's boot, arrow by arrow: a file holding only the
    trace id, or a classmate's diagram (another boot), fails; their own passes."""
    mine, theirs = boots
    ctx = context("00", mine, tmp_path, {})
    page = tmp_path / "sequence.html"
    page.write_text(f"<html>{mine.trace_id}</html>")
    assert not _diagram_check(ctx).passed
    page.write_text(sequence.render(sequence.from_check(_flow(theirs)), "html")
                    .replace(theirs.trace_id, mine.trace_id))
    assert "not its spans" in _diagram_check(ctx).why
    page.write_text(sequence.render(sequence.from_check(_flow(mine)), "html"))
    assert _diagram_check(ctx).passed, _diagram_check(ctx).why


def _token_check(ctx):
    return next(r for r in grade(ctx) if r.text.startswith("token.json"))


def test_lab_01_refuses_a_token_from_before_the_attempt(boots, tmp_path):
    """token.json must hold a token issued during this attempt: one kept from an
    earlier attempt (still valid for an hour) fails; a new one passes."""
    mine, _ = boots
    issued = datetime(2026, 1, 1, 10, tzinfo=UTC).timestamp()
    (tmp_path / "token.json").write_text(json.dumps(
        {"id": "gAAAA", "user_id": "u1", "expires": "2026-01-01T11:00:00+0000"}))
    old = context("01", mine, tmp_path, {}, started_at=issued + 60)
    assert "issued before this attempt" in _token_check(old).why
    assert _token_check(context("01", mine, tmp_path, {}, started_at=issued - 60)).passed
