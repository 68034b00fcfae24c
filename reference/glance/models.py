"""Glance's image registry tables (``glance/db/sqlalchemy/models.py``, trimmed).

Properties such as ``hw_architecture`` are rows of ``image_properties``; they are
what Nova's ImagePropertiesFilter matches against a host's capabilities.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from novalab.reference.common.db import Base, utcnow


class Image(Base):
    __tablename__ = "glance_images"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    name: Mapped[str | None] = mapped_column(String(255), index=True)
    status: Mapped[str] = mapped_column(String(30), default="queued")
    visibility: Mapped[str] = mapped_column(String(9), default="shared")
    owner: Mapped[str | None] = mapped_column(String(255))
    disk_format: Mapped[str | None] = mapped_column(String(20))
    container_format: Mapped[str | None] = mapped_column(String(20))
    size: Mapped[int | None] = mapped_column(BigInteger)
    virtual_size: Mapped[int | None] = mapped_column(BigInteger)
    checksum: Mapped[str | None] = mapped_column(String(32))
    os_hash_algo: Mapped[str | None] = mapped_column(String(64))
    os_hash_value: Mapped[str | None] = mapped_column(String(128))
    min_disk: Mapped[int] = mapped_column(Integer, default=0)
    min_ram: Mapped[int] = mapped_column(Integer, default=0)
    protected: Mapped[bool] = mapped_column(Boolean, default=False)
    os_hidden: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime | None] = mapped_column(DateTime, onupdate=utcnow)
    properties: Mapped[list[ImageProperty]] = relationship(
        back_populates="image", cascade="all, delete-orphan", lazy="selectin")
    locations: Mapped[list[ImageLocation]] = relationship(
        back_populates="image", cascade="all, delete-orphan", lazy="selectin")
    tags: Mapped[list[ImageTag]] = relationship(
        back_populates="image", cascade="all, delete-orphan", lazy="selectin",
        order_by="ImageTag.id")


class ImageProperty(Base):
    __tablename__ = "glance_image_properties"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    image_id: Mapped[str] = mapped_column(ForeignKey("glance_images.id"), index=True)
    name: Mapped[str] = mapped_column(String(255))
    value: Mapped[str] = mapped_column(Text)
    image: Mapped[Image] = relationship(back_populates="properties")


class ImageLocation(Base):
    """Where an image's bytes live in a store (a ``file://`` path, an ``rgw://`` object)."""

    __tablename__ = "glance_image_locations"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    image_id: Mapped[str] = mapped_column(ForeignKey("glance_images.id"), index=True)
    value: Mapped[str] = mapped_column(Text)
    meta_data: Mapped[dict] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(String(30), default="active")
    image: Mapped[Image] = relationship(back_populates="locations")


class ImageTag(Base):
    """A tag on an image (``image_tags``): ``PUT /v2/images/{id}/tags/{tag}``."""

    __tablename__ = "glance_image_tags"
    __table_args__ = (UniqueConstraint("image_id", "value"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    image_id: Mapped[str] = mapped_column(ForeignKey("glance_images.id"), index=True)
    value: Mapped[str] = mapped_column(String(255))
    image: Mapped[Image] = relationship(back_populates="tags")
