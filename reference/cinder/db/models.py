"""Cinder's tables (``cinder/db/models.py``), trimmed to volumes, their attachments and
snapshots.

Names are upstream's with a ``cinder_`` prefix (every service shares one schema
here). Rows are soft-deleted as in Cinder: ``deleted`` turns true, the row stays.
Volume metadata is one JSON column rather than upstream's key/value table;
the image a volume was made from is kept as upstream keeps it, in
``volume_glance_metadata`` key/value rows.

Volume ``status``: creating -> (downloading) -> available -> reserved ->
attaching -> in-use -> available ... -> deleting; error / error_deleting when
the backend fails. ``attach_status``: detached, reserved, attaching, attached.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from novalab.reference.common.db import Base, utcnow
from novalab.reference.common.quota import QuotaLimitColumns


class CinderBase:
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime | None] = mapped_column(DateTime, onupdate=utcnow)
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime)
    deleted: Mapped[bool] = mapped_column(Boolean, default=False)


class Volume(CinderBase, Base):
    __tablename__ = "cinder_volumes"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(255))
    project_id: Mapped[str] = mapped_column(String(255), index=True)
    # "<host>@<backend>#<pool>" once a cinder-volume service owns the volume.
    host: Mapped[str | None] = mapped_column(String(255))
    size: Mapped[int] = mapped_column(Integer)                 # GiB
    availability_zone: Mapped[str] = mapped_column(String(255), default="nova")
    status: Mapped[str] = mapped_column(String(255))
    attach_status: Mapped[str] = mapped_column(String(255), default="detached")
    display_name: Mapped[str | None] = mapped_column(String(255))
    display_description: Mapped[str | None] = mapped_column(String(255))
    # Upstream: volume_type_id -> volume_types. One type exists here, its name kept.
    volume_type: Mapped[str] = mapped_column(String(255), default="__DEFAULT__")
    bootable: Mapped[bool] = mapped_column(Boolean, default=False)
    multiattach: Mapped[bool] = mapped_column(Boolean, default=False)
    provider_location: Mapped[str | None] = mapped_column(String(255))
    metadata_items: Mapped[dict] = mapped_column("metadata", JSON, default=dict)
    launched_at: Mapped[datetime | None] = mapped_column(DateTime)
    terminated_at: Mapped[datetime | None] = mapped_column(DateTime)

    @property
    def name(self) -> str:
        """The backend's name for the volume: Cinder's ``volume_name_template``."""
        return f"volume-{self.id}"


class VolumeAttachment(CinderBase, Base):
    __tablename__ = "cinder_volume_attachment"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    volume_id: Mapped[str] = mapped_column(String(36), ForeignKey("cinder_volumes.id"),
                                           index=True)
    instance_uuid: Mapped[str | None] = mapped_column(String(36))
    attached_host: Mapped[str | None] = mapped_column(String(255))
    mountpoint: Mapped[str | None] = mapped_column(String(255))
    attach_time: Mapped[datetime | None] = mapped_column(DateTime)
    detach_time: Mapped[datetime | None] = mapped_column(DateTime)
    attach_mode: Mapped[str] = mapped_column(String(36), default="null")
    attach_status: Mapped[str] = mapped_column(String(255))
    connection_info: Mapped[dict | None] = mapped_column(JSON)
    connector: Mapped[dict | None] = mapped_column(JSON)


class Snapshot(CinderBase, Base):
    """A volume's snapshot (upstream's ``snapshots``): on the RBD backend, an RBD snapshot
    ``snapshot-<id>`` of the volume's image. ``status``: creating -> available ->
    deleting (or error / error_deleting); ``progress`` a percentage string."""

    __tablename__ = "cinder_snapshots"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    volume_id: Mapped[str] = mapped_column(String(36), ForeignKey("cinder_volumes.id"),
                                           index=True)
    user_id: Mapped[str] = mapped_column(String(255))
    project_id: Mapped[str] = mapped_column(String(255), index=True)
    status: Mapped[str] = mapped_column(String(255))
    progress: Mapped[str | None] = mapped_column(String(255))
    volume_size: Mapped[int] = mapped_column(Integer)          # GiB, the volume's at create
    display_name: Mapped[str | None] = mapped_column(String(255))
    display_description: Mapped[str | None] = mapped_column(String(255))
    metadata_items: Mapped[dict] = mapped_column("metadata", JSON, default=dict)

    @property
    def name(self) -> str:
        """The backend's name for the snapshot: Cinder's ``snapshot_name_template``."""
        return f"snapshot-{self.id}"


class VolumeGlanceMetadata(CinderBase, Base):
    __tablename__ = "cinder_volume_glance_metadata"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    volume_id: Mapped[str] = mapped_column(String(36), ForeignKey("cinder_volumes.id"),
                                           index=True)
    key: Mapped[str] = mapped_column(String(255))
    value: Mapped[str | None] = mapped_column(Text)


class Message(Base):
    """User-visible messages (``GET /v3/{project_id}/messages``): why an operation failed.

    Like upstream, a message names the action and a fixed detail (``message_field``),
    never the exception's text, which may hold what users must not see.
    """

    __tablename__ = "cinder_messages"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    project_id: Mapped[str] = mapped_column(String(255), index=True)
    request_id: Mapped[str | None] = mapped_column(String(255))
    resource_type: Mapped[str | None] = mapped_column(String(36))
    resource_uuid: Mapped[str | None] = mapped_column(String(255))
    action_id: Mapped[str] = mapped_column(String(10))
    detail_id: Mapped[str] = mapped_column(String(10))
    event_id: Mapped[str] = mapped_column(String(255))
    message_level: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column(DateTime)
    deleted: Mapped[bool] = mapped_column(Boolean, default=False)


class Quota(QuotaLimitColumns, Base):
    """A project's own limit for one resource (``volumes``, ``gigabytes``)."""

    __tablename__ = "cinder_quotas"
    __table_args__ = (UniqueConstraint("project_id", "resource",
                                       name="uniq_cinder_quotas0project_id0resource"),)
