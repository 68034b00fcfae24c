"""The lab cloud's shape: a lab that needs more compute hosts gets a cloud that has them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from novalab.labs import lab_cli
from novalab.labs.cloud import LabClouds
from novalab.labs.course import Lab


def _lab(tmp_path, name="04-scheduling", cloud="") -> Lab:
    folder = tmp_path / "course" / name
    folder.mkdir(parents=True)
    (folder / "lab.toml").write_text(f'title = "t"\nsteps = [8]\n{cloud}')
    return Lab.load(folder)


def _serving(state_dir: Path, args=None) -> None:
    """A lab cloud that runs from ``state_dir`` (this process stands for it), started with
    the extra ``args``."""
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "cloud.json").write_text(json.dumps({
        "pid": os.getpid(), "password": "pw",
        "os_env": {"OS_AUTH_URL": "http://127.0.0.1:5000/v3", "OS_USERNAME": "demo",
                   "OS_PROJECT_NAME": "demo"}}))
    if args is not None:
        (state_dir / "lab-cloud.json").write_text(json.dumps({"pid": os.getpid(),
                                                              "args": list(args)}))


def test_a_lab_asks_for_compute_hosts_in_lab_toml(tmp_path):
    plain = _lab(tmp_path, "00-plain")
    assert plain.computes == 1 and plain.needs_text == "-"
    two = _lab(tmp_path, cloud="[cloud]\ncomputes = 2\n")
    assert two.computes == 2 and two.needs_text == "2 compute hosts"


def test_a_lab_that_operates_the_cloud_says_why_and_needs_one_of_its_own(tmp_path):
    operating = _lab(tmp_path, cloud='[cloud]\noperates = "it reads the state dir"\n')
    assert operating.operates == "it reads the state dir"
    assert operating.needs_text == "a cloud of your own"
    assert _lab(tmp_path, "01-plain").operates == ""


def test_each_shape_is_a_cloud_of_its_own(tmp_path):
    """A database remembers every compute host it had: a cloud restarted with fewer
    would still be scheduled onto the missing one. So each shape has its state dir."""
    clouds = LabClouds(tmp_path / "home")
    assert clouds.lab_dir_for(1) == clouds.lab_dir == tmp_path / "home" / "cloud"
    assert clouds.lab_dir_for(2) == tmp_path / "home" / "cloud-2-computes"


def test_the_running_lab_cloud_says_where_it_runs_and_how_it_was_started(tmp_path):
    clouds = LabClouds(tmp_path / "home")
    assert clouds.running_lab_cloud() is None
    _serving(clouds.lab_dir)
    assert clouds.running_lab_cloud() == (clouds.lab_dir, ())  # started before the record
    _serving(clouds.lab_dir, ("--vif-plugging-timeout", "5"))
    assert clouds.running_lab_cloud() == (clouds.lab_dir, ("--vif-plugging-timeout", "5"))
    (clouds.lab_dir / "cloud.json").unlink()
    _serving(clouds.lab_dir_for(2), ())
    assert clouds.running_lab_cloud() == (clouds.lab_dir_for(2), ())


def test_another_shape_restarts_the_cloud_unless_labs_are_in_progress(tmp_path, monkeypatch):
    clouds = LabClouds(tmp_path / "home")
    monkeypatch.delenv("OS_USERNAME", raising=False)
    _serving(clouds.lab_dir, lab_cli.LAB_CLOUD_ARGS)
    clouds._choose("lab", clouds.lab_dir)
    stopped = []
    monkeypatch.setattr(clouds, "stop", lambda: stopped.append(True))

    lab_cli._reshape(_lab(tmp_path, "00-plain"), clouds)  # the shape it has
    assert not stopped

    lab = _lab(tmp_path, cloud="[cloud]\ncomputes = 2\n")
    # The lab cloud's service counts the learner's attempts: one in progress on it.
    attempts = {"00-orientation": [{"finished_at": None, "passed_at": None}]}
    monkeypatch.setattr(lab_cli, "_attempts_by_lab", lambda _clouds: attempts)
    with pytest.raises(SystemExit):
        lab_cli._reshape(lab, clouds)
    assert not stopped

    attempts["00-orientation"][0]["finished_at"] = "2026-11-28T15:00:00Z"
    lab_cli._reshape(lab, clouds)
    assert stopped == [True]
