"""`novalab class add|remove|list|status`: the teacher's commands, a client of the lab
service as an admin; the roster of passwords is the teacher's alone (0600 from birth)."""

from __future__ import annotations

import json
import os
import stat

import pytest
from click.testing import CliRunner
from conftest import make_cloud

from novalab.labs.cli import main
from novalab.labs.client import LabService
from novalab.labs.service.build import lab_service

NO_OS_ENV = {key: None for key in ("OS_AUTH_URL", "OS_USERNAME", "OS_PASSWORD",
                                   "OS_PROJECT_NAME")}


@pytest.fixture(scope="module")
def cloud(tmp_path_factory):
    with make_cloud(tmp_path_factory.mktemp("class")) as running:
        lab_service(running.wiring, running.keystone)
        # what `serve` writes for the commands that find it
        (running.config.state_dir / "cloud.json").write_text(json.dumps(
            {"kind": "serve", "pid": os.getpid(),
             "os_env": {"OS_AUTH_URL": running.identity_url}}))
        yield running
    running.telemetry.shutdown()


def run(cloud, *args, env=None):
    result = CliRunner().invoke(main, ["class", *args, "--state-dir",
                                       str(cloud.config.state_dir)],
                                env={**NO_OS_ENV, **(env or {})})
    return result


def _roster(cloud) -> dict:
    return json.loads((cloud.config.state_dir / "class-roster.json").read_text())["learners"]


def test_add_keeps_the_passwords_in_a_roster_only_the_teacher_reads(cloud, monkeypatch):
    def no_chmod(*args, **kwargs):
        raise AssertionError("the roster is made 0600, never chmod-ed after")

    monkeypatch.setattr(os, "chmod", no_chmod)
    old = os.umask(0)  # a permissive umask must not widen it
    try:
        result = run(cloud, "add", "ana", "bob", "--quota", "instances=2")
    finally:
        os.umask(old)
    assert result.exit_code == 0, result.output
    path = cloud.config.state_dir / "class-roster.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    roster = _roster(cloud)
    assert set(roster) == {"ana", "bob"}
    assert roster["ana"]["project"] == "class-ana" and roster["ana"]["cidr"]
    assert roster["ana"]["cidr"] != roster["bob"]["cidr"]
    for learner in roster.values():
        assert learner["password"] not in result.output  # never on the projector
    # the password works
    session = LabService(cloud.identity_url, "ana", roster["ana"]["password"], "class-ana")
    session.close()
    # a second add merges; a taken name is a clear failure, the others still added
    again = run(cloud, "add", "ana", "cy")
    assert again.exit_code == 1
    assert "ana" in again.output and "already exists" in again.output
    assert set(_roster(cloud)) == {"ana", "bob", "cy"}
    assert _roster(cloud)["ana"]["password"] == roster["ana"]["password"]


def test_an_admin_in_os_env_is_used_and_a_non_admin_falls_back(cloud):
    admin = {"OS_AUTH_URL": cloud.identity_url, "OS_USERNAME": "admin",
             "OS_PASSWORD": cloud.config.credentials.admin, "OS_PROJECT_NAME": "admin"}
    as_admin = CliRunner().invoke(main, ["class", "list", "--state-dir", "/nonexistent"],
                                  env=admin)
    assert as_admin.exit_code == 0, as_admin.output
    assert "class-ana" in as_admin.output
    demo = {"OS_AUTH_URL": cloud.identity_url, "OS_USERNAME": "demo",
            "OS_PASSWORD": "novalab", "OS_PROJECT_NAME": "demo"}
    fallback = run(cloud, "list", env=demo)  # demo is refused; the deployment's admin acts
    assert fallback.exit_code == 0, fallback.output
    assert "class-ana" in fallback.output
    nowhere = CliRunner().invoke(main, ["class", "list", "--state-dir", "/nonexistent"],
                                 env=demo)
    assert nowhere.exit_code == 2 and "no cloud runs" in nowhere.output


def test_status_shows_every_learners_attempts_and_grades(cloud):
    roster = _roster(cloud)
    for name in ("ana", "bob"):
        session = LabService(cloud.identity_url, name, roster[name]["password"],
                             roster[name]["project"])
        session.start("02-the-api", cloud.config.state_dir / f"{name}-work")
        if name == "ana":
            session.grade("02-the-api", {})
            session.finish("02-the-api")
            session.start("02-the-api", cloud.config.state_dir / f"{name}-work")
        session.close()
    result = run(cloud, "status")
    assert result.exit_code == 0, result.output
    cells = [[cell.strip() for cell in line.split("│")[1:-1]]
             for line in result.output.splitlines() if line.count("│") == 6]
    rows = {(row[0], row[1]): row[2:] for row in cells}
    assert rows[("ana", "02-the-api")][0] == "2"  # two attempts, the last graded
    assert rows[("ana", "02-the-api")][1].startswith("0/")
    assert rows[("bob", "02-the-api")] == ["1", "-", "in progress"]
    assert rows[("cy", "-")] == ["0", "-", "no"]  # a learner with no attempt yet


def test_remove_drops_the_learner_and_their_roster_line(cloud):
    result = run(cloud, "remove", "cy")
    assert result.exit_code == 0, result.output
    assert "cy removed" in result.output
    assert "cy" not in _roster(cloud)
    assert stat.S_IMODE((cloud.config.state_dir / "class-roster.json").stat().st_mode) == 0o600
    assert "class-cy" not in run(cloud, "list").output
    missing = run(cloud, "remove", "cy")
    assert missing.exit_code == 1 and "No learner named cy" in missing.output


def test_a_bad_quota_is_refused_before_anything_is_made(cloud):
    result = run(cloud, "add", "dee", "--quota", "floating_ips=3")
    assert result.exit_code == 2 and "KEY=N" in result.output
    assert "dee" not in _roster(cloud)
