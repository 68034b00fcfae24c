"""The API database's tables (``nova/db/api/models.py``): what nova-api knows before a cell does.

Since cells v2 (Ocata) nova-api writes no instance row: it records a
``BuildRequest`` (the instance to be, serialized), the ``RequestSpec`` the
scheduler will read, and an ``InstanceMapping`` whose cell is still empty. The
super conductor fills the mapping in once it has created the instance in the
cell of the chosen host (``HostMapping``), or in cell0 when no host fits.
``CellMapping`` says where each cell's database and message queue are.
``KeyPair`` is a user's public keys (``os-keypairs``): they belong to a user,
not a cell, so they live here too.

novalab keeps these tables in the same schema as the cell's (one database plays
the API database and cell1); cell0 is a database of its own (docs/decisions.md).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Enum,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from novalab.reference.common.db import Base, utcnow


class _Timestamps:
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime | None] = mapped_column(DateTime, onupdate=utcnow)


class CellMapping(_Timestamps, Base):
    __tablename__ = "cell_mappings"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    uuid: Mapped[str] = mapped_column(String(36), unique=True)
    name: Mapped[str | None] = mapped_column(String(255))
    transport_url: Mapped[str] = mapped_column(Text)
    database_connection: Mapped[str] = mapped_column(Text)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)


class HostMapping(_Timestamps, Base):
    __tablename__ = "host_mappings"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    cell_id: Mapped[int] = mapped_column(ForeignKey("cell_mappings.id"))
    host: Mapped[str] = mapped_column(String(255), unique=True)


class InstanceMapping(_Timestamps, Base):
    __tablename__ = "instance_mappings"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    instance_uuid: Mapped[str] = mapped_column(String(36), unique=True)
    cell_id: Mapped[int | None] = mapped_column(ForeignKey("cell_mappings.id"))
    project_id: Mapped[str] = mapped_column(String(255), index=True)
    user_id: Mapped[str | None] = mapped_column(String(255))
    queued_for_delete: Mapped[bool] = mapped_column(Boolean, default=False)


class RequestSpec(_Timestamps, Base):
    __tablename__ = "request_specs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    instance_uuid: Mapped[str] = mapped_column(String(36), unique=True)
    spec: Mapped[dict] = mapped_column(JSON)


class BuildRequest(_Timestamps, Base):
    __tablename__ = "build_requests"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    instance_uuid: Mapped[str] = mapped_column(String(36), unique=True)
    project_id: Mapped[str] = mapped_column(String(255), index=True)
    # The instance to be and its block device mappings, as upstream serializes them.
    instance: Mapped[dict] = mapped_column(JSON)
    block_device_mappings: Mapped[list] = mapped_column(JSON, default=list)


class KeyPair(_Timestamps, Base):
    """A user's public key, by name (``nova/db/api/models.py`` ``KeyPair``).

    No soft delete: the API database deletes rows. The API still shows
    ``deleted: false`` and ``deleted_at: null``, as upstream does."""

    __tablename__ = "key_pairs"
    __table_args__ = (UniqueConstraint("user_id", "name", name="uniq_key_pairs0user_id0name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[str] = mapped_column(String(255))
    fingerprint: Mapped[str | None] = mapped_column(String(255))
    public_key: Mapped[str | None] = mapped_column(Text)
    type: Mapped[str] = mapped_column(Enum("ssh", "x509", name="keypair_types"),
                                      server_default="ssh")
