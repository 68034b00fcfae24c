"""Issue 21's "done when": a class on one shared `serve`, as real machine accounts.

Three learners, each a real OS user (`useradd`, commands run with `runuser`) and a
class user (`novalab class add`), do the same lab at once through `novalab lab
--cloud shared` and pass it honestly. None can read the cloud's state dir, another's
traces or grades; one learner's `lab finish` leaves the others' servers, traces and
the cloud untouched; `class status` shows all three.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path

import private_services
import pytest

from novalab.labs.course import find

pytestmark = pytest.mark.e2e  # a serve on the standard ports, OS users, the real CLIs

BIN = Path(sys.executable).parent
LAB = find("02")
TEACHER_ENV = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}


def _teacher(*args, state) -> subprocess.CompletedProcess:
    done = subprocess.run([str(BIN / "novalab"), *args], env=TEACHER_ENV, capture_output=True,
                          text=True, timeout=300, cwd=state.parent)
    assert done.returncode == 0, f"novalab {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done


class Learner:
    """One learner: a machine account of their own and a class user on the shared cloud."""

    def __init__(self, name: str, account: str, home: Path, roster: dict):
        self.name, self.account, self.home = name, account, home
        self.env = {"PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home),
                    "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
                    "OS_AUTH_URL": roster["auth_url"], "OS_USERNAME": roster["user"],
                    "OS_PASSWORD": roster["password"], "OS_PROJECT_NAME": roster["project"],
                    "OS_USER_DOMAIN_ID": "default", "OS_PROJECT_DOMAIN_ID": "default",
                    "OS_IDENTITY_API_VERSION": "3", "OS_REGION_NAME": "RegionOne"}

    def run(self, script: str, check: bool = True) -> subprocess.CompletedProcess:
        """``script`` in bash, as this learner's machine account would type it."""
        env = [f"{k}={v}" for k, v in self.env.items()]
        command = ["runuser", "-u", self.account, "--", "env", "-i", *env,
                   "bash", "-euo", "pipefail", "-c", script]
        done = subprocess.run(_with_python(command), capture_output=True, text=True,
                              timeout=600, cwd=self.home)
        if check:
            assert done.returncode == 0, \
                f"{self.name}: {script}\n{done.stdout}\n{done.stderr}"
        return done

    def service(self):
        """This learner's session with the lab service (their own credentials)."""
        from novalab.labs.client import LabService

        return LabService(self.env["OS_AUTH_URL"], self.name, self.env["OS_PASSWORD"],
                          self.env["OS_PROJECT_NAME"])


def _python_home() -> Path | None:
    """Where this interpreter lives when other users cannot reach it (pyenv under a 0700
    /root on some machines; a lab machine's Python is /usr/bin's): that root-only
    directory, else None."""
    real = Path(os.path.realpath(sys.executable))
    for parent in real.parents:
        if parent != Path("/") and not os.stat(parent).st_mode & 0o001:
            return parent
    return None


PYTHON_HOME = _python_home()
VIEW = Path(tempfile.gettempdir()) / f"novalab-python-view-{os.getpid()}"


def _with_python(command: list[str]) -> list[str]:
    """``command`` with the interpreter reachable by the learner: in a mount namespace
    of its own, the closed directory (``/root``) is replaced by a view that holds only
    the interpreter's tree, so nothing else of root's becomes readable."""
    if PYTHON_HOME is None:
        return command
    inner = Path(os.path.realpath(sys.executable)).relative_to(PYTHON_HOME).parts[0]
    view = VIEW / "root"
    if not view.exists():
        view.mkdir(mode=0o711)
        (view / inner).mkdir()
    shell = (f"mount --bind {PYTHON_HOME / inner} {view / inner} && "
             f"mount --rbind {view} {PYTHON_HOME} && exec \"$@\"")
    return ["unshare", "--mount", "sh", "-c", shell, "sh", *command]


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    if os.geteuid() != 0 or not shutil.which("useradd") or not shutil.which("runuser"):
        pytest.skip("needs root, useradd and runuser to make the learners' machine accounts")
    tag = uuid.uuid4().hex[:4]
    homes = Path(tempfile.mkdtemp(prefix="novalab-class-"))
    VIEW.mkdir(mode=0o711, exist_ok=True)
    homes.chmod(0o755)
    accounts = []
    with private_services.own_standard_ports("a class's shared cloud"):
        state = tmp_path_factory.mktemp("teacher") / "cloud"
        serve = subprocess.Popen([str(BIN / "novalab"), "serve", "--state-dir", str(state)],
                                 env=TEACHER_ENV, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        try:
            for line in serve.stdout:
                if line.startswith("export OS_REGION_NAME"):
                    break
            else:
                pytest.fail("novalab serve did not come up")
            threading.Thread(target=serve.stdout.read, daemon=True).start()
            names = [f"{who}{tag}" for who in ("ann", "ben", "cat")]
            roster_file = state.parent / "roster.json"
            _teacher("class", "add", *names, "--state-dir", str(state), "--roster",
                     str(roster_file), state=state)
            roster = json.loads(roster_file.read_text())["learners"]
            learners = []
            for name in names:
                account = f"nl-{name}"
                home = homes / account
                subprocess.run(["useradd", "--create-home", "--home-dir", str(home),
                                "--shell", "/bin/bash", account], check=True)
                accounts.append(account)
                learners.append(Learner(name, account, home, roster[name]))
            yield state, learners
        finally:
            serve.send_signal(signal.SIGINT)
            serve.wait(timeout=60)
            for account in accounts:
                subprocess.run(["userdel", "--remove", account], capture_output=True)
            shutil.rmtree(homes, ignore_errors=True)
            shutil.rmtree(VIEW, ignore_errors=True)


def _do_the_lab(learner: Learner) -> None:
    learner.run(f"novalab lab start {LAB.number} --cloud shared")
    service = learner.service()
    values = service.current(LAB.name)["parameters"]
    service.close()
    for script in LAB.solution_scripts(learner.name, values):
        learner.run(script)


def test_three_learners_pass_the_same_lab_at_once_and_stay_apart(classroom):
    state, learners = classroom
    failures = []

    def attempt(learner):
        try:
            _do_the_lab(learner)
        except BaseException as exc:  # reported below, with which learner
            failures.append((learner.name, exc))

    threads = [threading.Thread(target=attempt, args=(one,)) for one in learners]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    for learner in learners:
        graded = learner.run(f"novalab lab grade {LAB.number}", check=False)
        assert graded.returncode == 0 and f"{LAB.name} done" in graded.stdout, \
            (learner.name, graded.stdout, graded.stderr)

    ann, ben, cat = learners
    server = LAB.rendered_names(ann.name)["server"]
    others = {one.name: LAB.rendered_names(one.name)["server"] for one in (ben, cat)}
    # -- nobody reads the cloud's files, or a classmate's traces and grades ------------------
    for path in (state / "credentials.json", state / "traces", state / "novalab.db"):
        assert ann.run(f"cat {path} || ls {path}", check=False).returncode != 0, path
    theirs = ann.run(f"novalab trace show --server {others[ben.name]} --timeout 2",
                     check=False)
    assert theirs.returncode != 0 and "no trace" in (theirs.stdout + theirs.stderr)
    assert ann.run(f"novalab flow check --server {server}").returncode == 0
    grades = ann.run("curl -sf -o /dev/null -w '%{http_code}' -H \"X-Auth-Token: "
                     "$(openstack token issue -f value -c id)\" \"$(openstack catalog show lab "
                     "-f json | python3 -c 'import json,sys; print(json.load(sys.stdin)"
                     "[\"endpoints\"][0][\"url\"])')/attempts?all=true\"", check=False)
    assert grades.stdout.strip() == "403", grades.stdout + grades.stderr
    mine = ann.service()
    assert {a["user_name"] for a in mine.attempts()["attempts"]} == {ann.name}
    mine.close()

    # -- one learner's finish leaves the others and the cloud as they were -------------------
    ann.run(f"novalab lab finish {LAB.number}")
    for one in (ben, cat):
        listed = json.loads(one.run("openstack server list -f json").stdout)
        assert [s["Name"] for s in listed] == [others[one.name]], one.name
        one.run(f"novalab flow check --server {others[one.name]}")
    assert json.loads(ann.run("openstack server list -f json").stdout) == []

    # -- the teacher sees all three ----------------------------------------------------------
    status = _teacher("class", "status", "--state-dir", str(state), state=state).stdout
    for learner in learners:
        assert learner.name in status
