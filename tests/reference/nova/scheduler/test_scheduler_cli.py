"""``novalab scheduler filters``: the filters a deployment's scheduler has, in order."""

from __future__ import annotations

from click.testing import CliRunner

from novalab.labs.cli import main

ONLY_COMPUTE2 = '''
from novalab.reference.nova.scheduler import filters


class OnlyCompute2Filter(filters.BaseHostFilter):
    def host_passes(self, host_state, spec_obj):
        return host_state.host == "compute-2"
'''


def run(*args):
    return CliRunner().invoke(main, ["scheduler", "filters", *args])


def test_without_nova_conf_the_defaults_are_listed(tmp_path):
    result = run("--state-dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"nova.conf: {tmp_path / 'nova.conf'} (not there: the defaults)",
        "enabled filters, in the order they run:",
        "  1. RamFilter                built-in",
        "  2. DiskFilter               built-in",
        "  3. ComputeFilter            built-in",
        "  4. ImagePropertiesFilter    built-in",
        "available, not enabled:",
        "     CoreFilter               built-in",
        "weighers: RAMWeigher   ram_weight_multiplier = 1.0",
    ]


def test_learner_filters_are_listed_in_the_enabled_order(tmp_path):
    (tmp_path / "filters").mkdir()
    learner = tmp_path / "filters" / "only_compute2.py"
    learner.write_text(ONLY_COMPUTE2)
    (tmp_path / "nova.conf").write_text(
        "[filter_scheduler]\nfilter_dirs = filters\n"
        "enabled_filters = OnlyCompute2Filter, ComputeFilter\n"
        "ram_weight_multiplier = -1.0\nenabled_filter = typo\n")
    result = run("--state-dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1:5] == [
        f"filter_dirs: {tmp_path / 'filters'}",
        "enabled filters, in the order they run:",
        f"  1. OnlyCompute2Filter       {learner}",
        "  2. ComputeFilter            built-in",
    ]
    assert "     CoreFilter               built-in" in lines
    assert "weighers: RAMWeigher   ram_weight_multiplier = -1.0" in lines
    assert lines[-1] == ("warning: [filter_scheduler] enabled_filter is not an option "
                         "nova-scheduler knows (ignored)")


def test_a_configuration_the_scheduler_cannot_use_exits_1_with_the_fault(tmp_path):
    (tmp_path / "filters").mkdir()
    (tmp_path / "filters" / "only_compute2.py").write_text(ONLY_COMPUTE2)
    (tmp_path / "filters" / "broken.py").write_text("class BrokenFilter(:\n")
    (tmp_path / "nova.conf").write_text(
        "[filter_scheduler]\nfilter_dirs = filters\n"
        "enabled_filters = OnlyCompute2Filter, BrokenFilter\n")
    result = run("--state-dir", str(tmp_path))
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert "  2. BrokenFilter             NOT FOUND" in lines
    assert lines[-2:] == [
        "nova-scheduler cannot use this configuration; every boot ends in ERROR with the "
        "fault:",
        f"  Scheduler Host Filter file {tmp_path / 'filters' / 'broken.py'} could not be "
        "loaded: SyntaxError: invalid syntax (broken.py, line 1)"]


def test_the_state_dir_of_the_running_or_last_deployment_by_default(tmp_path, monkeypatch):
    monkeypatch.setenv("NOVALAB_STATE_DIR", str(tmp_path))
    (tmp_path / "nova.conf").write_text("[filter_scheduler]\nenabled_filters = Nope\n")
    result = run()
    assert result.exit_code == 1
    assert result.output.splitlines()[0] == f"nova.conf: {tmp_path / 'nova.conf'}"
    assert result.output.splitlines()[-1] == \
        "  Scheduler Host Filter Nope could not be found."
