"""What the lab service does for one learner's request: a lab's set-up, its grade, its
finish, run inside the cloud with a :class:`~novalab.labs.grading.Context` built from
the learner's token.

The checks read the cloud's APIs *as the learner* (their token), the admin views
with the cloud's own credentials, the trace store and the metadata secret from
the state dir, and the learner's files from the copy their client sent (the
lab's ``artifacts``, written to a folder of this grade's own).
"""

from __future__ import annotations

import base64
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from novalab.labs import cleanup
from novalab.labs.cloud import Cloud
from novalab.labs.course import Lab
from novalab.labs.grading import Context, Result, grade
from novalab.labs.service.records import Learner
from novalab.reference.common import exception


class BadArtifact(exception.Invalid):
    pass


def safe_relative(name: str) -> PurePosixPath:
    """``name`` as a path inside the lab folder: relative, no ``..``, no backslash."""
    path = PurePosixPath(name)
    if not name or "\\" in name or "\0" in name or path.is_absolute() or \
            any(part in ("..", "") for part in name.split("/")):
        raise BadArtifact(f"{name!r} is not a path inside your lab folder")
    return path


class Runner:
    """Runs labs' code for learners, on the cloud it belongs to."""

    def __init__(self, cloud: Cloud):
        self.cloud = cloud

    def context(self, lab: Lab, learner: Learner, token: str, attempt: dict,
                workdir: Path) -> Context:
        started = attempt.get("started_at")
        started_at = datetime.fromisoformat(started.rstrip("Z")).replace(tzinfo=UTC) \
            .timestamp() if started else 0.0
        return Context(lab=lab, cloud=self.cloud, user=learner.user_name, password="",
                       project=learner.project_name, workdir=workdir,
                       answers=dict(attempt.get("answers") or {}), token=token,
                       parameters=dict(attempt.get("parameters") or {}),
                       started_at=started_at, user_id=learner.user_id)

    @staticmethod
    def learner_folder(attempt: dict) -> Path:
        """The lab folder on the learner's machine, as their client named it at start
        (what a lab's set-up may point the cloud at, on the learner's own lab cloud)."""
        return Path(attempt.get("parameters", {}).get("workdir") or "/nonexistent")

    def start(self, lab: Lab, learner: Learner, token: str, attempt: dict) -> None:
        prepare = lab.module("prepare")
        if prepare is not None and hasattr(prepare, "start"):
            prepare.start(self.context(lab, learner, token, attempt,
                                       self.learner_folder(attempt)))

    def grade(self, lab: Lab, learner: Learner, token: str, attempt: dict,
              files: dict[str, str]) -> list[Result]:
        """Every check of ``lab``, on a copy of the learner's ``files`` (name -> base64)."""
        folder = Path(tempfile.mkdtemp(prefix=f"novalab-grade-{lab.number}-"))
        try:
            for name, data in files.items():
                path = folder / safe_relative(name)
                path.parent.mkdir(parents=True, exist_ok=True)
                try:
                    path.write_bytes(base64.b64decode(data, validate=True))
                except ValueError as exc:
                    raise BadArtifact(f"{name!r}: not base64 ({exc})") from exc
            return grade(self.context(lab, learner, token, attempt, folder))
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def finish(self, lab: Lab, learner: Learner, token: str, attempt: dict) -> dict:
        """Undo the lab's set-up, clear its fault knobs, remove what the learner made."""
        ctx = self.context(lab, learner, token, attempt, self.learner_folder(attempt))
        prepare = lab.module("prepare")
        if prepare is not None and hasattr(prepare, "finish"):
            prepare.finish(ctx)
        if lab.faults:
            from novalab.reference.common.faults import Faults

            faults = Faults(self.cloud.state_dir)
            for name in lab.faults:
                faults.clear(name)
        return cleanup.remove_all(ctx)
