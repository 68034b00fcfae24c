"""The trace page respects projects once it is reachable by others (issue 10, item 3).

On loopback (the default) the page is the learner's own and asks nothing. Bound
to any other address, or with ``require_auth``, it asks for a keystone token
(a login form, or an ``X-Auth-Token`` header), and each project sees only the
boots of the servers it may see; admins see every trace.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from chromium import js, wait

from novalab.diagrams import web, web_auth
from novalab.labs.client import LabService
from novalab.labs.service.build import lab_service
from novalab.reference.common.credentials import PERSONA_PASSWORD
from novalab.reference.common.metadata_secret import guest_source_address, shared_secret
from novalab.reference.deploy import seed
from novalab.reference.deploy.embedded import CloudConfig, EmbeddedCloud
from novalab.tracing.otlp_json import OtlpJsonLinesExporter
from novalab.tracing.setup import Telemetry


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("localhost", True),
    ("0.0.0.0", False), ("::", False), ("192.168.1.20", False), ("lab.example", False)])
def test_only_loopback_is_served_without_a_token(host, loopback):
    assert web_auth.is_loopback(host) is loopback


def _token(cloud, user, project) -> str:
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": user, "domain": {"id": "default"},
            "password": cloud.config.credentials.password_for(user)}}},
        "scope": {"project": {"name": project, "domain": {"id": "default"}}}}}
    response = httpx.post(f"{cloud.identity_url}/auth/tokens", json=body)
    assert response.status_code == 201, response.text
    return response.headers["X-Subject-Token"]


@pytest.fixture(scope="module")
def two_projects(tmp_path_factory):
    """A cloud where demo and alt_demo each booted a server; its traces in the store."""
    state = tmp_path_factory.mktemp("web-auth") / "cloud"
    users = dict(seed.USERS)
    seed.USERS.setdefault("alt_demo", {"project": "alt_demo", "roles": ["member", "reader"]})
    telemetry = Telemetry(memory=True, otlp=False)
    try:
        with EmbeddedCloud(CloudConfig(state_dir=state, vif_plugging_timeout=1.0),
                           telemetry) as cloud:
            servers = {}
            for user in ("demo", "alt_demo"):
                token = _token(cloud, user, user)
                response = httpx.post(f"{cloud.urls['nova']}/v2.1/servers", headers={
                    "X-Auth-Token": token}, json={"server": {
                        "name": f"{user}-vm", "flavorRef": "42",
                        "imageRef": cloud.cirros["id"]}})
                assert response.status_code == 202, response.text
                servers[user] = response.json()["server"]["id"]
            lab_service(cloud.wiring, cloud.keystone)  # the class page asks it
            cloud.wait_idle(60)
            exporter = OtlpJsonLinesExporter(Path(state) / "traces" / "serve.jsonl")
            exporter.export(telemetry.finished_spans())
            exporter.shutdown()
            page = web.start(state, "127.0.0.1", 0, require_auth=True,
                             auth_url=cloud.identity_url)
            try:
                yield cloud, page, servers
            finally:
                page.stop()
    finally:
        seed.USERS.clear()
        seed.USERS.update(users)
        telemetry.shutdown()


def _rows(page, token) -> list[dict]:
    response = httpx.get(f"{page.url}/api/traces?everything=1",
                         headers={"X-Auth-Token": token})
    assert response.status_code == 200, response.text
    return response.json()["rows"]


def _boot_of(page, token, server_id) -> str:
    rows = _rows(page, token)
    return next(r["trace_id"] for r in rows if server_id in {s["id"] for s in r["servers"]})


def test_without_a_token_the_page_asks_for_one(two_projects):
    _cloud, page, _servers = two_projects
    assert httpx.get(f"{page.url}/api/traces").status_code == 401
    assert httpx.get(f"{page.url}/api/trace/latest").status_code == 401
    response = httpx.get(f"{page.url}/")
    assert response.status_code == 302 and response.headers["Location"].startswith("/login")
    assert httpx.get(f"{page.url}/api/traces",
                     headers={"X-Auth-Token": "not-a-token"}).status_code == 401
    assert "<form" in httpx.get(f"{page.url}/login").text


def test_a_project_sees_only_its_own_boots(two_projects):
    cloud, page, servers = two_projects
    demo, alt = _token(cloud, "demo", "demo"), _token(cloud, "alt_demo", "alt_demo")
    seen_by_demo = {s["id"] for r in _rows(page, demo) for s in r["servers"]}
    assert servers["demo"] in seen_by_demo
    assert servers["alt_demo"] not in seen_by_demo
    assert all(r["servers"] for r in _rows(page, demo)), "a request trace of no server"
    alt_boot = _boot_of(page, alt, servers["alt_demo"])
    for path in (f"/api/trace/{alt_boot}", f"/trace/{alt_boot}",
                 f"/api/trace/{alt_boot}/otlp.json", f"/api/trace/{alt_boot}/jaeger.json",
                 f"/api/trace/{alt_boot}/sequence.mmd", f"/api/trace/{alt_boot}/callgraph.svg",
                 f"/server/{servers['alt_demo']}", "/server/alt_demo-vm"):
        response = httpx.get(page.url + path, headers={"X-Auth-Token": demo})
        assert response.status_code == 404, (path, response.status_code)
    latest = httpx.get(f"{page.url}/api/trace/latest", headers={"X-Auth-Token": demo}).json()
    assert servers["alt_demo"] not in {s["id"] for s in latest.get("servers", [])}
    own = _boot_of(page, demo, servers["demo"])
    assert httpx.get(f"{page.url}/api/trace/{own}",
                     headers={"X-Auth-Token": demo}).status_code == 200


def test_admin_sees_every_trace(two_projects):
    cloud, page, servers = two_projects
    admin = _token(cloud, "admin", "admin")
    seen = {s["id"] for r in _rows(page, admin) for s in r["servers"]}
    assert {servers["demo"], servers["alt_demo"]} <= seen
    assert any(not r["servers"] for r in _rows(page, admin)), "admin sees request traces too"


def test_the_login_form_keeps_the_token_in_a_cookie(two_projects):
    cloud, page, servers = two_projects
    with httpx.Client(base_url=page.url) as browser:
        refused = browser.post("/login", data={"username": "demo", "password": "wrong",
                                               "project": "demo"})
        assert refused.status_code == 401
        response = browser.post("/login", data={"username": "alt_demo", "project": "alt_demo",
                                                "password": PERSONA_PASSWORD})
        assert response.status_code == 303
        cookie = response.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
        seen = {s["id"] for r in browser.get("/api/traces?everything=1").json()["rows"]
                for s in r["servers"]}
        assert seen and servers["demo"] not in seen


@pytest.mark.parametrize("target", [
    "/\t/evil.example/", "/\n/evil.example/", "/\r\n/evil.example/", "/\\evil.example/",
    "\\\\evil.example/", "/\t\\evil.example/", "//evil.example/", " //evil.example/",
    "https://evil.example/", "javascript:alert(1)", "/\x00/evil.example/"])
def test_login_sends_back_only_to_this_site(two_projects, target):
    """Issue 21, finding 17 (a): ``/login?next=/%09/evil.example/`` passed the check (it
    starts with one ``/``), and a browser, which drops tabs and newlines from a URL and
    reads ``\\`` as ``/``, followed it to ``//evil.example/``: off the site, just logged in."""
    cloud, page, _servers = two_projects
    form = {"username": "demo", "project": "demo", "password": PERSONA_PASSWORD}
    with httpx.Client(base_url=page.url) as browser:
        evil = browser.post("/login", params={"next": target}, data=form)
        assert evil.status_code == 303 and evil.headers["Location"] == "/"
        kept = browser.post("/login", params={"next": "/trace/abc?x=1"}, data=form)
        assert kept.headers["Location"] == "/trace/abc?x=1"


def test_the_page_trusts_a_token_no_longer_than_the_services(monkeypatch):
    """Issue 21, finding 17 (b): the page cached a validated token 30 s, the services'
    auth middleware ``token_cache_time`` (10 s): a revoked token still opened the page
    20 s after every API refused it. The gate now asks keystone again after the same
    setting."""
    from types import SimpleNamespace

    from novalab.reference.deploy.embedded import CloudConfig

    valid = {"yes": True}
    calls = []

    def keystone(request):
        calls.append(request)
        if not valid["yes"]:
            return httpx.Response(404, json={"error": {"code": 404}})
        return httpx.Response(200, json={"token": {"user": {"name": "demo"}, "roles": [],
                                                   "project": {"id": "p"}}})

    now = {"t": 1000.0}
    monkeypatch.setattr(web_auth, "time", SimpleNamespace(monotonic=lambda: now["t"]))
    gate = web_auth.KeystoneGate("http://keystone.test/v3",
                                 httpx.Client(transport=httpx.MockTransport(keystone)))
    assert gate.validate("tok").user == "demo" and len(calls) == 1
    valid["yes"] = False                         # revoked at keystone
    now["t"] += CloudConfig().token_cache_time - 0.5
    assert gate.validate("tok").user == "demo" and len(calls) == 1   # cached, as services
    now["t"] += 1.0                               # past the services' token_cache_time
    with pytest.raises(web_auth.AuthFailed):
        gate.validate("tok")


def test_a_trace_is_shown_only_to_who_may_see_every_server_in_it(two_projects):
    """Issue 21, finding 11: one server of yours in a trace did show all of it (``any``)."""
    cloud, _page, servers = two_projects
    gate = web_auth.KeystoneGate(cloud.identity_url)
    demo = gate.validate(_token(cloud, "demo", "demo"))
    both = [servers["demo"], servers["alt_demo"]]
    assert gate.may_see(demo, [servers["demo"]])
    assert not gate.may_see(demo, both)
    assert not gate.may_see(demo, [])
    assert gate.may_see(gate.validate(_token(cloud, "admin", "admin")), both)


def test_a_404_is_the_same_for_no_such_trace_and_not_yours(two_projects):
    """Issue 21, finding 11: the 404 for another project's server named its trace id."""
    cloud, page, servers = two_projects
    demo, alt = _token(cloud, "demo", "demo"), _token(cloud, "alt_demo", "alt_demo")
    alt_row = next(r for r in _rows(page, alt)
                   if servers["alt_demo"] in {s["id"] for s in r["servers"]})
    theirs_request = alt_row["create_request_id"] or alt_row["request_ids"][0]
    pairs = [(f"/api/trace/{alt_row['trace_id']}", "/api/trace/" + "0" * 32),
             (f"/trace/{alt_row['trace_id']}", "/trace/" + "0" * 32),
             (f"/api/trace/{alt_row['trace_id']}/otlp.json", f"/api/trace/{'0' * 32}/otlp.json"),
             ("/server/alt_demo-vm", "/server/nobody-vm"),
             (f"/server/{servers['alt_demo']}", "/server/00000000-0000-0000-0000-000000000000"),
             (f"/request/{theirs_request}", "/request/req-00000000-0000-0000-0000-000000000000")]
    for theirs, nobodys in pairs:
        answers = [httpx.get(page.url + path, headers={"X-Auth-Token": demo})
                   for path in (theirs, nobodys)]
        assert [a.status_code for a in answers] == [404, 404], theirs
        if alt_row["trace_id"] not in theirs:  # never named unless the asker named it
            assert alt_row["trace_id"] not in answers[0].text, (theirs, answers[0].text)
        ref_theirs, ref_nobodys = next((a, b) for a, b in zip(theirs.split("/"),
                                                              nobodys.split("/"), strict=True)
                                  if a != b)
        assert answers[0].text.replace(ref_theirs, "REF") == \
            answers[1].text.replace(ref_nobodys, "REF"), (theirs, answers[0].text,
                                                          answers[1].text)


def test_what_identifies_a_guest_to_the_metadata_service_is_shown_to_admins_only(two_projects):
    """Issue 21, finding 10: the metadata proxy's SERVER span records the address the
    guest sends from (``client.address``); whoever reads it can bind that loopback
    address and read the guest's user_data. Its project's members never see it."""
    cloud, page, servers = two_projects
    demo, admin = _token(cloud, "demo", "demo"), _token(cloud, "admin", "admin")
    ports = httpx.get(f"{cloud.urls['neutron']}/v2.0/ports", headers={"X-Auth-Token": admin},
                      params={"device_id": servers["demo"]}).json()["ports"]
    source = guest_source_address(ports[0]["id"], shared_secret(cloud.config.state_dir))
    own = _boot_of(page, demo, servers["demo"])
    shown = ("", "/otlp.json", "/jaeger.json")
    for token, sees in ((admin, True), (demo, False)):
        for path in (*shown, "/sequence.html", "/sequence.mmd"):
            response = httpx.get(f"{page.url}/api/trace/{own}{path}",
                                 headers={"X-Auth-Token": token})
            assert response.status_code == 200, (path, response.text)
            if sees and path in shown:
                assert source in response.text, path
            elif not sees:
                assert source not in response.text, path


def test_the_class_page_shows_the_teacher_where_each_learner_stands(two_projects, tmp_path):
    """Issue 21, item 3: the admin page beside `novalab class status`. It asks the lab
    service with the viewer's token, so a learner gets the service's own 403."""
    cloud, page, _servers = two_projects
    demo = LabService(cloud.identity_url, "demo", PERSONA_PASSWORD, "demo")
    try:
        demo.start("02-the-api", tmp_path / "work")
        admin = _token(cloud, "admin", "admin")
        answer = httpx.get(f"{page.url}/api/class", headers={"X-Auth-Token": admin})
        assert answer.status_code == 200, answer.text
        row = next(r for r in answer.json()["standing"] if r["learner"] == "demo")
        assert row == {"learner": "demo", "lab": "02-the-api", "attempts": 1,
                       "done": "in progress", "last_grade": None}
        html = httpx.get(f"{page.url}/class", headers={"X-Auth-Token": admin})
        assert html.status_code == 200 and "/static/class.js" in html.text
        learner = httpx.get(f"{page.url}/api/class",
                            headers={"X-Auth-Token": _token(cloud, "demo", "demo")})
        assert learner.status_code == 403 and "admin" in learner.json()["error"]
        assert httpx.get(f"{page.url}/api/class").status_code == 401
    finally:
        demo.finish("02-the-api")
        demo.close()


def test_a_page_without_a_login_has_no_class_page(tmp_path):
    client = web.create_app(tmp_path).test_client()
    for path in ("/class", "/api/class"):
        answer = client.get(path)
        assert answer.status_code == 404 and b"needs a login" in answer.data


def test_a_teacher_logs_in_and_reads_the_class_in_a_browser(two_projects, browser, tmp_path):
    """The page's own script draws the service's rows, after the login form."""
    from selenium.webdriver.common.by import By

    cloud, page, _servers = two_projects
    demo = LabService(cloud.identity_url, "demo", PERSONA_PASSWORD, "demo")
    try:
        demo.start("03-messaging", tmp_path / "work")
        browser.get(f"{page.url}/class")
        wait(browser, lambda d: d.find_elements(By.NAME, "username"))
        browser.find_element(By.NAME, "username").send_keys("admin")
        browser.find_element(By.NAME, "password").send_keys(
            cloud.config.credentials.password_for("admin"))
        browser.find_element(By.NAME, "password").submit()
        wait(browser, lambda d: js(d, "document.body.dataset.rows || ''") not in ("", "0"))
        cells = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")] for tr in
                 browser.find_elements(By.CSS_SELECTOR, "#standing tbody tr")]
        assert ["demo", "03-messaging", "1", "–", "in progress"] in cells
    finally:
        demo.finish("03-messaging")
        demo.close()
