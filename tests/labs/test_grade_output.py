"""`lab grade` prints each check's text and reason as written, brackets and all."""

from __future__ import annotations

from types import SimpleNamespace

from click.testing import CliRunner

from novalab.labs import lab_cli
from novalab.labs.grading import Result


class GradingService:
    """The lab service's answer to a grade: one failing check quoting brackets."""

    def __init__(self, *args):
        pass

    def grade(self, lab, files, operator_token=None):
        check = Result("the method of step 14 [call METHOD]", False,
                       "the flow check writes it as [call instance_get_by_uuid]; "
                       "hosts ['compute-1']")
        return {"passed": False, "checks": [check.to_dict()]}


def test_reasons_are_printed_as_written_not_as_markup(tmp_path, monkeypatch):
    """A reason that quotes the flow check (`[call instance_get_by_uuid]`) or a list of
    hosts keeps its brackets: rich would take them for style tags and drop them."""
    cloud = SimpleNamespace(kind="lab", state_dir=tmp_path, auth_url="http://k.test/v3",
                            os_env={"OS_AUTH_URL": "http://k.test/v3", "OS_USERNAME": "demo",
                                    "OS_PASSWORD": "pw", "OS_PROJECT_NAME": "demo"})
    monkeypatch.setenv("NOVALAB_LAB_HOME", str(tmp_path))
    monkeypatch.delenv("OS_USERNAME", raising=False)
    monkeypatch.setattr(lab_cli.LabClouds, "current", lambda self: cloud)
    monkeypatch.setattr(lab_cli, "LabService", GradingService)
    result = CliRunner().invoke(lab_cli.lab_group, ["grade", "00"])
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[0] == "FAIL  the method of step 14 [call METHOD]"
    assert lines[1] == ("      the flow check writes it as [call instance_get_by_uuid]; "
                        "hosts ['compute-1']")
