"""The lab service's tables: one row per attempt at a lab, one per grade of it.

They live in the cloud's database beside Nova's and Keystone's, but in a
metadata of their own: they are novalab's, not OpenStack's, so they stay out of
the reference services' Alembic history, and the service makes them itself
when it starts (``create_all``: new tables only, never a changed one).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, DateTime, ForeignKey, Integer, MetaData, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from novalab.reference.common.db import utcnow


class LabBase(DeclarativeBase):
    metadata = MetaData()


class Attempt(LabBase):
    """A learner's go at a lab, from `lab start` to `lab finish`.

    ``parameters`` are what this attempt drew for the learner (names, sizes...);
    ``answers`` what they answered. A new attempt starts with none of either, and
    ``started_at`` is the time before which nothing counts.
    """

    __tablename__ = "lab_attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    lab: Mapped[str] = mapped_column(String(64), index=True)
    user_id: Mapped[str] = mapped_column(String(64), index=True)
    user_name: Mapped[str] = mapped_column(String(255))
    project_id: Mapped[str] = mapped_column(String(64))
    project_name: Mapped[str] = mapped_column(String(255))
    started_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    passed_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    parameters: Mapped[dict] = mapped_column(JSON, default=dict)
    answers: Mapped[dict] = mapped_column(JSON, default=dict)


class Grade(LabBase):
    """One `lab grade`: every check's result, as the learner saw it."""

    __tablename__ = "lab_grades"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    attempt_id: Mapped[int] = mapped_column(ForeignKey("lab_attempts.id", ondelete="CASCADE"),
                                            index=True)
    graded_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    passed: Mapped[bool] = mapped_column(Boolean)
    checks: Mapped[list] = mapped_column(JSON)
    note: Mapped[str] = mapped_column(Text, default="")
