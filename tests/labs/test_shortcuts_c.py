"""Labs 13-18 cannot be passed without the work: a shortcut fails its check.

Each test grades one check on a Context whose cloud is a fake (canned API
answers) and whose trace store holds recorded or hand-made spans: a classmate's
answer (the value another boot gives, or one that is the same for every boot),
a faked artifact, or a trace from before the attempt started fails; the
learner's own value passes.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from novalab.labs.cloud import Cloud
from novalab.labs.course import find
from novalab.labs.grading import Context, Fail
from novalab.tracing import attributes as attr
from novalab.tracing.model import Event, Span
from novalab.tracing.store import NoTrace

NOW_NS = 1_700_000_000 * 10**9


class Store:
    """A trace store of given spans: by request id, by server, or a lab's own words."""

    def __init__(self, spans: list[Span]):
        self.spans = spans

    def select(self, request_id=None, server=None, **words):
        if request_id is not None:
            ids = {s.trace_id for s in self.spans if s.get(attr.OPENSTACK_REQUEST_ID) == request_id}
        else:
            ids = {s.trace_id for s in self.spans if server in (
                s.get(attr.NOVA_INSTANCE_UUID), s.get(attr.NOVALAB_SERVER_NAME))}
        if not ids:
            raise NoTrace(f"no trace of {request_id or server}")
        return SimpleNamespace(spans=[s for s in self.spans if s.trace_id in ids])


class Api:
    """The cloud's APIs as canned answers: {(service, path): body}."""

    def __init__(self, routes: dict):
        self.routes = routes

    def get(self, service: str, path: str, **params):
        return self.routes[(service, path)]

    def request(self, method: str, service: str, path: str, **kwargs):
        body = self.routes.get((service, path))
        return SimpleNamespace(status_code=404 if body is None else 200, json=lambda: body,
                               raise_for_status=lambda: None)


def context(lab: str, spans: list[Span], routes: dict, answers: dict,
            server: dict | None = None, workdir: Path = Path("/nonexistent"),
            parameters: dict | None = None, started_at: float = 0.0) -> Context:
    ctx = Context(lab=find(lab), cloud=Cloud("lab", Path("/nonexistent"), {}), user="demo",
                  password="", project="demo", workdir=workdir, answers=answers,
                  parameters=parameters or {}, started_at=started_at)
    api = Api(routes)
    ctx.__dict__.update(store=Store(spans), api=api, admin_api=api)
    ctx.server = lambda name: server
    return ctx


def grade_check(ctx: Context, name: str) -> None:
    getattr(ctx.lab.module("grade"), name)(ctx)


def span(trace: str, span_id: str, parent: str | None, name: str, service: str, start: int,
         kind: str = "INTERNAL", attributes: dict | None = None, events=(), host=None,
         end: int | None = None) -> Span:
    return Span(trace, span_id, parent, name, kind, service, NOW_NS + start,
                NOW_NS + (end if end is not None else start + 1000), host,
                attributes or {}, tuple(events))


# -- lab 17: server actions ------------------------------------------------------------------

SERVER_17 = {"id": "5e17e000-0000-4000-8000-000000000017", "name": "lab17-demo-vm",
             "status": "ACTIVE"}


def save(start: int, **states) -> Event:
    return Event("Instance.save", NOW_NS + start,
                 {f"nova.instance.{key}": value for key, value in states.items()})


def reboot_and_suspend(tag: str) -> list[Span]:
    """A hard reboot and a suspend of one server, each a trace of nova-api and the
    conductor's saves; ``tag`` makes one learner's ids differ from another's."""
    hard, susp = f"{tag}1" * 16, f"{tag}2" * 16
    return [
        span(hard, f"{tag}a" * 8, None, "POST /v2.1/servers/x/action", "nova-api", 0, "SERVER",
             {attr.OPENSTACK_REQUEST_ID: f"req-{tag}-hard"}),
        span(hard, f"{tag}b" * 8, f"{tag}a" * 8, "API.reboot", "nova-api", 10,
             events=[save(11, task_state="rebooting_hard", expected_task_state=("None",))]),
        span(hard, f"{tag}c" * 8, f"{tag}a" * 8, "ConductorManager.instance_update",
             "nova-conductor", 20, events=[save(21, task_state="reboot_pending_hard",
                                                expected_task_state=("rebooting_hard",))]),
        span(hard, f"{tag}d" * 8, f"{tag}a" * 8, "ConductorManager.instance_update",
             "nova-conductor", 30, events=[save(31, task_state="reboot_started_hard",
                                                expected_task_state=("reboot_pending_hard",))]),
        span(hard, f"{tag}e" * 8, f"{tag}a" * 8, "ConductorManager.instance_update",
             "nova-conductor", 40, events=[save(41, task_state="None", vm_state="active",
                                                power_state=1,
                                                expected_task_state=("reboot_started_hard",))]),
        span(susp, f"{tag}f" * 8, None, "POST /v2.1/servers/x/action", "nova-api", 50, "SERVER",
             {attr.OPENSTACK_REQUEST_ID: f"req-{tag}-suspend"}),
        span(susp, f"{tag}0" * 8, f"{tag}f" * 8, "ConductorManager.instance_update",
             "nova-conductor", 60, events=[save(61, task_state="None", vm_state="suspended",
                                                power_state=4,
                                                expected_task_state=("suspending",))]),
    ]


def lab17(answers: dict, workdir: Path = Path("/nonexistent"), console: str = "") -> Context:
    actions = [{"action": "reboot", "request_id": "req-1-hard",
                "start_time": "2023-11-14T22:13:20"},
               {"action": "suspend", "request_id": "req-1-suspend",
                "start_time": "2023-11-14T22:13:21"}]
    routes = {("compute", f"/servers/{SERVER_17['id']}/os-instance-actions"):
              {"instanceActions": actions},
              ("compute", f"/servers/{SERVER_17['id']}/action"): {"output": console},
              ("network", "/v2.0/ports"): {"ports": [{"mac_address": "fa:16:3e:17:00:01"}]}}
    # The store also holds a classmate's (tag 2) traces of the same actions.
    return context("17", reboot_and_suspend("1") + reboot_and_suspend("2"), routes, answers,
                   SERVER_17, workdir)


MINE_17 = ",".join(c * 8 for c in "1b 1c 1d 1e".split())


@pytest.mark.parametrize("given", [
    "rebooting_hard, reboot_pending_hard, reboot_started_hard, None",  # every server's states
    ",".join(c * 8 for c in "2b 2c 2d 2e".split()),                    # a classmate's spans
])
def test_lab17_the_hard_reboot_is_answered_with_the_learners_own_saves(given):
    with pytest.raises(Fail, match="not the spans that saved"):
        grade_check(lab17({"hard-reboot": given}), "hard_reboot")
    grade_check(lab17({"hard-reboot": MINE_17}), "hard_reboot")


@pytest.mark.parametrize("given", ["4", "2f" * 8])  # every suspend's power state; a classmate's
def test_lab17_the_suspend_is_answered_with_the_learners_own_save(given):
    with pytest.raises(Fail, match="not the span whose Instance.save wrote vm_state suspended"):
        grade_check(lab17({"suspended-save": given}), "suspended_save")
    grade_check(lab17({"suspended-save": "10" * 8}), "suspended_save")


CONSOLE = ("Cloud-init v. 24.1 running 'init' at Tue, 14 Nov 2023 22:13:20 +0000. "
           "Up 0.01 seconds.\r\n"
           "ci-info: |  eth0  | True | 10.0.0.17 | fa:16:3e:17:00:01 |\r\n")


def test_lab17_a_console_txt_of_lines_every_guest_prints_is_not_the_servers_log(tmp_path):
    (tmp_path / "console.txt").write_text(CONSOLE.splitlines()[0] + "\n")
    with pytest.raises(Fail, match="does not show the network device"):
        grade_check(lab17({}, tmp_path, CONSOLE), "console_log")
    (tmp_path / "console.txt").write_text(CONSOLE)
    grade_check(lab17({}, tmp_path, CONSOLE), "console_log")


# -- lab 16: key pairs and metadata ----------------------------------------------------------

SERVER_16 = {"id": "5e16e000-0000-4000-8000-000000000016", "name": "lab16-demo-vm",
             "status": "ACTIVE"}
PROXIED = "http://127.0.0.1:8775/openstack/latest/meta_data.json"


def metadata_boot(tag: str, server_id: str, key: str) -> list[Span]:
    """The metadata hop of one boot: the proxy's CLIENT span, nova-api-metadata's SERVER
    span under it and the ``_metadata_as_json`` that served ``key``."""
    trace = f"{tag}6" * 16
    return [
        span(trace, f"{tag}0" * 8, None, "POST /v2.1/servers", "nova-api", 0, "SERVER",
             {attr.NOVA_INSTANCE_UUID: server_id}),
        span(trace, f"{tag}1" * 8, f"{tag}0" * 8, "GET", "neutron-metadata-proxy", 10, "CLIENT",
             {attr.URL_FULL: PROXIED}),
        span(trace, f"{tag}2" * 8, f"{tag}1" * 8, "GET /openstack/latest/meta_data.json",
             "nova-api-metadata", 11, "SERVER"),
        span(trace, f"{tag}3" * 8, f"{tag}2" * 8, "InstanceMetadata._metadata_as_json",
             "nova-api-metadata", 12, attributes={attr.NOVA_KEYPAIR_NAME: key}),
    ]


def test_lab16_the_hop_is_the_learners_span_not_the_url_every_guest_uses():
    spans = metadata_boot("a", SERVER_16["id"], "lab16-demo-key") + \
        metadata_boot("b", "5e16e000-0000-4000-8000-0000000000b2", "lab16-ann-key")
    for given in (PROXIED, "b1" * 8):  # every guest's URL; a classmate's hop
        with pytest.raises(Fail, match="not the span of neutron-metadata-proxy's request"):
            grade_check(context("16", spans, {}, {"proxy-hop": given}, SERVER_16), "proxy_hop")
    grade_check(context("16", spans, {}, {"proxy-hop": "a1" * 8}, SERVER_16), "proxy_hop")


# -- lab 15: shelve --------------------------------------------------------------------------

SERVER_15 = {"id": "5e15e000-0000-4000-8000-000000000015", "name": "lab15-demo-vm",
             "status": "ACTIVE"}


class Session:
    """A shelve session's flow check, as `novalab flow check --flow shelve` gives it."""

    def __init__(self, steps: dict[int, Span]):
        self.steps = steps

    def result(self, number: int):
        return SimpleNamespace(matched=number in self.steps, span=self.steps.get(number),
                               step=SimpleNamespace(text=f"step {number}"))


def lab15(answers: dict) -> Context:
    """Every class's unshelve goes through nova-scheduler and, on an empty lab cloud, back
    to compute-1: only the spans are the learner's."""
    trace = "15" * 16
    steps = {21: span(trace, "21" * 8, None, "process scheduler", "nova-scheduler", 0,
                      "CONSUMER", host="controller"),
             25: span(trace, "25" * 8, None, "send compute.compute-1", "nova-conductor", 10,
                      "PRODUCER", host="controller"),
             26: span(trace, "26" * 8, None, "process compute.compute-1", "nova-compute", 20,
                      "CONSUMER", host="compute-1")}
    ctx = context("15", [], {("compute", f"/servers/{SERVER_15['id']}"):
                             {"server": {"OS-EXT-SRV-ATTR:host": "compute-1"}}},
                  answers, SERVER_15)
    ctx._boots[("shelve", SERVER_15["id"])] = Session(steps)
    return ctx


@pytest.mark.parametrize("given", ["nova-scheduler", "ab" * 8])  # every class's; a classmate's
def test_lab15_the_scheduler_that_picked_is_the_learners_span(given):
    with pytest.raises(Fail, match="not the span id of the CONSUMER span"):
        grade_check(lab15({"picked-by": given}), "picked_by")
    grade_check(lab15({"picked-by": "21" * 8}), "picked_by")


@pytest.mark.parametrize("given", ["compute-1", "ab" * 8])
def test_lab15_the_host_is_answered_with_the_learners_cast_to_it(given):
    with pytest.raises(Fail, match="not the span id of the conductor's cast"):
        grade_check(lab15({"sent-to-host": given}), "sent_to_host")
    grade_check(lab15({"sent-to-host": "25" * 8}), "sent_to_host")


def test_lab15_a_shelve_from_before_the_attempt_does_not_count(monkeypatch):
    """A server kept from an earlier attempt, shelved and unshelved then: the session is
    the latest in the store, and it is old."""
    import dataclasses

    from novalab.diagrams import flows

    real = flows.get_flow("shelve")
    old = [span("0f" * 16, "0f" * 8, None, "POST /v2.1/servers/x/action", "nova-api", 0,
                "SERVER", {attr.NOVA_INSTANCE_UUID: SERVER_15["id"]})]
    monkeypatch.setattr(flows, "get_flow", lambda name: dataclasses.replace(
        real, select=lambda store, **words: old))
    ctx = context("15", [], {}, {}, SERVER_15, started_at=NOW_NS / 1e9 + 60)
    with pytest.raises(Fail, match="before this attempt"):
        grade_check(ctx, "whole_session")


# -- lab 13: safe to share -------------------------------------------------------------------

PROJECT_13 = "13" * 16


def cinder_request(tag: str, project_id: str, status: int, start: int) -> list[Span]:
    """cinder-api's answer to one volume request of ``project_id``, and its count of the
    project's volumes."""
    trace = f"{tag}{status}"[:4] * 8
    return [span(trace, f"{tag}a{status}"[:4] * 4, None, "POST /v3/<project_id>/volumes",
                 "cinder-api", start, "SERVER",
                 {attr.OPENSTACK_REQUEST_ID: f"req-{tag}-{status}",
                  attr.URL_PATH: f"/v3/{project_id}/volumes",
                  attr.HTTP_RESPONSE_STATUS_CODE: status}),
            span(trace, f"{tag}b{status}"[:4] * 4, f"{tag}a{status}"[:4] * 4,
                 "SELECT cinder_volumes", "cinder-api", start + 10, "CLIENT")]


def lab13(answers: dict) -> Context:
    spans = (cinder_request("1", PROJECT_13, 413, 0) + cinder_request("1", PROJECT_13, 401, 100)
             + cinder_request("2", "ab" * 16, 413, 0) + cinder_request("2", "ab" * 16, 401, 100))
    routes = {("identity", "/projects"): {"projects": [{"name": "lab13-demo", "id": PROJECT_13}]},
              ("identity", "/users"): {"users": [{"name": "lab13-demo-learner", "id": "u13",
                                                  "enabled": False}]}}
    return context("13", spans, routes, {"refused-request": "req-1-413", **answers})


def test_lab13_a_classmates_refused_request_is_not_the_learners_projects():
    with pytest.raises(Fail, match="is not a request of project lab13-demo"):
        grade_check(lab13({"refused-request": "req-2-413"}), "refused")
    grade_check(lab13({}), "refused")


@pytest.mark.parametrize("given", ["413", "2b41" * 4])  # every class's status; a classmate's count
def test_lab13_the_quota_count_is_the_learners_span(given):
    with pytest.raises(Fail, match="not the span id of a SELECT"):
        grade_check(lab13({"quota-count": given}), "quota_count")
    grade_check(lab13({"quota-count": "1b411b41" * 2}), "quota_count")


@pytest.mark.parametrize("given, why", [("401", "no trace has the request id"),
                                        ("req-2-401", "is not a request of project")])
def test_lab13_the_lockout_is_the_learners_own_401(given, why):
    with pytest.raises(Fail, match=why):
        grade_check(lab13({"locked-out": given}), "locked_out")
    grade_check(lab13({"locked-out": "req-1-401"}), "locked_out")


# -- lab 14: classic vs today ----------------------------------------------------------------

FIXTURES = Path(__file__).parents[1] / "diagrams" / "fixtures"


def classic_check(name: str):
    from novalab.diagrams.check import check as flow_check
    from novalab.diagrams.flows import get_flow
    from novalab.diagrams.load import load_trace

    return flow_check(load_trace(FIXTURES / name), get_flow("classic"))


@pytest.fixture(scope="module")
def classic_boots():
    """The learner's classic boot, and another (a classmate's, or an earlier one)."""
    return classic_check("boot-whole-cast.otlp.json"), classic_check("boot-embedded.otlp.json")


def lab14(workdir: Path, classic, answers: dict | None = None, started_at: float = 0.0):
    """Lab 14's grade module and a Context whose classic boot is ``classic``; the modern
    boot, where a check needs it, is one step whose span is ``cd``*8."""
    ctx = context("14", [], {}, answers or {}, workdir=workdir, started_at=started_at)
    ctx._boots[("lab14", "classic")] = classic
    step = SimpleNamespace(matched=True, step=SimpleNamespace(number=8),
                           span=SimpleNamespace(span_id="cd" * 8))
    ctx._boots[("lab14", "modern")] = SimpleNamespace(trace=SimpleNamespace(trace_id="ef" * 16),
                                                      results=[step])
    return ctx


def test_lab14_a_compare_page_holding_only_the_trace_ids_is_not_the_comparison(
        tmp_path, classic_boots):
    mine, _ = classic_boots
    (tmp_path / "compare.html").write_text(
        f'{mine.trace.trace_id} {"ef" * 16} <tr data-change="moved">')
    with pytest.raises(Fail, match="shows no span of a classic boot"):
        grade_check(lab14(tmp_path, mine), "compare_page")


def test_lab14_a_compare_page_of_another_boot_is_not_the_learners(tmp_path, classic_boots):
    from novalab.diagrams.compare import compare, render_html

    mine, other = classic_boots
    (tmp_path / "compare.html").write_text(
        render_html(compare(other)) + f"<!-- {mine.trace.trace_id} {'ef' * 16} -->")
    with pytest.raises(Fail, match="does not show your classic boot's spans"):
        grade_check(lab14(tmp_path, mine), "compare_page")
    # The learner's own page gets past the classic side (this one has no modern boot).
    (tmp_path / "compare.html").write_text(render_html(compare(mine)))
    with pytest.raises(Fail, match="shows no span of a modern boot"):
        grade_check(lab14(tmp_path, mine), "compare_page")


def test_lab14_a_boot_from_before_the_attempt_does_not_count(tmp_path):
    from novalab.diagrams.load import load_trace

    spans = list(load_trace(FIXTURES / "boot-whole-cast.otlp.json"))
    (tmp_path / "classic-cloud" / "traces").mkdir(parents=True)
    ctx = context("14", [], {}, {}, workdir=tmp_path, parameters={"tag": "beef"},
                  started_at=max(s.end_ns for s in spans) / 1e9 + 60)
    grade = ctx.lab.module("grade")
    grade.TraceStore = lambda state: SimpleNamespace(
        select=lambda **words: SimpleNamespace(spans=spans))
    with pytest.raises(Fail, match="before this attempt"):
        grade.classic_boot(ctx)


def test_lab14_the_claimer_is_the_learners_call_not_the_service_every_boot_names():
    claim = span("14" * 16, "13" * 8, "c1" * 8, "PUT /allocations/x", "placement-api", 10,
                 "SERVER")
    call = span("14" * 16, "c1" * 8, "c0" * 8, "PUT", "nova-scheduler", 9, "CLIENT")
    above = span("14" * 16, "c0" * 8, None, "SchedulerReportClient.claim_resources",
                 "nova-scheduler", 8)
    from novalab.tracing.model import Trace

    for given in ("nova-scheduler", "ab" * 8):
        ctx = lab14(Path("/nonexistent"), None, {"claimer": given})
        ctx._boots[("lab14", "modern")] = SimpleNamespace(
            trace=Trace.of([claim, call, above]),
            result=lambda n: SimpleNamespace(matched=True, span=claim))
        with pytest.raises(Fail, match="not the span that called placement"):
            grade_check(ctx, "claimer")
    ctx.answers = {"claimer": "c1" * 8}
    grade_check(ctx, "claimer")


# -- lab 18: many hosts ----------------------------------------------------------------------


def create_request(tag: str, host: str) -> list[Span]:
    """The create request of one server built on ``host``: the scheduler's weighing and
    cast, two calls of nova-compute to the conductor (the second waited longer), SQL."""
    trace, root = f"{tag}8" * 16, f"{tag}0" * 8
    weigh = Event("weigh", NOW_NS + 3, {attr.NOVA_SCHEDULER_WEIGHED_HOSTS: (host, "compute-9")})
    call = {attr.RPC_SERVICE: "conductor", attr.NOVALAB_RPC_STYLE: "call",
            attr.RPC_METHOD: "instance_update"}
    reply = {attr.NOVALAB_RPC_STYLE: "reply", attr.RPC_METHOD: "instance_update"}
    return [
        span(trace, root, None, "POST /v2.1/servers", "nova-api", 0, "SERVER",
             {attr.OPENSTACK_REQUEST_ID: f"req-{tag}"}),
        span(trace, f"{tag}1" * 8, root, "INSERT instances", "nova-api", 1, "CLIENT",
             {attr.DB_SYSTEM_NAME: "sqlite"}, end=5),
        span(trace, f"{tag}2" * 8, root, "FilterScheduler._schedule", "nova-scheduler", 2,
             events=[weigh]),
        span(trace, f"{tag}3" * 8, root, f"send compute.{host}", "nova-scheduler", 4,
             "PRODUCER"),
        span(trace, f"{tag}4" * 8, root, "ComputeManager._build", "nova-compute", 6, host=host),
        span(trace, f"{tag}5" * 8, f"{tag}4" * 8, "send conductor", "nova-compute", 7,
             "PRODUCER", call, host=host),
        span(trace, f"{tag}6" * 8, f"{tag}4" * 8, "receive reply_x", "nova-compute", 8,
             "CONSUMER", reply, host=host, end=10),
        span(trace, f"{tag}7" * 8, f"{tag}4" * 8, "send conductor", "nova-compute", 20,
             "PRODUCER", call, host=host),
        span(trace, f"{tag}9" * 8, f"{tag}4" * 8, "receive reply_x", "nova-compute", 21,
             "CONSUMER", reply, host=host, end=90),
    ]


def lab18(answers: dict) -> Context:
    """The learner's a, b, c (tags 1-3) on compute-1..3, and a classmate's (tags 4-6) on
    the same hosts, as every empty lab cloud places them."""
    spans, routes, servers = [], {}, {}
    for tag, key in (("1", "a"), ("2", "b"), ("3", "c")):
        server_id = f"5e18e000-0000-4000-8000-00000000001{tag}"
        servers[f"lab18-demo-{key}"] = {"id": server_id, "name": f"lab18-demo-{key}",
                                        "status": "ACTIVE"}
        routes[("compute", f"/servers/{server_id}/os-instance-actions")] = {
            "instanceActions": [{"action": "create", "request_id": f"req-{tag}"}]}
        spans += create_request(tag, f"compute-{tag}")
        spans += create_request(str(int(tag) + 3), f"compute-{tag}")
    ctx = context("18", spans, routes, answers)
    ctx.server = servers.get
    return ctx


@pytest.mark.parametrize("given", [
    "compute-1,compute-2,compute-3",                  # where every class's servers land
    ",".join(t * 8 for t in ("43", "53", "63")),      # a classmate's casts
])
def test_lab18_the_hosts_are_answered_with_the_learners_casts(given):
    with pytest.raises(Fail, match="not the spans of nova-scheduler's casts"):
        grade_check(lab18({"hosts": given}), "hosts")
    grade_check(lab18({"hosts": ",".join(t * 8 for t in ("13", "23", "33"))}), "hosts")


@pytest.mark.parametrize("check, key, shared, classmate, mine", [
    ("weighed", "weighed", "compute-3,compute-9", "62" * 8, "32" * 8),
    ("slowest_call", "slowest-call", "2", "47" * 8, "17" * 8),  # every boot's number of calls
    ("sql", "sql", "1,0,0,0", "41" * 8, "11" * 8),              # every boot's counts
])
def test_lab18_what_every_boot_shares_gives_way_to_the_learners_spans(check, key, shared,
                                                                      classmate, mine):
    for given in (shared, classmate):
        with pytest.raises(Fail, match="is not the"):
            grade_check(lab18({key: given}), check)
    grade_check(lab18({key: mine}), check)
