"""Placement's tables (``placement/db/sqlalchemy/models.py``), with a ``placement_`` prefix.

- ``placement_resource_providers``: a provider (a compute node, say), its
  ``generation`` (bumped by every inventory or allocation write) and its place
  in a tree (``parent_provider_id``, ``root_provider_id``; a root is its own root).
- ``placement_inventories``: how much of one resource class a provider has,
  and the rules of its use (``reserved``, ``min_unit``, ``max_unit``,
  ``step_size``, ``allocation_ratio``).
- ``placement_allocations``: one row per (consumer, provider, class): ``used``.
- ``placement_consumers``: who holds allocations (an instance's uuid), its
  project, user and consumer ``generation``.

Two simplifications: resource classes are named in the rows (upstream keeps
an id into a ``resource_classes`` table, for custom classes novalab does not
have), and a consumer keeps its project and user ids itself (upstream points
at ``projects`` and ``users`` rows holding them).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, Float, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from novalab.reference.common.db import Base, utcnow

_PROVIDER_ID = "placement_resource_providers.id"


class _Timestamps:
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime | None] = mapped_column(DateTime, onupdate=utcnow)


class ResourceProvider(_Timestamps, Base):
    __tablename__ = "placement_resource_providers"
    __table_args__ = (
        UniqueConstraint("uuid", name="uniq_placement_resource_providers0uuid"),
        UniqueConstraint("name", name="uniq_placement_resource_providers0name"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    uuid: Mapped[str] = mapped_column(String(36))
    name: Mapped[str] = mapped_column(String(200))
    generation: Mapped[int] = mapped_column(Integer, default=0)
    root_provider_id: Mapped[int | None] = mapped_column(ForeignKey(_PROVIDER_ID), index=True)
    parent_provider_id: Mapped[int | None] = mapped_column(ForeignKey(_PROVIDER_ID), index=True)


class Inventory(_Timestamps, Base):
    __tablename__ = "placement_inventories"
    __table_args__ = (
        UniqueConstraint("resource_provider_id", "resource_class",
                         name="uniq_placement_inventories0resource_provider_resource_class"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    resource_provider_id: Mapped[int] = mapped_column(ForeignKey(_PROVIDER_ID), index=True)
    resource_class: Mapped[str] = mapped_column(String(255))
    total: Mapped[int] = mapped_column(Integer)
    reserved: Mapped[int] = mapped_column(Integer)
    min_unit: Mapped[int] = mapped_column(Integer)
    max_unit: Mapped[int] = mapped_column(Integer)
    step_size: Mapped[int] = mapped_column(Integer)
    allocation_ratio: Mapped[float] = mapped_column(Float)


class Allocation(_Timestamps, Base):
    __tablename__ = "placement_allocations"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    resource_provider_id: Mapped[int] = mapped_column(ForeignKey(_PROVIDER_ID), index=True)
    consumer_id: Mapped[str] = mapped_column(String(36), index=True)   # the consumer's uuid
    resource_class: Mapped[str] = mapped_column(String(255))
    used: Mapped[int] = mapped_column(Integer)


class Consumer(_Timestamps, Base):
    __tablename__ = "placement_consumers"
    __table_args__ = (UniqueConstraint("uuid", name="uniq_placement_consumers0uuid"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    uuid: Mapped[str] = mapped_column(String(36))
    project_id: Mapped[str] = mapped_column(String(255), index=True)
    user_id: Mapped[str] = mapped_column(String(255))
    generation: Mapped[int] = mapped_column(Integer, default=0)
