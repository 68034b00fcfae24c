"""The cloud a learner's labs run on, which outlives every `novalab lab` command.

Two kinds:

* **the lab cloud** (the default): the embedded cloud started by `lab start` as
  a background `novalab serve` on the standard ports, its state dir
  ``LAB_HOME/cloud``, its output in ``LAB_HOME/cloud/serve.log``. `serve` keeps
  its pid in ``run/serve.pid`` and what clients need in ``cloud.json``; `lab
  start` holds ``LAB_HOME/cloud.lock`` while it starts or stops it, so two
  terminals never start two. `lab stop` (or `lab finish` of the last lab in
  progress) stops it. A lab that needs more compute hosts (``[cloud] computes``
  in its lab.toml) gets a lab cloud of that shape, a cloud of its own in
  ``LAB_HOME/cloud-N-computes``; one lab cloud runs at a time.
* **a running cloud** (`lab start --cloud running`): a `novalab up` or `novalab
  serve` deployment someone already runs, found as the trace store finds it.
* **a shared cloud** (`lab start --cloud shared`): the class's cloud, run by the
  teacher on the lab machine or elsewhere, reached with the learner's own ``OS_*``
  variables (their roster line); nothing of its state dir is read here.

``LAB_HOME`` is ``$NOVALAB_LAB_HOME``, else ``$XDG_STATE_HOME/novalab/labs``
(``~/.local/state/novalab/labs``): one per OS user. It also holds the
learner's progress and each lab's work folder (``work/NN-name``), where labs
ask learners to write files.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from novalab.reference.common.credentials import Credentials
from novalab.tracing import store

ENV_LAB_HOME = "NOVALAB_LAB_HOME"
START_TIMEOUT = 120.0


class CloudError(Exception):
    """The lab cloud cannot be started, reached or found; the message says what to do."""


def lab_home() -> Path:
    if os.environ.get(ENV_LAB_HOME):
        return Path(os.environ[ENV_LAB_HOME])
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(Path.home(), ".local", "state")
    return Path(base) / "novalab" / "labs"


def _alive(pid) -> bool:
    with contextlib.suppress(ChildProcessError, ValueError, TypeError):
        os.waitpid(int(pid), os.WNOHANG)  # reap it if it was our child and has exited
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, ValueError, TypeError):
        return False
    except PermissionError:
        return True
    return True


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


@dataclass
class Cloud:
    """A cloud labs can use: its state dir and how to reach it."""

    kind: str          # "lab", "running" or "shared"
    state_dir: Path | None  # None: a shared cloud, whose files are not the learner's
    os_env: dict
    web: str | None = None
    # Each service's address as the deployment wrote it ("metadata", "metadata-proxy",
    # "ceph-mon", ...): what a check needs for a service outside keystone's catalog.
    urls: dict = field(default_factory=dict)
    # The broker of a `novalab up` cloud (RabbitMQ), for `novalab queues`; "" when the
    # broker lives inside the cloud's process (the lab cloud's memory://).
    transport_url: str = ""

    @property
    def auth_url(self) -> str:
        return self.os_env["OS_AUTH_URL"]

    @property
    def credentials(self) -> Credentials:
        """The deployment's passwords, readable by the OS user who runs it."""
        return Credentials.of(self.state_dir)


def describe(state_dir: Path) -> Cloud | None:
    """The cloud of ``state_dir`` if it runs: `serve` (cloud.json) or `up` (state.json)."""
    served = _read(state_dir / "cloud.json")
    if served and _alive(served.get("pid")):
        return Cloud("serve", state_dir, served["os_env"], served.get("web"),
                     dict(served.get("urls") or {}))
    deployed = _read(state_dir / "state.json")
    if deployed.get("os_env") and not deployed.get("stopped_at") and store.running(state_dir):
        web = (deployed.get("urls") or {}).get("web")
        transport = str(deployed.get("transport_url") or "")
        return Cloud("up", state_dir, deployed["os_env"], web,
                     dict(deployed.get("urls") or {}),
                     transport if transport.startswith("amqp") else "")
    return None


SHARED_ENV = ("OS_AUTH_URL", "OS_USERNAME", "OS_PASSWORD")


def shared_cloud() -> Cloud:
    """The cloud the learner's ``OS_*`` variables log in to; CloudError if they are unset."""
    missing = [name for name in SHARED_ENV if not os.environ.get(name)]
    if missing:
        raise CloudError(f"a shared cloud is reached with your own OS_* variables (your "
                         f"teacher's roster line): {', '.join(missing)} not set")
    env = {key: value for key, value in os.environ.items() if key.startswith("OS_")}
    return Cloud("shared", None, env)


class LabClouds:
    """Starting, finding and stopping the cloud of one learner's labs."""

    def __init__(self, home: Path | None = None):
        self.home = Path(home) if home else lab_home()
        self.lab_dir = self.home / "cloud"
        self.choice_file = self.home / "cloud-choice.json"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.home.mkdir(parents=True, exist_ok=True)
        with open(self.home / "cloud.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    # Which cloud ----------------------------------------------------------------------------

    def current(self) -> Cloud:
        """The cloud the labs use now; CloudError says how to get one."""
        choice = _read(self.choice_file)
        if choice.get("kind") == "shared":
            return shared_cloud()
        state_dir = Path(choice["state_dir"]) if choice.get("state_dir") else self.lab_dir
        cloud = describe(state_dir)
        if cloud is None:
            raise CloudError(f"no cloud runs for the labs (looked at {state_dir}): "
                             "`novalab lab start NAME` starts one")
        cloud.kind = choice.get("kind", "lab")
        return cloud

    def use_running(self, state_dir: str | None = None) -> Cloud:
        """Choose a running `novalab up` or `serve` cloud for the labs."""
        try:
            path = store.locate(state_dir)
        except store.NoTrace as exc:
            raise CloudError("no running novalab cloud found: start one with `novalab up` "
                             "or `novalab serve`, or drop --cloud running") from exc
        cloud = describe(path)
        if cloud is None:
            raise CloudError(f"the cloud of {path} is not running: start it (`novalab up "
                             f"--state-dir {path}`) or drop --cloud running")
        self._choose("running", path)
        cloud.kind = "running"
        return cloud

    def use_shared(self) -> Cloud:
        """Choose the cloud of the learner's ``OS_*`` variables for the labs."""
        cloud = shared_cloud()
        self.home.mkdir(parents=True, exist_ok=True)
        self.choice_file.write_text(json.dumps({"kind": "shared"}))
        return cloud

    def _choose(self, kind: str, state_dir: Path) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.choice_file.write_text(json.dumps({"kind": kind,
                                                "state_dir": str(Path(state_dir).absolute())}))

    # The lab cloud --------------------------------------------------------------------------

    def lab_dir_for(self, computes: int = 1) -> Path:
        """The lab cloud's state dir for a shape: ``cloud`` with one compute host (what
        most labs use), ``cloud-N-computes`` with N. Each shape is a cloud of its own: a
        database remembers every compute host it ever had, and a cloud restarted with
        fewer would still see the missing host up (its last heartbeat) for a minute and
        send boots to a queue nobody reads."""
        return self.lab_dir if computes <= 1 else self.home / f"cloud-{computes}-computes"

    def running_lab_cloud(self) -> tuple[Path, tuple[str, ...]] | None:
        """The state dir of the lab cloud that runs, and the extra `serve` arguments it
        was started with (a cloud started before they were recorded: none); None when
        no lab cloud runs."""
        dirs = [self.lab_dir, *sorted(self.home.glob("cloud-*-computes"))]
        for state_dir in dirs:
            served = _read(state_dir / "cloud.json")
            if served and _alive(served.get("pid")):
                record = _read(state_dir / "lab-cloud.json")
                same = record.get("pid") == served["pid"]
                return state_dir, tuple(record.get("args", ())) if same else ()
        return None

    def start(self, extra_args: tuple[str, ...] = (), computes: int = 1) -> Cloud:
        """The lab cloud with ``computes`` compute hosts, started in the background unless
        it already runs. Another shape of it must be stopped first (one set of standard
        ports)."""
        state_dir = self.lab_dir_for(computes)
        with self._locked():
            cloud = describe(state_dir)
            if cloud is not None:
                self._choose("lab", state_dir)
                cloud.kind = "lab"
                return cloud
            other = self.running_lab_cloud()
            if other is not None:
                raise CloudError(f"another lab cloud runs, from {other[0]}: `novalab lab stop` "
                                 "stops it")
            self._choose("lab", state_dir)
            state_dir.mkdir(parents=True, exist_ok=True)
            log = open(state_dir / "serve.log", "a")  # noqa: SIM115 - the child owns it
            shape = ("--computes", str(computes)) if computes > 1 else ()
            process = subprocess.Popen(
                [sys.executable, "-m", "novalab.labs.cli", "serve", "--state-dir",
                 str(state_dir), *shape, *extra_args],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                env=dict(os.environ, PYTHONUNBUFFERED="1"))
            log.close()
            deadline = time.monotonic() + START_TIMEOUT
            while time.monotonic() < deadline:
                cloud = describe(state_dir)
                if cloud is not None and _read(state_dir / "cloud.json").get("pid") == \
                        process.pid:
                    cloud.kind = "lab"
                    (state_dir / "lab-cloud.json").write_text(json.dumps(
                        {"pid": process.pid, "args": list(extra_args)}))
                    return cloud
                if process.poll() is not None:
                    break
                time.sleep(0.2)
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
            tail = (state_dir / "serve.log").read_text(errors="replace")[-1500:]
            raise CloudError("the lab cloud did not start (its log, "
                             f"{state_dir / 'serve.log'}, ends with):\n{tail}")

    def stop(self, timeout: float = 60.0) -> bool:
        """Stop the lab cloud (SIGINT, as Ctrl-C would); False if it was not running."""
        with self._locked():
            running = self.running_lab_cloud()
            if running is None:
                return False
            pid = _read(running[0] / "cloud.json")["pid"]
            os.kill(pid, signal.SIGINT)
            deadline = time.monotonic() + timeout
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
            return True
