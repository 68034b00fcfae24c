"""``novalab status`` and its kin (``reference/deploy/commands.py``) as a user reads them."""

from __future__ import annotations

from click.testing import CliRunner

from novalab.labs.cli import main
from novalab.reference.deploy.statedir import StateDir, Unit


def test_status_prints_host_names_as_written(tmp_path):
    """Issue 21, finding 15: the status table read its cells as rich markup, so a compute
    host named ``[red]lab`` lost its brackets (and one holding ``[/]`` crashed the
    command); a state dir's path in a failure message likewise."""
    state = StateDir(tmp_path / "up").make()
    host = "[red]lab:thumbs_up:"
    state.save({"db_url": f"sqlite:///{tmp_path / 'novalab.db'}", "topology": "classic",
                "state_dir": str(state.root),
                "units": [Unit("nova-compute", host).to_dict()]})
    result = CliRunner().invoke(main, ["status", "--state-dir", str(state.root)],
                                env={"COLUMNS": "250"})
    assert result.exit_code == 1, result.output      # the unit is not running
    assert host in result.output
    missing = tmp_path / "[/]"
    refused = CliRunner().invoke(main, ["status", "--state-dir", str(missing)],
                                 env={"COLUMNS": "250"})
    assert refused.exit_code == 1, refused.output
    # the console folds a long line where it likes: compare the words
    assert f"no deployment in {missing}" in " ".join(refused.output.split())
