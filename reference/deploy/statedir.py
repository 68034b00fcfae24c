"""The state directory of a one-process-per-service deployment (``novalab up``).

    .novalab-up/
      state.json              what `up` started, with which options (read by status, down, boot)
      logs/<unit>.log         each service's stdout and stderr
      run/<unit>.pid          the process id, written by `up` when it starts the process
      run/<unit>.ready        written by the service itself once it is built and serving
      traces/<unit>.jsonl     the service's spans, OTLP JSON lines (one batch a line)
      instances/<host>/       each compute host's instance files

A *unit* is one process: a service name, plus the host for services that run
once per compute host (``nova-compute-compute-1``), like a systemd unit.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from novalab.tracing.private import private_dir

DEFAULT_STATE_DIR = ".novalab-up"
DEFAULT_TRANSPORT = "amqp://guest:guest@127.0.0.1:5672/"
DEFAULT_DB = "postgresql+psycopg://postgres@127.0.0.1:5432/novalab"
# The URLs reach the service processes through the environment, not argv: `ps` shows argv.
ENV_TRANSPORT = "NOVALAB_TRANSPORT_URL"
ENV_DB = "NOVALAB_DB_URL"
# How Nova is wired (CloudConfig.topology): the classic chain of the 58-step table, or
# today's (placement, API database, super conductor). The same for every process of a
# cloud: `up` passes it in the environment, as it does the URLs.
TOPOLOGIES = ("classic", "modern")
ENV_TOPOLOGY = "NOVALAB_TOPOLOGY"
# Where a service listens, and the address other hosts reach it at (what goes into the
# catalog): loopback for a one-host cloud, the host's own address when services run
# on several hosts (docs/multihost.md).
DEFAULT_BIND = "127.0.0.1"
ENV_BIND = "NOVALAB_BIND_ADDRESS"
ENV_ADVERTISE = "NOVALAB_ADVERTISE_ADDRESS"
# Where a service finds the others' URLs: the ready files of its state directory (the
# services of this host), or keystone's catalog in the database (a host without the
# controller's state directory: a compute host).
URLS_FROM = ("state-dir", "catalog")
ENV_URLS_FROM = "NOVALAB_URLS_FROM"


@dataclass(frozen=True)
class Unit:
    name: str
    host: str | None = None     # set for per-host services (compute-1 ...)

    @property
    def id(self) -> str:
        return f"{self.name}-{self.host}" if self.host else self.name

    def to_dict(self) -> dict:
        return {"name": self.name, "host": self.host}


def write_json(path: Path, data: dict) -> None:
    """Write atomically: readers see the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    tmp.replace(path)


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


class StateDir:
    def __init__(self, root: str | os.PathLike = DEFAULT_STATE_DIR):
        self.root = Path(root).absolute()

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    @property
    def traces(self) -> Path:
        return self.root / "traces"

    def log(self, unit: Unit) -> Path:
        return self.root / "logs" / f"{unit.id}.log"

    def pid_file(self, unit: Unit) -> Path:
        return self.root / "run" / f"{unit.id}.pid"

    def ready_file(self, unit: Unit) -> Path:
        return self.root / "run" / f"{unit.id}.ready"

    def trace_file(self, unit_id: str) -> Path:
        return self.traces / f"{unit_id}.jsonl"

    def make(self) -> StateDir:
        private_dir(self.root)  # 0700: logs, traces, secrets (tracing/private.py)
        for sub in ("logs", "run", "traces"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        return self

    def load(self) -> dict | None:
        return read_json(self.state_file)

    def save(self, state: dict) -> None:
        write_json(self.state_file, state)

    def pid(self, unit: Unit) -> int | None:
        try:
            return int(self.pid_file(unit).read_text().strip())
        except (FileNotFoundError, ValueError):
            return None

    def pid_files(self) -> list[Path]:
        return sorted((self.root / "run").glob("*.pid"))

    def ready(self, unit: Unit) -> dict | None:
        return read_json(self.ready_file(unit))


LOCK_FILE = "novalab.lock"


class StateDirBusy(RuntimeError):
    """Another cloud already runs from this state directory."""


class StateDirLock:
    """An ``flock`` on ``STATE/novalab.lock`` for as long as a cloud runs from it.

    An embedded cloud (``boot``, ``serve``, a lab cloud) takes it *exclusive*:
    two of them on one directory would share pid files, dnsmasq's files and the
    database, and the first to stop would break the other. Each process of
    ``up`` takes it *shared*: they belong to one cloud. The kernel drops the lock
    when the process dies, so a crash never leaves a stale lock behind (a pid
    file alone can: the check and the write were two steps).
    """

    def __init__(self, root: str | os.PathLike, *, shared: bool = False, holder: str = ""):
        self.path = Path(root) / LOCK_FILE
        self.shared = shared
        self.holder = holder or f"pid {os.getpid()}"
        self._fd: int | None = None

    def acquire(self) -> StateDirLock:
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            held_by = self.path.read_text().strip() or "another process"
            raise StateDirBusy(
                f"a cloud already runs from {self.path.parent} ({held_by}): stop it first, "
                "or give another --state-dir") from None
        if not self.shared:
            os.ftruncate(fd, 0)
            os.write(fd, f"{self.holder}, pid {os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None

    def __enter__(self) -> StateDirLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
