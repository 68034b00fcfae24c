"""Glance's image registry and data path: records, properties, bytes in a store.

An image is a record (formats, size, checksums, the properties Nova's scheduler
filters on) plus, once uploaded, its bytes in a store. Statuses follow Glance:
``queued`` (no data yet) -> ``saving`` (upload under way) -> ``active``; a failed
upload goes back to ``queued``. ``direct_url`` (Glance's
``show_image_direct_url``) tells consumers where the bytes are, so a compute
host can read them from the store itself.
"""

from __future__ import annotations

import uuid

from sqlalchemy import or_, select

from novalab.reference.common import exception
from novalab.reference.common.context import RequestContext
from novalab.reference.common.db import Database
from novalab.reference.glance.models import Image, ImageLocation, ImageProperty
from novalab.reference.glance.store import HASH_ALGO
from novalab.tracing.spans import upstream

CORE_FIELDS = ("id", "name", "status", "visibility", "owner", "disk_format", "container_format",
               "size", "virtual_size", "checksum", "os_hash_algo", "os_hash_value", "min_disk",
               "min_ram", "protected")


def _iso(value) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value else None


def image_view(image: Image) -> dict:
    """Glance v2's flat image document: core fields, then properties at top level."""
    view = {field: getattr(image, field) for field in CORE_FIELDS}
    view.update(created_at=_iso(image.created_at), updated_at=_iso(image.updated_at or
                                                                   image.created_at),
                tags=[], self=f"/v2/images/{image.id}", file=f"/v2/images/{image.id}/file",
                schema="/v2/schemas/image")
    for prop in image.properties:
        view[prop.name] = prop.value
    active = [loc.value for loc in image.locations if loc.status == "active"]
    if active:
        view["direct_url"] = active[0]
    return view


# Writable at creation; everything else a client sends becomes a property.
CREATE_FIELDS = {"name", "visibility", "disk_format", "container_format", "min_disk",
                 "min_ram", "protected", "id", "tags"}
READ_ONLY = {"status", "owner", "size", "virtual_size", "checksum", "os_hash_algo",
             "os_hash_value", "created_at", "updated_at", "self", "file", "schema",
             "direct_url", "locations"}
DISK_FORMATS = {"ami", "ari", "aki", "vhd", "vhdx", "vmdk", "raw", "qcow2", "vdi", "iso",
                "ploop"}
CONTAINER_FORMATS = {"ami", "ari", "aki", "bare", "ovf", "ova", "docker", "compressed"}


class ImageRepo:
    """Images as a project sees them (``glance/db/__init__.py``'s ImageRepo)."""

    def __init__(self, db: Database, tracer, store=None):
        self.db = db
        self.tracer = tracer
        self.store = store

    def _visible(self, context: RequestContext):
        if context.is_admin:
            return True
        return or_(Image.visibility.in_(("public", "community")), Image.owner == context.project_id)

    @upstream("glance/db/__init__.py", "ImageRepo.list")
    def list(self, context: RequestContext, *, name: str | None = None,
             limit: int | None = None, marker: str | None = None) -> list[dict]:
        query = select(Image).where(self._visible(context)).order_by(Image.created_at.desc(),
                                                                    Image.id)
        if name is not None:
            query = query.where(Image.name == name)
        with self.db.session() as session:
            images = [image_view(i) for i in session.scalars(query)]
        if marker:
            ids = [i["id"] for i in images]
            if marker not in ids:
                raise exception.Invalid(f"marker {marker} could not be found.")
            images = images[ids.index(marker) + 1:]
        return images[:limit] if limit else images

    @upstream("glance/db/__init__.py", "ImageRepo.get")
    def get(self, context: RequestContext, image_id: str) -> dict:
        with self.db.session() as session:
            image = session.scalars(select(Image).where(Image.id == image_id,
                                                        self._visible(context))).first()
            if image is None:
                raise exception.ImageNotFound(image_id=image_id)
            return image_view(image)

    @upstream("glance/api/v2/images.py", "ImagesController.create")
    def create_from_request(self, context: RequestContext, body: dict) -> dict:
        """``POST /v2/images``: a ``queued`` record owned by the caller's project."""
        bad = sorted(set(body) & READ_ONLY)
        if bad:
            raise exception.Forbidden(action=f"setting the read-only attribute(s) {bad}")
        if body.get("disk_format") not in (None, *DISK_FORMATS):
            raise exception.Invalid(f"Invalid disk format '{body['disk_format']}' for image.")
        if body.get("container_format") not in (None, *CONTAINER_FORMATS):
            raise exception.Invalid(
                f"Invalid container format '{body['container_format']}' for image.")
        visibility = body.get("visibility", "shared")
        if visibility not in ("public", "private", "shared", "community"):
            raise exception.Invalid(f"Invalid visibility value: {visibility}")
        if visibility == "public" and not context.is_admin:
            raise exception.Forbidden(action="publicize_image")
        fields = {k: v for k, v in body.items() if k in CREATE_FIELDS - {"id", "tags", "name",
                                                                         "visibility"}}
        properties = {k: v for k, v in body.items() if k not in CREATE_FIELDS}
        return self.create(name=body.get("name"), owner=context.project_id,
                           visibility=visibility, properties=properties,
                           image_id=body.get("id"), status="queued", **fields)

    @upstream("glance/api/v2/image_data.py", "ImageDataController.upload")
    def upload(self, context: RequestContext, image_id: str, data: bytes) -> dict:
        """Store the bytes, record location, size and checksums, go ``active``."""
        with self.db.session() as session:
            image = self._owned(session, context, image_id)
            if image.status != "queued":
                raise exception.Conflict(f"Image status transition from {image.status} to "
                                         "saving is not allowed")
            image.status = "saving"
        try:
            stored = self.store.add(image_id, data)
        except Exception:
            with self.db.session() as session:
                session.get(Image, image_id).status = "queued"
            raise
        with self.db.session() as session:
            image = session.get(Image, image_id)
            image.size = image.virtual_size = stored.size
            image.checksum = stored.checksum
            image.os_hash_algo = HASH_ALGO
            image.os_hash_value = stored.os_hash_value
            image.locations = [ImageLocation(value=stored.location)]
            image.status = "active"
            session.flush()
            return image_view(image)

    @upstream("glance/api/v2/image_data.py", "ImageDataController.download")
    def download(self, context: RequestContext, image_id: str) -> tuple[dict, bytes | None]:
        """The image and its bytes (None while it has none)."""
        image = self.get(context, image_id)
        if image["status"] != "active" or "direct_url" not in image:
            return image, None
        return image, self.store.get(image["direct_url"])

    @upstream("glance/api/v2/images.py", "ImagesController.delete")
    def delete(self, context: RequestContext, image_id: str) -> None:
        with self.db.session() as session:
            image = self._owned(session, context, image_id)
            if image.protected:
                raise exception.Forbidden(action=f"delete protected image {image_id}")
            locations = [loc.value for loc in image.locations]
            session.delete(image)
        for location in locations:
            self.store.delete(location)

    def _owned(self, session, context: RequestContext, image_id: str) -> Image:
        image = session.scalars(select(Image).where(Image.id == image_id,
                                                    self._visible(context))).first()
        if image is None:
            raise exception.ImageNotFound(image_id=image_id)
        if not context.is_admin and image.owner != context.project_id:
            raise exception.Forbidden(action=f"modify image {image_id}")
        return image

    def create(self, *, name: str, owner: str | None = None, visibility: str = "public",
               properties: dict | None = None, image_id: str | None = None, **fields) -> dict:
        """Register an image record (the seeding and admin path)."""
        with self.db.session() as session:
            image = Image(id=image_id or str(uuid.uuid4()), name=name, owner=owner,
                          visibility=visibility, **fields)
            image.properties = [ImageProperty(name=k, value=str(v))
                                for k, v in (properties or {}).items()]
            session.add(image)
            session.flush()
            return image_view(image)

    def find_by_name(self, name: str) -> dict | None:
        with self.db.session() as session:
            image = session.scalars(select(Image).where(Image.name == name)).first()
            return image_view(image) if image else None
