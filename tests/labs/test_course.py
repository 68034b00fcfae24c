"""The course as a learner runs it: every lab from start to finish, on the lab cloud.

For each lab: `lab start`, `lab grade` fails with the reasons a learner reads,
the written solution's commands run as a learner would type them, `lab grade`
passes, `lab finish` leaves nothing behind. All through the `novalab` command
in subprocesses, on one lab home (the lab cloud binds the standard ports).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import private_services
import pytest

from novalab.labs.course import find, labs, uncovered_steps
from novalab.labs.publish import index, page

pytestmark = pytest.mark.e2e  # lab clouds on the standard ports, the `novalab` and `openstack` CLIs

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
COURSE = labs()
TIMINGS: dict[str, dict[str, float]] = {}


def test_every_name_a_lab_hands_out_carries_its_prefix():
    """`lab finish` removes by prefix: a name without it would be left behind, or
    collide with another learner's."""
    for lab in COURSE:
        for key, name in lab.names.items():
            assert name.startswith(f"lab{lab.number}-{{user}}"), (lab.name, key, name)


def test_every_lab_has_a_guide_a_solution_and_checks():
    for lab in COURSE:
        assert lab.guide_steps, lab.name
        assert [s.number for s in lab.guide_steps] == list(range(1, len(lab.guide_steps) + 1))
        assert lab.solution_scripts("demo"), lab.name
        assert lab.module("grade") is not None and lab.steps, lab.name


def test_every_step_of_the_58_is_taught_by_some_lab():
    """The course covers the whole boot: each step is the objective of at least one lab."""
    assert uncovered_steps(COURSE) == []


def test_the_published_course_is_the_course():
    """docs/labs/ is what `novalab lab docs` writes from labs/: regenerate it if not."""
    docs = ROOT / "docs" / "labs"
    assert (docs / "README.md").read_text() == index(COURSE)
    for lab in COURSE:
        assert (docs / f"{lab.name}.md").read_text() == page(lab), \
            f"docs/labs/{lab.name}.md is stale: run `novalab lab docs`"


@pytest.fixture(scope="module")
def learner(tmp_path_factory):
    """A learner's shell: the venv first on PATH, a lab home of its own."""
    with private_services.own_standard_ports("the lab cloud"):
        home = tmp_path_factory.mktemp("lab-home")
        env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        env.pop("NOVALAB_STATE_DIR", None)
        env.update(NOVALAB_LAB_HOME=str(home), PATH=f"{BIN}:{env.get('PATH', '')}")
        yield env
        subprocess.run([str(BIN / "novalab"), "lab", "stop"], env=env, capture_output=True,
                       timeout=120)  # the timings are reported at the end (conftest.py)


def novalab(env, *args, expect=0):
    done = subprocess.run([str(BIN / "novalab"), *args], env=env, capture_output=True,
                          text=True, timeout=300, cwd=env["NOVALAB_LAB_HOME"])
    assert done.returncode == expect, \
        f"novalab {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


# The course is the suite's longest module: labs 00-12 here, the rest in
# test_course_later.py (a lab home and a lab cloud of its own), so that two workers
# share it (docs/perf/test-durations.md). Lab 10 runs whole on `novalab up`
# (tests/reference/deploy/test_up.py), its fifth drill included: here it would repeat
# the first four. Each half runs its labs by the lab cloud's shape (1 compute host,
# then 2, then 3), so the cloud is restarted only when the shape changes.
LATER = "13"
CARRIED_BY_TEST_UP = {"10-failure-drills"}
ON_THE_LAB_CLOUD = [lab for lab in COURSE if "running" not in lab.needs
                    and lab.name not in CARRIED_BY_TEST_UP]


def by_shape(later: bool) -> list[str]:
    """The labs of one half, those of a smaller lab cloud first."""
    half = [lab for lab in ON_THE_LAB_CLOUD if (lab.number >= LATER) == later]
    return [lab.name for lab in sorted(half, key=lambda lab: (lab.computes, lab.number))]


@pytest.mark.parametrize("name", by_shape(later=False))
def test_lab_from_start_to_finish(learner, name):
    run_lab(learner, name)


def run_lab(learner, name):
    """One lab as a learner runs it, honestly: start, a failing grade, the written
    solution, a passing grade, finish; nothing left, the pass recorded by the cloud."""
    lab = find(name)
    timing = TIMINGS.setdefault(name, {})
    began = time.monotonic()
    novalab(learner, "lab", "start", name)
    timing["start"] = time.monotonic() - began

    before = novalab(learner, "lab", "grade", name, expect=1).stdout
    assert "FAIL" in before and "checks pass" in before
    # Every failing check says why, on the line below it.
    lines = before.splitlines()
    for number, line in enumerate(lines):
        if line.startswith("FAIL"):
            assert lines[number + 1].startswith("      ") and lines[number + 1].strip()

    began = time.monotonic()
    for script in lab.solution_scripts("demo", _attempt_values(learner, lab)):
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], env=learner,
                              capture_output=True, text=True, timeout=600,
                              cwd=learner["NOVALAB_LAB_HOME"])
        assert done.returncode == 0, f"{name} solution:\n{script}\n{done.stdout}\n{done.stderr}"
    timing["solution"] = time.monotonic() - began

    after = novalab(learner, "lab", "grade", name).stdout
    assert "FAIL" not in after and f"{name} done" in after

    began = time.monotonic()
    novalab(learner, "lab", "finish", name, "--keep-cloud")
    timing["finish"] = time.monotonic() - began
    _assert_nothing_left(learner, lab)
    _assert_recorded_passed(learner, lab)


def _service(env):
    from novalab.labs.client import LabService
    from novalab.labs.cloud import LabClouds

    cloud = LabClouds(Path(env["NOVALAB_LAB_HOME"])).current()
    return LabService(cloud.auth_url, "demo", cloud.os_env["OS_PASSWORD"], "demo")


def _attempt_values(env, lab) -> dict:
    """What this attempt drew for the learner (the solution is written with them)."""
    service = _service(env)
    attempt = service.current(lab.name)
    service.close()
    return attempt["parameters"]


def _assert_recorded_passed(env, lab):
    """The cloud's lab service, not a file of the learner's, records the pass."""
    service = _service(env)
    attempts = service.attempts(lab=lab.name)["attempts"]
    service.close()
    assert attempts[0]["passed_at"] and attempts[0]["finished_at"], attempts[0]


def _assert_nothing_left(env, lab):
    from novalab.labs.cloud import LabClouds
    from novalab.labs.course import find as find_lab
    from novalab.labs.grading import Context

    clouds = LabClouds(Path(env["NOVALAB_LAB_HOME"]))
    cloud = clouds.current()
    ctx = Context(lab=find_lab(lab.name), cloud=cloud, user="demo",
                  password=cloud.os_env["OS_PASSWORD"], project="demo",
                  workdir=Path("/nonexistent"))
    from novalab.labs.cleanup import leftovers

    assert {kind: names for kind, names in leftovers(ctx).items() if names} == {}
    assert not (clouds.home / "work" / lab.name).exists()
    faults = cloud.state_dir / "faults.json"
    if faults.exists():
        assert not any(name in faults.read_text() for name in lab.faults)
