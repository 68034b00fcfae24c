"""The trace page (``diagrams/web.py``): its JSON and pages, then the page in a real browser.

The first tests use Flask's test client over a trace store built from the
recorded boots in ``fixtures/`` (written as the store's exporter writes them:
one OTLP document a line in ``STATE/traces/*.jsonl``), plus two small
requests of our own. The browser tests drive Debian's headless Chromium with
Selenium (``chromium``, ``chromium-driver``; ``selenium`` from the test extra,
never downloading a browser or a driver): the page draws every span and every
step, shows a span's attributes on a click, fills in while a boot runs, and
asks nothing of any host but its own. Without Chromium, its driver or
Selenium they skip, except under ``NOVALAB_REQUIRE_SERVICES=1`` (CI).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import jsonschema
import pytest
from chromium import js as _js
from chromium import wait

from novalab.diagrams import jaeger, web
from novalab.diagrams.check import check
from novalab.diagrams.flows import get_flow
from novalab.diagrams.model import Span, Trace
from novalab.reference.deploy.statedir import StateDir, Unit, write_json
from novalab.tracing.otlp_json import spans_from_otlp, spans_to_otlp
from novalab.tracing.store import TraceStore

pytestmark = pytest.mark.e2e  # `novalab serve` and `novalab web`, Chromium

FIXTURES = Path(__file__).parent / "fixtures"
STATIC = Path(web.__file__).with_name("web_static")
NOVALAB = [sys.executable, "-m", "novalab.labs.cli"]
REQUEST_ID = "req-0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"


def put_in_store(state_dir: Path, unit: str, docs: list[dict]) -> Path:
    """Append OTLP documents to ``STATE/traces/<unit>.jsonl``, one a line, as the
    store's exporter (``OtlpJsonLinesExporter``) writes its batches."""
    path = Path(state_dir) / "traces" / f"{unit}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as out:
        for doc in docs:
            out.write(json.dumps(doc, separators=(",", ":")) + "\n")
    return path


def _span(trace_id: str, name: str, kind: str, service: str, **attributes) -> Span:
    start = 1_577_836_800_000_000_000  # 2020-01-01: older than the recorded boots
    return Span(trace_id=trace_id, span_id=trace_id[:16], parent_id=None, name=name, kind=kind,
                service=service, start_ns=start, end_ns=start + 2_000_000,
                attributes=attributes, resource={"service.name": service})


# What users do besides booting: a request (listed), and periodic work (only with everything).
A_REQUEST = _span("7e57" + "1" * 28, "GET /v2.1/flavors", "SERVER", "nova-api",
                  **{"openstack.request_id": REQUEST_ID, "http.response.status_code": 200})
PERIODIC = _span("7e57" + "2" * 28, "ComputeManager.update_available_resource", "INTERNAL",
                 "nova-compute")


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory) -> Path:
    """Three recorded boots and two other traces, in a state dir's trace store."""
    state = tmp_path_factory.mktemp("store")
    put_in_store(state, "boot", [json.loads((FIXTURES / name).read_text()) for name in
                                 ("boot-whole-cast.otlp.json", "boot-embedded.otlp.json")])
    shutil.copy(FIXTURES / "boot-rabbitmq-postgresql.otlp.jsonl",
                state / "traces" / "rabbitmq.jsonl")
    put_in_store(state, "serve", [spans_to_otlp([A_REQUEST]), spans_to_otlp([PERIODIC])])
    return state


@pytest.fixture(scope="module")
def client(store_dir):
    return web.create_app(store_dir).test_client()


def _create_span(trace: Trace) -> Span:
    return next(s for s in trace if s.service == "nova-api" and s.kind == "SERVER"
                and s.name == "POST /v2.1/servers")


# -- the list ------------------------------------------------------------------------------------

def test_list_shows_each_boot_and_request_newest_first(client, recorded_whole_cast_trace,
                                                        embedded_trace, rabbitmq_trace):
    rows = client.get("/api/traces").get_json()["rows"]
    boots = sorted([recorded_whole_cast_trace, embedded_trace, rabbitmq_trace],
                   key=lambda t: t.start_ns, reverse=True)
    assert [r["trace_id"] for r in rows] == [t.trace_id for t in boots] + [A_REQUEST.trace_id]
    whole = rows[[t.trace_id for t in boots].index(recorded_whole_cast_trace.trace_id)]
    assert whole["kind"] == "boot" and whole["status"] == "ACTIVE"
    assert whole["spans"] == len(recorded_whole_cast_trace) and whole["steps"] == "58/58"
    assert whole["servers"][0]["name"] == "demo-server" and len(whole["services"]) == 19
    embedded = next(r for r in rows if r["trace_id"] == embedded_trace.trace_id)
    assert embedded["steps"] == "28/58"
    request = rows[-1]
    assert request["kind"] == "request" and request["request_ids"] == [REQUEST_ID]
    assert request["status"] == "200" and request["steps"] == ""
    everything = client.get("/api/traces?everything=1").get_json()["rows"]
    assert PERIODIC.trace_id in {r["trace_id"] for r in everything} - {r["trace_id"]
                                                                        for r in rows}


def test_an_empty_store_says_so_and_creates_nothing(tmp_path):
    state = tmp_path / "not-yet"
    client = web.create_app(state).test_client()
    doc = client.get("/api/traces").get_json()
    assert doc["rows"] == [] and doc["exists"] is False
    assert doc["traces_dir"] == str(state / "traces")
    assert client.get("/").status_code == 200
    live = client.get("/api/trace/latest").get_json()
    assert live["waiting"] is True and "No boot in" in live["message"]
    assert live["check"]["summary"]["matched"] == 0 and live["check"]["summary"]["total"] == 58
    assert client.get("/live").status_code == 200
    assert client.get("/trace/" + "ab" * 16).status_code == 404
    assert not state.exists()


# -- one trace -----------------------------------------------------------------------------------

def test_a_trace_is_its_spans_in_tree_order_its_flow_check_and_sequence(
        client, recorded_whole_cast_trace):
    trace = recorded_whole_cast_trace
    assert client.get(f"/trace/{trace.trace_id}").status_code == 200
    doc = client.get(f"/api/trace/{trace.trace_id}").get_json()
    spans = doc["spans"]
    assert sorted(s["id"] for s in spans) == sorted(s.span_id for s in trace)
    where = {s["id"]: n for n, s in enumerate(spans)}
    for n, span in enumerate(spans):  # parents first, children one level deeper
        if span["parent"] in where:
            assert where[span["parent"]] < n
            assert span["depth"] == spans[where[span["parent"]]]["depth"] + 1
        else:
            assert span["depth"] == 0
    assert spans[0]["name"] == "openstack server create" and spans[0]["start_ms"] == 0
    assert doc["duration_ms"] == pytest.approx((trace.end_ns - trace.start_ns) / 1e6, abs=1e-3)
    summary = doc["check"]["summary"]
    assert (summary["matched"], summary["total"], summary["ok"]) == (58, 58, True)
    assert len(doc["check"]["steps"]) == 58 and doc["check"]["steps"][1]["notes"]
    assert len(re.findall(r'<g class="arrow[ "]', doc["sequence_svg"])) == 58
    assert doc["complete"] is True and doc["row"]["status"] == "ACTIVE"
    again = client.get(f"/api/trace/{trace.trace_id}?known={doc['version']}").get_json()
    assert again == {"version": doc["version"], "unchanged": True}


def test_a_span_carries_what_the_details_panel_shows(client, recorded_whole_cast_trace):
    trace = recorded_whole_cast_trace
    spans = {s["id"]: s for s in client.get(f"/api/trace/{trace.trace_id}").get_json()["spans"]}
    create = spans[_create_span(trace).span_id]
    assert create["kind"] == "SERVER" and create["service"] == "nova-api"
    assert create["attributes"]["http.route"] == "/v2.1/servers"
    assert create["attributes"]["http.response.status_code"] == 202
    assert create["resource"]["service.name"] == "nova-api"
    upstream = create["upstream"]  # the controller method that handled it
    assert upstream["function"].endswith("ServersController.create")
    assert upstream["url"].startswith("https://opendev.org/openstack/nova/")
    assert upstream["own"] is False and spans[upstream["span"]]["parent"] == create["id"]
    linked = next(s for s in spans.values() if s["links"])
    assert linked["links"][0]["span_id"] in spans
    event = next(s for s in spans.values() if s["events"])["events"][0]
    assert event["name"] and event["offset_ms"] >= 0


def test_steps_appear_as_the_spans_arrive(tmp_path, recorded_whole_cast_trace):
    """What the page shows while a boot runs: each poll re-runs the flow check on what
    has arrived so far (spans are exported when they end)."""
    spans = sorted(recorded_whole_cast_trace, key=lambda s: s.end_ns)
    first = spans.index(_create_span(recorded_whole_cast_trace)) + 1  # up to the 202
    client = web.create_app(tmp_path).test_client()
    waiting = client.get("/api/trace/latest").get_json()
    assert waiting["waiting"] and waiting["check"]["summary"]["matched"] == 0
    put_in_store(tmp_path, "boot", [spans_to_otlp(spans[:first])])
    early = client.get(f"/api/trace/latest?known={waiting['version']}").get_json()
    assert early["row"]["trace_id"] == recorded_whole_cast_trace.trace_id
    assert 0 < early["check"]["summary"]["matched"] < 58
    assert early["complete"] is False and early["row"]["status"] == "BUILD"
    assert len(early["spans"]) == first
    put_in_store(tmp_path, "boot", [spans_to_otlp(spans[first:])])
    done = client.get(f"/api/trace/latest?known={early['version']}").get_json()
    assert done["version"] != early["version"]
    assert done["check"]["summary"]["matched"] == 58 and done["complete"] is True


# -- errors, redirects, downloads --------------------------------------------------------------

@pytest.mark.parametrize("path", [
    "/trace/not-a-trace-id", "/trace/" + "0" * 32, "/trace/" + "a" * 33, "/trace/%00",
    "/trace/..%2F..%2Fetc%2Fpasswd", "/api/trace/zz", "/api/trace/" + "0" * 32,
    "/api/trace/%FF%FE", "/api/trace/" + "0" * 32 + "/otlp.json",
    "/api/trace/" + "0" * 32 + "/callgraph.svg", "/server/no-such-server",
    "/request/req-no-such-request", "/no/such/page", "/static/nothing.js"])
def test_what_is_not_there_is_a_404_that_says_so(client, path):
    response = client.get(path)
    assert response.status_code == 404
    if path.startswith("/api/"):
        assert response.get_json()["error"]
    else:
        assert b'id="error"' in response.data


def test_bad_requests_are_never_a_500(client, recorded_whole_cast_trace):
    trace_id = recorded_whole_cast_trace.trace_id
    assert client.post("/api/traces").status_code == 405
    assert client.get(f"/api/trace/{trace_id}/secrets.txt").status_code == 404
    assert client.get(f"/api/trace/{trace_id}?known=%00%FF").status_code == 200
    assert client.get("/api/traces?everything=%FF").status_code == 200
    assert client.get(f"/trace/{trace_id.upper()}").status_code == 200


def test_server_and_request_id_lead_to_their_trace(client, recorded_whole_cast_trace):
    trace = recorded_whole_cast_trace
    server_id = _create_span(trace).get("nova.instance.uuid") or next(
        s.get("nova.instance.uuid") for s in trace if s.get("nova.instance.uuid"))
    response = client.get(f"/server/{server_id}")
    assert response.status_code == 302 and response.location == f"/trace/{trace.trace_id}"
    assert client.get("/server/demo-server").status_code == 302  # the newest of that name
    response = client.get(f"/request/{REQUEST_ID}")
    assert response.location == f"/trace/{A_REQUEST.trace_id}"
    assert client.get("/trace/latest").location == "/live"


def test_downloads_of_one_trace(client, recorded_whole_cast_trace):
    trace = recorded_whole_cast_trace
    base = f"/api/trace/{trace.trace_id}"
    otlp = client.get(f"{base}/otlp.json")
    assert otlp.headers["Content-Disposition"] == \
        f'attachment; filename="trace-{trace.trace_id}.otlp.json"'
    assert {s.span_id for s in spans_from_otlp(otlp.get_json())} == \
        {s.span_id for s in trace}
    doc = client.get(f"{base}/jaeger.json").get_json()
    jsonschema.validate(doc, jaeger.SCHEMA)
    assert len(doc["data"][0]["spans"]) == len(trace)
    for name, start in (("sequence.svg", "<svg"), ("sequence.html", "<!DOCTYPE html>"),
                        ("sequence.mmd", "sequenceDiagram"), ("sequence.puml", "@startuml")):
        response = client.get(f"{base}/{name}")
        assert response.status_code == 200
        assert response.get_data(as_text=True).lstrip().startswith(start), name


def test_the_call_graph_is_svg(client, recorded_whole_cast_trace):
    if shutil.which("dot") is None:
        pytest.skip("graphviz' dot is not installed (Debian: apt-get install graphviz)")
    response = client.get(f"/api/trace/{recorded_whole_cast_trace.trace_id}/callgraph.svg")
    assert response.status_code == 200 and response.mimetype == "image/svg+xml"
    assert "ComputeManager" in response.get_data(as_text=True)


def test_without_dot_the_call_graph_says_what_to_install(store_dir, recorded_whole_cast_trace,
                                                          tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` anywhere
    client = web.create_app(store_dir).test_client()
    response = client.get(f"/api/trace/{recorded_whole_cast_trace.trace_id}/callgraph.svg")
    assert response.status_code == 503
    assert "apt-get install graphviz" in response.get_json()["error"]


def test_the_page_asks_nothing_of_other_hosts():
    """No CDN, no web font, no script from elsewhere: every file the page loads is ours."""
    files = sorted(STATIC.iterdir())
    assert {p.name for p in files} >= {"index.html", "trace.html", "page.css", "common.js"}
    for path in files:
        text = path.read_text(encoding="utf-8")
        urls = set(re.findall(r"(?:https?:)?//[\w.-]+\.\w+[^\s'\")]*", text))
        assert urls <= {"http://www.w3.org/2000/svg"}, (path.name, urls)  # a namespace
        assert "@import" not in text and "url(" not in text, path.name
    for page in ("index.html", "trace.html"):
        sources = re.findall(r'(?:src|href)="([^"]+)"', (STATIC / page).read_text())
        assert sources and all(s.startswith(("/", "#")) for s in sources), sources


# -- the commands ---------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _read_until(proc: subprocess.Popen, prefix: str, timeout: float = 90) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            pytest.fail(f"exited with {proc.returncode}: {proc.stderr.read()[-2000:]}")
        if line.startswith(prefix):
            return line
    pytest.fail(f"no line starting {prefix!r} within {timeout} s")


def test_novalab_web_prints_its_url_and_serves_until_interrupted(store_dir):
    proc = subprocess.Popen([*NOVALAB, "web", "--state-dir", str(store_dir), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = _read_until(proc, "novalab web: ", timeout=30)
        url = re.search(r"http://127\.0\.0\.1:\d+/", line).group(0)
        assert len(httpx.get(url + "api/traces").json()["rows"]) == 4
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    assert proc.returncode == 0


def test_novalab_web_on_a_busy_port_says_so(store_dir):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run([*NOVALAB, "web", "--state-dir", str(store_dir), "--port",
                               str(port)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr


def test_serve_hosts_the_page_on_its_state_dir(tmp_path, standard_ports):
    """The page of a shared cloud asks for a keystone login even on loopback, which
    every local user reaches (issue 21, finding 10)."""
    proc = subprocess.Popen([*NOVALAB, "serve", "--state-dir", str(tmp_path), "--web-port",
                             str(_free_port())], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        env = {}
        for name in ("OS_AUTH_URL", "OS_USERNAME", "OS_PASSWORD", "OS_PROJECT_NAME"):
            env[name] = _read_until(proc, f"export {name}=").strip().split("=", 1)[1]
        url = _read_until(proc, "# trace page: ").split()[-1]
        assert httpx.get(url + "api/traces").status_code == 401
        assert httpx.get(url).headers["Location"].startswith("/login")
        login = httpx.post(f"{env['OS_AUTH_URL']}/auth/tokens", json={"auth": {"identity": {
            "methods": ["password"], "password": {"user": {
                "name": env["OS_USERNAME"], "domain": {"id": "default"},
                "password": env["OS_PASSWORD"]}}}, "scope": {"project": {
                    "name": env["OS_PROJECT_NAME"], "domain": {"id": "default"}}}}})
        doc = httpx.get(url + "api/traces",
                        headers={"X-Auth-Token": login.headers["X-Subject-Token"]}).json()
        assert doc["traces_dir"] == str(tmp_path / "traces")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    assert proc.returncode == 0


def test_up_runs_the_page_as_one_more_unit(tmp_path, monkeypatch):
    """``novalab up`` starts it last as ``service novalab-web``: a ready file with the URL
    ``status`` probes, gone once stopped (the processes themselves: test_up.py)."""
    from novalab.reference.deploy import health, processes

    assert processes.plan(2)[-1] == Unit(processes.WEB_UNIT)
    assert Unit(processes.WEB_UNIT) not in processes.plan(2, web=False)
    monkeypatch.setenv(processes.ENV_WEB_PORT, "0")
    # Its keystone, as `up` starts it first (the page asks nothing of it until a login).
    keystone = StateDir(tmp_path).make().ready_file(Unit("keystone"))
    write_json(keystone, {"pid": os.getpid(), "urls": {"keystone": "http://127.0.0.1:9"}})
    stop, ready = threading.Event(), {}
    runner = threading.Thread(target=processes.run_service, args=(processes.WEB_UNIT, None),
                              kwargs={"transport_url": "memory://", "db_url": "sqlite://",
                                      "state_dir": tmp_path, "stop": stop,
                                      "on_ready": ready.update})
    runner.start()
    try:
        deadline = time.monotonic() + 10
        while not ready and time.monotonic() < deadline:
            time.sleep(0.02)
        url = ready["http"]["web"]
        assert health.http_version_doc(url).ok
        assert httpx.get(f"{url}/api/traces").status_code == 401, "a shared cloud's page"
        assert StateDir(tmp_path).ready(Unit(processes.WEB_UNIT))["http"] == {"web": url}
    finally:
        stop.set()
        runner.join(10)
    assert StateDir(tmp_path).ready(Unit(processes.WEB_UNIT)) is None


# -- in a real browser ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def page(store_dir):
    server = web.start(store_dir, port=0)
    yield server.url
    server.stop()


def test_browser_draws_every_span_as_a_bar_and_every_step_as_a_row(
        browser, page, recorded_whole_cast_trace):
    from selenium.webdriver.common.by import By

    trace = recorded_whole_cast_trace
    browser.get(f"{page}/trace/{trace.trace_id}#timeline")
    wait(browser, lambda d: _js(d, "document.body.dataset.spans") == str(len(trace)))
    assert len(browser.find_elements(By.CSS_SELECTOR, "#waterfall .wf-bar")) == len(trace)
    root_bar = browser.find_element(By.CSS_SELECTOR, "#waterfall .wf-row .wf-bar")
    # To scale: the root's bar is its share of the trace (the guest's metadata requests may
    # end after the client saw ACTIVE and its root span ended).
    width = float(re.search(r"width: ([\d.]+)%", root_bar.get_attribute("style")).group(1))
    share = 100 * trace.root.duration_ns / (trace.end_ns - trace.start_ns)
    assert width == pytest.approx(share, abs=0.01)
    keystone = sum(1 for s in trace if s.service == "keystone")
    browser.find_element(By.CSS_SELECTOR, '#wf-services input[data-service="keystone"]').click()
    shown = "document.querySelectorAll('#waterfall .wf-row:not([hidden])').length"
    assert _js(browser, shown) == len(trace) - keystone
    browser.find_element(By.CSS_SELECTOR, '#tabs a[data-tab="flow"]').click()
    rows = browser.find_elements(By.CSS_SELECTOR, "#flow-table tbody tr")
    assert len(rows) == 58 and rows[0].is_displayed()
    assert {r.get_attribute("data-status") for r in rows} == {"matched"}
    assert browser.find_element(By.ID, "steps").text == "58/58 steps matched"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#sequence-box g.arrow")) == 58


def test_browser_shows_a_clicked_spans_attributes(browser, page, recorded_whole_cast_trace):
    from selenium.webdriver.common.by import By

    trace = recorded_whole_cast_trace
    create = _create_span(trace)
    browser.get(f"{page}/trace/{trace.trace_id}#timeline")
    wait(browser, lambda d: _js(d, "document.body.dataset.spans") == str(len(trace)))
    row = browser.find_element(By.CSS_SELECTOR, f'.wf-row[data-span="{create.span_id}"]')
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", row)
    row.click()
    details = browser.find_element(By.ID, "details")
    wait(browser, lambda d: details.get_attribute("data-span") == create.span_id)
    assert details.find_element(By.TAG_NAME, "h2").text == "POST /v2.1/servers"
    attributes = {}
    for tr in details.find_elements(By.CSS_SELECTOR, "#attributes tr"):
        key, value = tr.find_elements(By.TAG_NAME, "td")
        attributes[key.text] = value.text
    assert attributes["http.route"] == "/v2.1/servers"
    assert attributes["http.response.status_code"] == "202"
    link = details.find_element(By.CSS_SELECTOR, ".upstream a")
    assert link.text.endswith("ServersController.create")
    assert link.get_attribute("href").startswith("https://opendev.org/openstack/nova/")
    assert "picked" in row.get_attribute("class")
    # An arrow of the sequence diagram selects its span too: step 1, the token request.
    browser.find_element(By.CSS_SELECTOR, '#tabs a[data-tab="sequence"]').click()
    step_one = check(trace, get_flow("classic")).result(1).span
    browser.find_element(By.CSS_SELECTOR, "#sequence-box #arrow-1 text.label").click()
    wait(browser, lambda d: details.get_attribute("data-span") == step_one.span_id)
    assert details.find_element(By.TAG_NAME, "h2").text == "POST /v3/auth/tokens"


def test_browser_shows_a_boots_steps_while_it_runs(browser, tmp_path, monkeypatch):
    """The live view, open before the boot starts, counts its matched steps up from 0.

    The boot is held in the compute host's ``spawn`` until the page has shown some
    steps (the API's, the scheduler's, the network's, the volume's: everything
    Nova does before spawning), so the intermediate count is certain to be seen.
    """
    from selenium.webdriver.common.by import By

    from novalab.reference.deploy.boot import BootRequest, boot
    from novalab.reference.deploy.embedded import CloudConfig, EmbeddedCloud
    from novalab.reference.nova.virt.libvirt.driver import LibvirtDriver
    from novalab.tracing.setup import Telemetry

    state = tmp_path / "cloud"
    telemetry = Telemetry(memory=True, otlp=False, file_path=state / "traces" / "cloud.jsonl",
                          schedule_delay_millis=100)
    release = threading.Event()
    spawn = LibvirtDriver.spawn

    def held_spawn(self, *args, **kwargs):
        release.wait(30)
        return spawn(self, *args, **kwargs)

    monkeypatch.setattr(LibvirtDriver, "spawn", held_spawn)
    server = web.start(state, port=0)
    seen: list[int] = []

    def matched() -> int:
        value = int(browser.find_element(By.ID, "steps").get_attribute("data-matched"))
        if not seen or seen[-1] != value:
            seen.append(value)
        return value

    try:
        with EmbeddedCloud(CloudConfig(state_dir=state), telemetry) as cloud:
            browser.get(f"{server.url}/live?poll=200")
            wait(browser, lambda d: d.find_element(By.ID, "title").text.startswith("live: wait"))
            assert matched() == 0
            outcome = {}
            booting = threading.Thread(target=lambda: outcome.update(
                result=boot(cloud, BootRequest(name="live-vm"))))
            booting.start()
            try:
                wait(browser, lambda d: matched() > 0, timeout=30)
            finally:
                release.set()
                booting.join(60)
            assert outcome["result"].active
        telemetry.force_flush()
        store = TraceStore(state).refresh()
        final = check(Trace.of(store.load(store.find(server="live-vm")[0])),
                      get_flow("classic")).matched
        wait(browser, lambda d: matched() == final, timeout=20)
    finally:
        release.set()
        server.stop()
        telemetry.shutdown()
    assert seen[0] == 0 and seen[-1] == final
    assert any(0 < value < final for value in seen), seen
    assert final == 58


def test_browser_asks_nothing_of_other_hosts(browser, page, recorded_whole_cast_trace):
    """Chrome's own log of every request the pages made: all to the app, on loopback."""
    from selenium.webdriver.common.by import By

    trace = recorded_whole_cast_trace
    # Leave the earlier test's page first: a live page polls its own server until it
    # is gone, and a poll between the flush and the navigation would be counted here.
    browser.get("about:blank")
    browser.get_log("performance")  # forget the earlier tests' requests
    browser.get(f"{page}/")
    wait(browser, lambda d: _js(d, "document.body.dataset.rows") == "4")
    browser.get(f"{page}/trace/{trace.trace_id}")
    wait(browser, lambda d: _js(d, "document.body.dataset.spans") == str(len(trace)))
    for tab in ("flow", "timeline", "downloads", "callgraph"):
        browser.find_element(By.CSS_SELECTOR, f'#tabs a[data-tab="{tab}"]').click()
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#callgraph-box svg, "
                                                             "#callgraph-box .message"))
    urls = []
    for entry in browser.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    assert any(u.endswith("/static/page.css") for u in urls)
    assert any("/callgraph.svg" in u for u in urls) and any("/api/traces" in u for u in urls)
    # chrome://, data: and the like never leave the browser (Chrome's new-tab page asks
    # chrome://favicon2 for its own tiles now and then); every network request is ours.
    internal = ("chrome:", "chrome-extension:", "chrome-search:", "data:", "blob:", "about:")
    assert [u for u in urls if not u.startswith(page + "/") and not u.startswith(internal)] \
        == []


# -- a modern boot's trace: the page draws the table the trace shows -------------------------------

@pytest.fixture(scope="module")
def modern_store(tmp_path_factory) -> tuple[Path, Trace]:
    """``(state dir, trace)``: a real boot on an embedded cloud wired as today's Nova
    (``topology="modern"``), its spans written by the cloud's own exporter into the
    state dir's trace store, beside the recorded classic whole-cast boot."""
    from novalab.diagrams.load import load_trace
    from novalab.reference.deploy.boot import BootRequest, boot
    from novalab.reference.deploy.embedded import CloudConfig, EmbeddedCloud
    from novalab.tracing.setup import Telemetry

    state = tmp_path_factory.mktemp("modern-page") / "cloud"
    telemetry = Telemetry(memory=True, otlp=False, file_path=state / "traces" / "cloud.jsonl")
    with EmbeddedCloud(CloudConfig(state_dir=state, topology="modern"), telemetry) as cloud:
        result = boot(cloud, BootRequest(name="today"))
        assert result.active, result.server
        trace = load_trace(result.spans)
    telemetry.shutdown()
    put_in_store(state, "recorded", [json.loads((FIXTURES / "boot-whole-cast.otlp.json")
                                                .read_text())])
    return state, trace


def test_a_modern_boots_page_shows_the_modern_steps(modern_store, recorded_whole_cast_trace):
    state, trace = modern_store
    modern, classic = get_flow("modern"), get_flow("classic")
    client = web.create_app(state).test_client()
    doc = client.get(f"/api/trace/{trace.trace_id}").get_json()
    assert doc["flow"]["name"] == "modern" and doc["flow"]["steps"] == len(modern.steps)
    assert "schedule_and_build_instances" in doc["flow"]["why"]
    assert [s["text"] for s in doc["check"]["steps"]] == [s.text for s in modern.steps]
    assert doc["check"]["flow"] == "modern" and doc["check"]["summary"]["ok"] is True
    assert {s["status"] for s in doc["check"]["steps"]} == {"matched"}
    assert len(re.findall(r'<g class="arrow[ "]', doc["sequence_svg"])) == len(modern.steps)
    download = client.get(f"/api/trace/{trace.trace_id}/sequence.svg").get_data(as_text=True)
    assert len(re.findall(r'<g class="arrow[ "]', download)) == len(modern.steps)
    # The classic boot in the same store keeps the 58.
    old = client.get(f"/api/trace/{recorded_whole_cast_trace.trace_id}").get_json()
    assert old["flow"]["name"] == "classic" and old["flow"]["steps"] == len(classic.steps)
    assert [s["text"] for s in old["check"]["steps"]] == [s.text for s in classic.steps]
    # The list counts each boot on its own table.
    rows = {r["trace_id"]: r for r in client.get("/api/traces").get_json()["rows"]}
    steps = len(modern.steps)
    assert (rows[trace.trace_id]["steps"], rows[trace.trace_id]["flow"]) == \
        (f"{steps}/{steps}", "modern")
    assert rows[recorded_whole_cast_trace.trace_id]["flow"] == "classic"


def test_the_live_view_before_a_boot_counts_the_steps_of_the_deployments_topology(tmp_path):
    """`novalab up --topology modern` records its topology in state.json (`serve`, in
    cloud.json): the page waiting for the first boot counts the modern table's steps."""
    for name, topology in (("state.json", "modern"), ("cloud.json", "modern"),
                           ("state.json", "classic")):
        state = tmp_path / f"{name}-{topology}"
        state.mkdir()
        (state / name).write_text(json.dumps({"topology": topology}))
        live = web.create_app(state).test_client().get("/api/trace/latest").get_json()
        assert live["waiting"] is True and live["flow"]["name"] == topology
        assert live["check"]["summary"]["total"] == len(get_flow(topology).steps)


def test_browser_draws_a_modern_boot_with_the_modern_steps(browser, modern_store,
                                                           recorded_whole_cast_trace):
    from selenium.webdriver.common.by import By

    state, trace = modern_store
    server = web.start(state, port=0)
    try:
        for shown, name in ((trace, "modern"), (recorded_whole_cast_trace, "classic")):
            steps = len(get_flow(name).steps)
            browser.get(f"{server.url}/trace/{shown.trace_id}#flow")
            wait(browser, lambda d, shown=shown: _js(d, "document.body.dataset.spans")
                 == str(len(shown)))
            assert _js(browser, "document.body.dataset.flow") == name
            rows = browser.find_elements(By.CSS_SELECTOR, "#flow-table tbody tr")
            assert len(rows) == steps
            assert {r.get_attribute("data-status") for r in rows} == {"matched"}
            assert browser.find_element(By.ID, "steps").text == \
                f"{steps}/{steps} steps matched"
            tab = browser.find_element(By.CSS_SELECTOR, '#tabs a[data-tab="sequence"]')
            assert tab.text == f"Sequence ({steps} steps)"
            tab.click()
            assert browser.find_element(By.ID, "flow-name").text == name
            assert len(browser.find_elements(By.CSS_SELECTOR, "#sequence-box g.arrow")) \
                == steps
    finally:
        server.stop()
