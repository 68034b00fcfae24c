"""The lab service: the course's records and grading inside the cloud, behind keystone.

One learner reaches only their own attempts; the teacher (an admin) everyone's;
every body is validated; a new attempt starts clean."""

from __future__ import annotations

import base64

import httpx
import pytest

from novalab.labs.client import LabService, ServiceError
from novalab.labs.service.build import lab_service
from novalab.reference.common.credentials import PERSONA_PASSWORD
from novalab.reference.deploy.embedded import CloudConfig, EmbeddedCloud
from novalab.tracing.setup import Telemetry


@pytest.fixture(scope="module")
def cloud(tmp_path_factory):
    """A cloud as `serve` runs it: spans in its trace store, the lab service beside it."""
    state = tmp_path_factory.mktemp("labs") / "cloud"
    telemetry = Telemetry(file_path=state / "traces" / "serve.jsonl")
    with EmbeddedCloud(CloudConfig(state_dir=state), telemetry) as running:
        lab_service(running.wiring, running.keystone)
        yield running
    telemetry.shutdown()


def _session(cloud, user: str, project: str | None = None) -> LabService:
    password = cloud.config.credentials.password_for(user)
    return LabService(f"{cloud.identity_url}", user, password, project or user)


@pytest.fixture(scope="module")
def demo(cloud):
    session = _session(cloud, "demo")
    yield session
    session.close()


@pytest.fixture(scope="module")
def alt(cloud):
    session = _session(cloud, "alt_demo")
    yield session
    session.close()


def test_the_catalog_names_the_service_and_the_course_is_served(demo):
    assert demo.url.endswith("/v1")
    names = [lab["name"] for lab in demo.course()]
    assert names[0] == "00-orientation" and "13-safe-to-share" in names


def test_a_learner_reaches_only_their_own_attempts(cloud, demo, alt):
    demo.start("02-the-api", cloud.config.state_dir / "demo-work")
    alt.start("02-the-api", cloud.config.state_dir / "alt-work")
    demo.answer("02-the-api", next(iter(_questions(demo, "02-the-api"))), "from demo")
    mine = demo.attempts()["attempts"]
    assert {a["user_name"] for a in mine} == {"demo"}
    assert {a["user_name"] for a in alt.attempts()["attempts"]} == {"alt_demo"}
    # alt's "current" attempt is alt's own: demo's answer is not in it
    assert alt.current("02-the-api")["answers"] == {}
    with pytest.raises(ServiceError) as refused:
        demo.attempts(everyone=True)
    assert refused.value.status == 403
    admin = _session(cloud, "admin")
    everyone = admin.attempts(everyone=True)["attempts"]
    assert {"demo", "alt_demo"} <= {a["user_name"] for a in everyone}
    admin.close()


def _questions(session, lab):
    return next(entry["questions"] for entry in session.course() if entry["name"] == lab)


def test_a_grade_runs_in_the_cloud_and_is_recorded(cloud, demo):
    demo.start("00-orientation", cloud.config.state_dir / "demo-work")
    files = {"sequence.html": base64.b64encode(b"<html>nothing</html>").decode()}
    grade = demo.grade("00-orientation", files)
    assert grade["passed"] is False
    failing = [c for c in grade["checks"] if not c["passed"]]
    assert failing and all(c["why"] for c in failing)
    assert any("lab00-demo-vm" in c["why"] for c in failing)
    recorded = demo.current("00-orientation")["last_grade"]
    assert recorded["checks"] == len(grade["checks"]) and not recorded["passed"]


def test_finishing_says_whether_others_are_still_at_work(cloud, demo, alt):
    lab = "14-classic-vs-today"
    demo.start(lab, cloud.config.state_dir / "demo-work")
    alt.start(lab, cloud.config.state_dir / "alt-work")
    done = demo.finish(lab)
    assert done["in_progress"] >= 1  # alt's attempt at least
    assert demo.current(lab) is None
    assert alt.current(lab) is not None
    alt.finish(lab)


def _nova_conf(cloud) -> str:
    conf = cloud.config.state_dir / "nova.conf"
    return conf.read_text() if conf.exists() else ""


def test_a_lab_that_operates_the_cloud_starts_only_for_its_operator(cloud, demo, tmp_path):
    """Lab 04 points nova-scheduler's filter_dirs at the folder the learner names, and
    the scheduler imports the Python there as the cloud's own OS user. On a shared cloud
    a learner asking for it would run code as the teacher: such a lab starts only with
    an admin's token beside the learner's, which only the cloud's owner can get."""
    before = _nova_conf(cloud)
    with pytest.raises(ServiceError) as refused:
        demo.start("04-scheduling", tmp_path / "mine")
    assert refused.value.status == 403
    assert "filter_dirs" in str(refused.value) and "lab cloud" in str(refused.value)
    assert _nova_conf(cloud) == before and demo.current("04-scheduling") is None
    with pytest.raises(ServiceError) as not_admin:  # a classmate's token is no operator's
        demo.start("04-scheduling", tmp_path / "mine", operator_token=demo.token)
    assert not_admin.value.status == 403 and _nova_conf(cloud) == before
    admin = _session(cloud, "admin")
    try:
        attempt = demo.start("04-scheduling", tmp_path / "mine", operator_token=admin.token)
        assert attempt["user_name"] == "demo"
        assert str((tmp_path / "mine").absolute()) in _nova_conf(cloud)
        # Its checks import the learner's filter file: grading needs the operator too.
        for token in (None, "not-a-token", demo.token):
            with pytest.raises(ServiceError) as ungraded:
                demo.grade("04-scheduling", {}, operator_token=token)
            assert ungraded.value.status == 403
        assert demo.grade("04-scheduling", {}, operator_token=admin.token)["checks"]
        demo.finish("04-scheduling")
        assert str(tmp_path / "mine") not in _nova_conf(cloud)
    finally:
        admin.close()


def test_a_new_attempt_starts_with_no_answers(cloud, demo):
    lab = "03-messaging"
    demo.start(lab, cloud.config.state_dir / "demo-work")
    key = next(iter(_questions(demo, lab)))
    demo.answer(lab, key, "an old answer")
    demo.finish(lab)
    fresh = demo.start(lab, cloud.config.state_dir / "demo-work")
    assert fresh["answers"] == {}
    demo.finish(lab)


@pytest.mark.parametrize(("method", "path", "body", "status"), [
    ("PUT", "/labs/02-the-api/attempts/current/answers/nope", {"answer": "x"}, 400),
    ("PUT", "/labs/02-the-api/attempts/current/answers/status", {"answer": "x" * 256}, 400),
    ("PUT", "/labs/02-the-api/attempts/current/answers/status", {"answer": 1}, 400),
    ("POST", "/labs/99-nothing/attempts", {"attempt": {}}, 404),
    ("POST", "/labs/02-the-api/attempts", {"attempt": {"user_id": "someone"}}, 400),
    ("POST", "/labs/02-the-api/attempts/current/grade", {"files": {"../x": "AA=="}}, 400),
    ("POST", "/labs/02-the-api/attempts/current/grade", {"files": {"/etc/x": "AA=="}}, 400),
    ("POST", "/labs/02-the-api/attempts/current/grade", {"files": {"a": "not base64!"}}, 400),
    ("POST", "/labs/02-the-api/attempts/current/finish", {"force": True}, 400),
])
def test_bad_bodies_are_refused_in_keystones_error_shape(demo, method, path, body, status):
    response = demo.http.request(method, f"{demo.url}{path}", json=body,
                                 headers={"X-Auth-Token": demo.token})
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == status and error["message"]


def test_no_token_or_an_unscoped_one_gets_nothing(cloud, demo):
    assert httpx.get(f"{demo.url}/attempts").status_code == 401
    unscoped = httpx.post(f"{cloud.identity_url}/auth/tokens", json={"auth": {"identity": {
        "methods": ["password"], "password": {"user": {
            "name": "demo", "domain": {"id": "default"}, "password": PERSONA_PASSWORD}}}}})
    token = unscoped.headers["X-Subject-Token"]
    answer = httpx.get(f"{demo.url}/attempts", headers={"X-Auth-Token": token})
    assert answer.status_code == 403


def _bad_create(cloud, demo) -> str:
    """A POST /servers nova-api refuses (no flavorRef): its request id."""
    session = _session(cloud, "demo")
    token = session.token
    session.close()
    compute = f"{cloud.urls['nova']}/v2.1"
    refused = httpx.post(f"{compute}/servers", headers={"X-Auth-Token": token},
                         json={"server": {"name": "x", "imageRef": "y"}})
    assert refused.status_code == 400
    return refused.headers["x-openstack-request-id"]


def _check(grade: dict, text: str) -> dict:
    return next(c for c in grade["checks"] if text in c["check"])


def test_an_answer_from_an_earlier_attempt_does_not_count(cloud, demo):
    """Issue 21, finding 4: old traces survived `lab reset`, so a request id from an
    earlier attempt was accepted. The attempt's start time is the line."""
    lab, check = "02-the-api", "refused your bad body with 400"
    demo.finish(lab)  # whatever an earlier test left
    demo.start(lab, cloud.config.state_dir / "demo-work")
    old = _bad_create(cloud, demo)
    demo.answer(lab, "bad-request", old)
    assert _check(demo.grade(lab, {}), check)["passed"]
    demo.finish(lab)
    demo.start(lab, cloud.config.state_dir / "demo-work")
    demo.answer(lab, "bad-request", old)
    stale = _check(demo.grade(lab, {}), check)
    assert not stale["passed"] and "before this attempt" in stale["why"]
    demo.answer(lab, "bad-request", _bad_create(cloud, demo))
    assert _check(demo.grade(lab, {}), check)["passed"]
    demo.finish(lab)


def test_where_the_class_stands_is_the_teachers_alone(cloud, demo, alt):
    demo.start("03-messaging", cloud.config.state_dir / "demo-work")
    try:
        with pytest.raises(ServiceError) as refused:
            demo._call("GET", "/class")
        assert refused.value.status == 403 and "admin" in str(refused.value)
        admin = _session(cloud, "admin")
        rows = admin._call("GET", "/class")["standing"]
        admin.close()
        mine = [r for r in rows if r["learner"] == "demo" and r["lab"] == "03-messaging"]
        assert mine and mine[0]["done"] == "in progress"
    finally:
        demo.finish("03-messaging")
