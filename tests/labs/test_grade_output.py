"""`lab grade` prints each check's text and reason as written, brackets and all."""

from __future__ import annotations

from click.testing import CliRunner

from novalab.labs import lab_cli
from novalab.labs.grading import Result


def test_reasons_are_printed_as_written_not_as_markup(tmp_path, monkeypatch):
    """A reason that quotes the flow check (`[call instance_get_by_uuid]`) or a list of
    hosts keeps its brackets: rich would take them for style tags and drop them."""
    class Ctx:
        user = "demo"

    monkeypatch.setenv("NOVALAB_LAB_HOME", str(tmp_path))
    monkeypatch.setattr(lab_cli, "_context", lambda lab, clouds: Ctx())
    monkeypatch.setattr(lab_cli, "grade", lambda ctx: [
        Result("the method of step 14 [call METHOD]", False,
               "the flow check writes it as [call instance_get_by_uuid]; hosts ['compute-1']")])
    result = CliRunner().invoke(lab_cli.lab_group, ["grade", "00"])
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[0] == "FAIL  the method of step 14 [call METHOD]"
    assert lines[1] == ("      the flow check writes it as [call instance_get_by_uuid]; "
                        "hosts ['compute-1']")
