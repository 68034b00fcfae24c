"""[filter_scheduler] in STATE_DIR/nova.conf: parsed as oslo.config would, read again
when it changes, and every way it can be broken said clearly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from novalab.reference.nova.scheduler import conf, loadables
from novalab.reference.nova.scheduler.exception import (
    ClassNotFound,
    SchedulerConfigInvalid,
    SchedulerFilterFileInvalid,
    SchedulerHostFilterFailed,
    SchedulerHostFilterNotFound,
)
from novalab.reference.nova.scheduler.host_manager import HostManager

ONLY_B = """
from novalab.reference.nova.scheduler import filters


class OnlyBFilter(filters.BaseHostFilter):
    def host_passes(self, host_state, spec_obj):
        return host_state.host == "b"
"""


def names(objects) -> list[str]:
    return [type(o).__name__ for o in objects]


def test_no_file_means_upstream_like_defaults(tmp_path):
    parsed = conf.parse(tmp_path / "nova.conf")
    assert not parsed.exists
    assert parsed.enabled_filters == ("RamFilter", "DiskFilter", "ComputeFilter",
                                      "ImagePropertiesFilter")
    assert parsed.weight_classes == ("nova.scheduler.weights.all_weighers",)
    assert parsed.ram_weight_multiplier == 1.0 and parsed.filter_dirs == ()


def test_the_written_default_file_parses_to_the_defaults(tmp_path):
    path = tmp_path / "nova.conf"
    assert conf.write_default(path)
    assert not conf.write_default(path)  # never overwrites the learner's file
    parsed = conf.parse(path)
    assert parsed.exists
    assert (parsed.enabled_filters, parsed.weight_classes, parsed.ram_weight_multiplier,
            parsed.filter_dirs, parsed.unknown_options) == \
        (conf.DEFAULT_ENABLED_FILTERS, conf.DEFAULT_WEIGHT_CLASSES, 1.0, (), ())


def test_options_are_read_as_oslo_config_reads_them(tmp_path):
    path = tmp_path / "nova.conf"
    path.write_text("[DEFAULT]\ndebug = true\n\n"
                    "[filter_scheduler]\n"
                    "enabled_filters = ComputeFilter ,RamFilter,,\n"
                    "  CoreFilter\n"
                    "weight_classes =\n"
                    "ram_weight_multiplier = 2.5\n"
                    "ram_weight_multiplier = -1\n"   # given twice: the last one counts
                    "filter_dirs = filters, /opt/more\n"
                    "enabled_filter = typo\n")
    parsed = conf.parse(path)
    assert parsed.enabled_filters == ("ComputeFilter", "RamFilter", "CoreFilter")
    assert parsed.weight_classes == ()
    assert parsed.ram_weight_multiplier == -1.0
    # Relative to the file's directory (the state dir); absolute as given.
    assert parsed.filter_dirs == (tmp_path / "filters", Path("/opt/more"))
    assert parsed.unknown_options == ("enabled_filter",)


@pytest.mark.parametrize("text, reason", [
    ("[filter_scheduler]\nram_weight_multiplier = lots\n",
     "[filter_scheduler] ram_weight_multiplier = 'lots' is not a number"),
    ("enabled_filters = RamFilter\n", "MissingSectionHeaderError: File contains no section "
                                      "headers."),
])
def test_a_broken_file_says_where_and_what(tmp_path, text, reason):
    path = tmp_path / "nova.conf"
    path.write_text(text)
    with pytest.raises(SchedulerConfigInvalid) as raised:
        conf.parse(path)
    assert str(raised.value).startswith(f"Invalid scheduler configuration in {path}: {reason}")


def test_weight_classes_take_upstream_spellings():
    ram = ["RAMWeigher"]
    for entry in ("nova.scheduler.weights.all_weighers", "RAMWeigher",
                  "nova.scheduler.weights.ram.RAMWeigher",
                  "novalab.reference.nova.scheduler.weights.ram.RAMWeigher"):
        assert [c.__name__ for c in loadables.weigher_classes([entry])] == ram
    with pytest.raises(ClassNotFound, match="Class CPUWeigher could not be found: "):
        loadables.weigher_classes(["CPUWeigher"])


def test_the_scheduler_reads_nova_conf_again_when_it_changes(tmp_path, touch):
    path = tmp_path / "nova.conf"
    manager = HostManager(None, None, path)
    assert names(manager.refresh().enabled_filters) == list(conf.DEFAULT_ENABLED_FILTERS)

    touch(path, "[filter_scheduler]\nenabled_filters = ComputeFilter\n"
                "ram_weight_multiplier = -1\n")
    setup = manager.refresh()
    assert names(setup.enabled_filters) == ["ComputeFilter"]
    assert setup.weighers[0].weight_multiplier(None) == -1.0
    assert manager.refresh() is setup  # unchanged file: nothing read again

    touch(path, "[filter_scheduler]\nenabled_filters = ComputeFilter, Nope\n")
    for _ in range(2):  # the error stays until the file changes
        with pytest.raises(SchedulerHostFilterNotFound,
                           match=r"^Scheduler Host Filter Nope could not be found\.$"):
            manager.refresh()
    touch(path, "[filter_scheduler]\nenabled_filters = RamFilter\n")
    assert names(manager.refresh().enabled_filters) == ["RamFilter"]

    os.unlink(path)  # gone: the defaults again
    assert names(manager.refresh().enabled_filters) == list(conf.DEFAULT_ENABLED_FILTERS)


def test_a_broken_nova_conf_at_start_does_not_stop_the_scheduler(tmp_path):
    path = tmp_path / "nova.conf"
    path.write_text("[filter_scheduler]\nenabled_filters = Nope\n")
    manager = HostManager(None, None, path)  # starts
    with pytest.raises(SchedulerHostFilterNotFound):
        manager.refresh()


def test_learner_filter_files_are_loaded_and_reloaded_when_edited(tmp_path, touch):
    (tmp_path / "filters").mkdir()
    touch(tmp_path / "nova.conf",
          "[filter_scheduler]\nfilter_dirs = filters\nenabled_filters = OnlyBFilter\n")
    with pytest.raises(SchedulerHostFilterNotFound):
        HostManager(None, None, tmp_path / "nova.conf").refresh()

    manager = HostManager(None, None, tmp_path / "nova.conf")
    touch(tmp_path / "filters" / "only_b.py", ONLY_B)  # a new file in a filter dir
    (only_b,) = manager.refresh().enabled_filters
    assert type(only_b).__name__ == "OnlyBFilter"
    assert only_b.novalab_source == str(tmp_path / "filters" / "only_b.py")

    touch(tmp_path / "filters" / "only_b.py", ONLY_B.replace('"b"', '"c"'))  # edited
    (edited,) = manager.refresh().enabled_filters
    assert edited is not only_b

    class Host:
        host = "c"
    assert edited.host_passes(Host(), {}) and not only_b.host_passes(Host(), {})


def test_what_a_filter_file_may_get_wrong(tmp_path):
    filters_dir = tmp_path / "filters"
    filters_dir.mkdir()
    bad = filters_dir / "bad.py"

    bad.write_text("import no_such_module_here\n")
    with pytest.raises(SchedulerFilterFileInvalid) as raised:
        loadables.available_filters([filters_dir])
    assert str(raised.value) == (
        f"Scheduler Host Filter file {bad} could not be loaded: ModuleNotFoundError: "
        "No module named 'no_such_module_here' (bad.py, line 1)")

    bad.write_text(ONLY_B.replace("OnlyBFilter", "RamFilter"))
    with pytest.raises(SchedulerFilterFileInvalid, match="it defines RamFilter, which "
                                                         "built-in also defines"):
        loadables.available_filters([filters_dir])

    bad.write_text(ONLY_B + "    def __init__(self):\n        raise RuntimeError('no')\n")
    available = loadables.available_filters([filters_dir])
    assert [a.name for a in available][-1] == "OnlyBFilter"
    path = tmp_path / "nova.conf"
    path.write_text("[filter_scheduler]\nfilter_dirs = filters\nenabled_filters = OnlyBFilter\n")
    with pytest.raises(SchedulerHostFilterFailed, match=r"^Scheduler Host Filter OnlyBFilter "
                       r"failed: creating it raised RuntimeError: no \(bad.py, line 9\)$"):
        HostManager(None, None, path).refresh()

    bad.chmod(0o666)  # anyone may write it: anyone could run code in the scheduler
    with pytest.raises(SchedulerFilterFileInvalid, match="is world-writable"):
        loadables.available_filters([filters_dir])
    bad.unlink()

    with pytest.raises(SchedulerConfigInvalid, match="filter_dirs: .*missing is not a "
                                                     "directory"):
        loadables.available_filters([tmp_path / "missing"], path)
