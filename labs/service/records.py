"""Attempts and grades in the cloud's database: who started which lab, answered what,
passed when. Every read and write names the learner (their keystone user id), so
one learner's call never reaches another's rows; listing everyone's is the admin's.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, func, select

from novalab.labs.service.models import Attempt, Grade, LabBase
from novalab.reference.common.db import Database, in_chunks, utcnow

GRADES_KEPT = 20  # per attempt: enough to see progress, bounded whatever a learner loops


@dataclass(frozen=True)
class Learner:
    """Who asks, from their validated token."""

    user_id: str
    user_name: str
    project_id: str
    project_name: str
    is_admin: bool = False


def _view(attempt: Attempt, last: Grade | None = None) -> dict:
    return {"id": attempt.id, "lab": attempt.lab, "user_id": attempt.user_id,
            "user_name": attempt.user_name, "project_id": attempt.project_id,
            "project_name": attempt.project_name,
            "started_at": attempt.started_at.isoformat() + "Z",
            "finished_at": attempt.finished_at.isoformat() + "Z" if attempt.finished_at
            else None,
            "passed_at": attempt.passed_at.isoformat() + "Z" if attempt.passed_at else None,
            "parameters": dict(attempt.parameters or {}), "answers": dict(attempt.answers or {}),
            "last_grade": None if last is None else {
                "graded_at": last.graded_at.isoformat() + "Z", "passed": last.passed,
                "checks_passed": sum(1 for c in last.checks if c.get("passed")),
                "checks": len(last.checks)}}


class Records:
    def __init__(self, db: Database):
        self.db = db
        LabBase.metadata.create_all(db.engine)

    def _current(self, session, learner: Learner, lab: str) -> Attempt | None:
        return session.scalars(select(Attempt).where(
            Attempt.user_id == learner.user_id, Attempt.lab == lab,
            Attempt.finished_at.is_(None)).order_by(Attempt.id.desc())).first()

    def current(self, learner: Learner, lab: str) -> dict | None:
        """The learner's attempt at ``lab`` in progress, or None."""
        with self.db.session() as session:
            attempt = self._current(session, learner, lab)
            return _view(attempt, self._last(session, attempt)) if attempt else None

    def start(self, learner: Learner, lab: str, parameters: dict) -> tuple[dict, bool]:
        """The attempt in progress, else a new one with ``parameters``; (attempt, new)."""
        with self.db.session() as session:
            attempt = self._current(session, learner, lab)
            if attempt is not None:
                return _view(attempt, self._last(session, attempt)), False
            attempt = Attempt(lab=lab, user_id=learner.user_id, user_name=learner.user_name,
                              project_id=learner.project_id,
                              project_name=learner.project_name, parameters=parameters,
                              answers={})
            session.add(attempt)
            session.flush()
            return _view(attempt), True

    def answer(self, learner: Learner, lab: str, key: str, value: str) -> dict | None:
        with self.db.session() as session:
            attempt = self._current(session, learner, lab)
            if attempt is None:
                return None
            attempt.answers = {**(attempt.answers or {}), key: value}
            return _view(attempt, self._last(session, attempt))

    def graded(self, attempt_id: int, passed: bool, checks: list[dict]) -> None:
        with self.db.session() as session:
            attempt = session.get(Attempt, attempt_id)
            session.add(Grade(attempt_id=attempt_id, passed=passed, checks=checks))
            if passed and attempt.passed_at is None:
                attempt.passed_at = utcnow()
            session.flush()
            kept = select(Grade.id).where(Grade.attempt_id == attempt_id) \
                .order_by(Grade.id.desc()).limit(GRADES_KEPT)
            session.execute(delete(Grade).where(Grade.attempt_id == attempt_id,
                                                Grade.id.not_in(kept.scalar_subquery())))

    def finish(self, learner: Learner, lab: str) -> dict | None:
        """End the learner's attempt at ``lab``; None when none was in progress."""
        with self.db.session() as session:
            attempt = self._current(session, learner, lab)
            if attempt is None:
                return None
            attempt.finished_at = utcnow()
            return _view(attempt, self._last(session, attempt))

    def attempts(self, user_id: str | None = None, lab: str | None = None) -> list[dict]:
        """Attempts, newest first: one learner's, or (None) everyone's."""
        with self.db.session() as session:
            query = select(Attempt).order_by(Attempt.id.desc())
            if user_id is not None:
                query = query.where(Attempt.user_id == user_id)
            if lab is not None:
                query = query.where(Attempt.lab == lab)
            found = list(session.scalars(query))
            last = self._last_of(session, [a.id for a in found])
            return [_view(a, last.get(a.id)) for a in found]

    def in_progress(self) -> int:
        """Attempts not finished, every learner's: the cloud is still in use."""
        with self.db.session() as session:
            return session.scalar(select(func.count()).select_from(Attempt)
                                  .where(Attempt.finished_at.is_(None)))

    @staticmethod
    def _last_of(session, attempt_ids: list[int]) -> dict[int, Grade]:
        """The newest grade of each attempt, in one query (a class's status lists every
        learner's attempts: one query each would be hundreds)."""
        last: dict[int, Grade] = {}
        for chunk in in_chunks(attempt_ids):
            for grade in session.scalars(select(Grade).where(Grade.attempt_id.in_(chunk))
                                         .order_by(Grade.id.desc())):
                last.setdefault(grade.attempt_id, grade)
        return last

    @staticmethod
    def _last(session, attempt: Attempt) -> Grade | None:
        return session.scalars(select(Grade).where(Grade.attempt_id == attempt.id)
                               .order_by(Grade.id.desc())).first()
