"""Where each learner is in the course: kept per OS user and per keystone user.

The file is ``LAB_HOME/progress.json`` (``LAB_HOME`` is per OS user, see
``cloud.lab_home``), keyed by the keystone user the learner works as, so a
class sharing one cloud (each learner their own keystone user) and one
machine account still keeps everyone's progress apart. Every change is one
locked read-modify-write, so two terminals of one learner never lose a line.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path


class Progress:
    def __init__(self, home: Path, user: str):
        self.path = Path(home) / "progress.json"
        self.user = user

    @contextlib.contextmanager
    def _edit(self) -> Iterator[dict]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = self._read()
            yield data
            tmp = self.path.with_name(f".progress.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
            tmp.replace(self.path)

    def _read(self) -> dict:
        try:
            return json.loads(self.path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def lab(self, name: str) -> dict:
        """This learner's record of one lab (empty if never started)."""
        return self._read().get(self.user, {}).get(name, {})

    def all(self) -> dict[str, dict]:
        return self._read().get(self.user, {})

    def update(self, name: str, **changes) -> dict:
        with self._edit() as data:
            record = data.setdefault(self.user, {}).setdefault(name, {})
            record.update(changes)
            return dict(record)

    def started(self, name: str, cloud: str) -> None:
        self.update(name, started=time.time(), cloud=cloud, step=0, hints=0, done=False,
                    finished=None)

    def answer(self, name: str, key: str, value: str) -> None:
        with self._edit() as data:
            record = data.setdefault(self.user, {}).setdefault(name, {})
            record.setdefault("answers", {})[key] = value

    def graded(self, name: str, passed: bool, lines: list[dict]) -> None:
        with self._edit() as data:
            record = data.setdefault(self.user, {}).setdefault(name, {})
            record.setdefault("grades", []).append({"time": time.time(), "passed": passed,
                                                    "checks": lines})
            record["grades"] = record["grades"][-20:]
            if passed:
                record["done"] = True

    def forget(self, name: str) -> None:
        with self._edit() as data:
            data.get(self.user, {}).pop(name, None)
