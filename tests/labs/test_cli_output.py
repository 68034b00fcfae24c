"""What the ``novalab`` and ``novalab lab`` commands print of users' strings: as written.

Issue 21, finding 15: rich read every printed string as markup, so a name holding
``[/]`` (a server, a learner, an answer) crashed the command (rich's MarkupError),
``[red]`` vanished, and ``:thumbs_up:`` became an emoji.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace

from click.testing import CliRunner

from novalab.labs import cli, lab_cli

ODD = "[/][red]x:thumbs_up:"


def test_boot_summary_prints_the_server_and_its_fault_as_written(capsys):
    """``novalab boot``'s summary: the server's name and Nova's fault message."""
    result = SimpleNamespace(
        server={"name": ODD, "id": "4e4e", "status": "ERROR",
                "fault": {"message": f"No valid host was found. {ODD}"}},
        elapsed=1.0, trace_id_hex="ab" * 16, dropped={})
    cli._summary(result, Counter({"nova-api": 3}), Path("trace.json"))
    printed = capsys.readouterr().err
    assert f"{ODD} (4e4e)" in printed
    assert f"No valid host was found. {ODD}" in printed


def _fake_cloud(monkeypatch, tmp_path):
    cloud = SimpleNamespace(kind="lab", state_dir=tmp_path / "cloud", web=None,
                            auth_url="http://keystone.test/v3",
                            os_env={"OS_AUTH_URL": "http://keystone.test/v3",
                                    "OS_USERNAME": "demo", "OS_PROJECT_NAME": "demo"},
                            password="pw")
    monkeypatch.setenv("NOVALAB_LAB_HOME", str(tmp_path))
    monkeypatch.setenv("OS_AUTH_URL", cloud.auth_url)
    monkeypatch.setenv("OS_USERNAME", ODD)
    monkeypatch.setattr(lab_cli.LabClouds, "current", lambda self: cloud)
    monkeypatch.setattr(lab_cli, "LabService", _FakeService)
    return cloud


class _FakeService:
    """The lab service's answers, as a learner with one attempt at lab 00 gets them."""

    def __init__(self, *args):
        pass

    def attempts(self):
        return {"attempts": [{"lab": "00-orientation", "passed_at": None, "finished_at": None,
                              "last_grade": None}], "in_progress": 1}

    def answer(self, lab, key, value):
        return {}

    def close(self):
        pass


def test_lab_status_and_answer_print_the_learner_and_the_answer_as_written(monkeypatch,
                                                                            tmp_path):
    _fake_cloud(monkeypatch, tmp_path)
    status = CliRunner().invoke(lab_cli.lab_group, ["status"], env={"COLUMNS": "250"})
    assert status.exit_code == 0, status.output
    assert f"learner: {ODD}" in status.output
    answer = CliRunner().invoke(lab_cli.lab_group, ["answer", "00", "start-span", ODD],
                                env={"COLUMNS": "250"})
    assert answer.exit_code == 0, answer.output
    assert f"start-span: {ODD} (recorded" in answer.output


def test_lab_step_prints_every_command_whole_at_any_width(monkeypatch, tmp_path):
    """Issue 21, item 5: rich wrapped a guide's code blocks at the terminal's width (80
    columns, or 40), so a pasted command broke in two. Every line of a step's code
    blocks is printed as one line, exactly as written."""
    import re

    from novalab.labs.course import find

    monkeypatch.setenv("NOVALAB_LAB_HOME", str(tmp_path))
    monkeypatch.setenv("OS_USERNAME", "demo")
    lab = find("13")
    step = lab.guide_steps[0]
    commands = [line for block in re.findall(r"^```sh\n(.*?)^```", lab.render(step.body, "demo"),
                                              re.M | re.S) for line in block.splitlines()]
    assert max(len(line) for line in commands) > 100  # the test means something
    for width in ("40", "80"):
        shown = CliRunner().invoke(lab_cli.lab_group, ["step", "13", "1"],
                                   env={"COLUMNS": width})
        assert shown.exit_code == 0, shown.output
        lines = shown.output.splitlines()
        for command in commands:
            assert command in lines, (width, command)


def test_finish_and_status_against_a_dead_cloud_say_so_without_a_traceback(monkeypatch,
                                                                           tmp_path):
    """Issue 21, item 5: `lab finish` against a cloud that died printed a traceback;
    both commands now say the cloud is gone, when its log last moved and how it ended."""
    monkeypatch.setenv("NOVALAB_LAB_HOME", str(tmp_path))
    log = tmp_path / "cloud" / "serve.log"
    log.parent.mkdir(parents=True)
    log.write_text("starting\nMemoryError: the machine ran out\n")
    finish = CliRunner().invoke(lab_cli.lab_group, ["finish", "00"], env={"COLUMNS": "200"})
    assert finish.exit_code == 2
    text = finish.output
    assert "no cloud runs for the labs" in text and "novalab lab start" in text
    assert "MemoryError: the machine ran out" in text and "Traceback" not in text
    status = CliRunner().invoke(lab_cli.lab_group, ["status"], env={"COLUMNS": "200"})
    assert status.exit_code == 0 and "MemoryError: the machine ran out" in status.output


def test_a_lab_that_operates_the_cloud_is_refused_on_a_shared_cloud(monkeypatch, tmp_path):
    """Lab 04 points the scheduler at the learner's folder; on a class's cloud that would
    run the learner's Python as the teacher. The client says so before asking anything
    (the lab service refuses it too: tests/labs/service/test_app.py)."""
    monkeypatch.setenv("NOVALAB_LAB_HOME", str(tmp_path))
    monkeypatch.setenv("OS_AUTH_URL", "http://127.0.0.1:9/v3")  # nothing answers there
    started = CliRunner().invoke(lab_cli.lab_group, ["start", "04", "--cloud", "shared"],
                                 env={"COLUMNS": "200"})
    assert started.exit_code == 2, started.output
    assert "operates the cloud" in started.output and "filter_dirs" in started.output
    assert "novalab lab start 04" in started.output and "Traceback" not in started.output
