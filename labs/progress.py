"""Where a learner is in a lab's guide: the step they read and the hints they saw.

This is the terminal's cursor, kept per OS user (``LAB_HOME/progress.json``,
see ``cloud.lab_home``) and keyed by the keystone user the learner works as.
What counts (attempts, answers, grades, who passed) is the cloud's, kept by
its lab service (``novalab.labs.service``) where no learner can edit it. Every
change is one locked read-modify-write, so two terminals never lose a line.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
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
        """This learner's place in one lab (``step``, ``hints``; empty if none)."""
        return self._read().get(self.user, {}).get(name, {})

    def update(self, name: str, **changes) -> dict:
        with self._edit() as data:
            record = data.setdefault(self.user, {}).setdefault(name, {})
            record.update(changes)
            return dict(record)

    def forget(self, name: str) -> None:
        with self._edit() as data:
            data.get(self.user, {}).pop(name, None)
