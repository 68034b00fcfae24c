"""Keystone's tables: identity (users, projects, roles), the catalog and the token store.

Real Keystone has issued Fernet tokens, which are never stored, since Ocata;
novalab keeps the older UUID-token design on purpose because the classic flow's
step 2 is "Keystone -> Token Store: save token". The store keeps a SHA-256 of
each token, never the token itself, so a database dump grants nothing.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, DateTime, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from novalab.reference.common.db import Base, utcnow


class Project(Base):
    __tablename__ = "keystone_projects"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(64))
    domain_id: Mapped[str] = mapped_column(String(64), default="default")
    description: Mapped[str] = mapped_column(String(255), default="")
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)


class User(Base):
    __tablename__ = "keystone_users"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(255))
    domain_id: Mapped[str] = mapped_column(String(64), default="default")
    password_hash: Mapped[str] = mapped_column(String(255))
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    default_project_id: Mapped[str | None] = mapped_column(String(64))
    # Keystone's free-form attributes that novalab keeps: description and email.
    extra: Mapped[dict | None] = mapped_column(JSON, default=dict)


class Role(Base):
    __tablename__ = "keystone_roles"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)


class Assignment(Base):
    """A role a user holds on a project."""

    __tablename__ = "keystone_assignments"

    user_id: Mapped[str] = mapped_column(ForeignKey("keystone_users.id"), primary_key=True)
    project_id: Mapped[str] = mapped_column(ForeignKey("keystone_projects.id"), primary_key=True)
    role_id: Mapped[str] = mapped_column(ForeignKey("keystone_roles.id"), primary_key=True)


class Region(Base):
    """A region of the catalog (``keystone/catalog/backends/sql.py`` Region); DevStack's
    ``keystone-manage bootstrap --bootstrap-region-id RegionOne`` makes the first."""

    __tablename__ = "keystone_regions"

    id: Mapped[str] = mapped_column(String(255), primary_key=True)
    description: Mapped[str] = mapped_column(String(255), default="")
    parent_region_id: Mapped[str | None] = mapped_column(String(255))


class CatalogEndpoint(Base):
    """One service endpoint of the catalog (Keystone's service + endpoint tables, folded)."""

    __tablename__ = "keystone_endpoints"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    service_id: Mapped[str] = mapped_column(String(64))
    service_type: Mapped[str] = mapped_column(String(255))
    service_name: Mapped[str] = mapped_column(String(255))
    interface: Mapped[str] = mapped_column(String(8), default="public")
    region: Mapped[str] = mapped_column(String(255), default="RegionOne")
    url: Mapped[str] = mapped_column(String(255))


class Token(Base):
    """The token store (step 2 of the classic flow)."""

    __tablename__ = "keystone_tokens"

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(64))
    project_id: Mapped[str | None] = mapped_column(String(64))
    methods: Mapped[list] = mapped_column(JSON, default=list)
    audit_id: Mapped[str] = mapped_column(String(32))
    issued_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime)
    valid: Mapped[bool] = mapped_column(Boolean, default=True)
