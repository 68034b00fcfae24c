"""Glance's image registry and data path: records, properties, bytes in a store.

An image is a record (formats, size, checksums, the properties Nova's scheduler
filters on) plus, once uploaded, its bytes in a store. Statuses follow Glance:
``queued`` (no data yet) -> ``saving`` (upload under way) -> ``active``; a failed
upload goes back to ``queued``. ``direct_url`` (Glance's
``show_image_direct_url``) tells consumers where the bytes are, so a compute
host can read them from the store itself.

Every change passes glance's policy (:mod:`.policy`) against the image's
owner, and the project's image limits (:mod:`.quota`) before any work. An image
id is a UUID, server-made or chosen by the client and validated; the stores
name objects only after the parsed UUID.
"""

from __future__ import annotations

import uuid

from sqlalchemy import or_, select
from sqlalchemy.exc import IntegrityError

from novalab.reference.common import exception
from novalab.reference.common.context import RequestContext
from novalab.reference.common.db import Database
from novalab.reference.glance import policy, schemas
from novalab.reference.glance.models import Image, ImageLocation, ImageProperty, ImageTag
from novalab.reference.glance.quota import IMAGE_SIZE_CAP, ImageQuota, ImageSizeLimitExceeded
from novalab.reference.glance.store import HASH_ALGO, StorageFull, object_name, stage
from novalab.tracing.spans import upstream

CORE_FIELDS = ("id", "name", "status", "visibility", "owner", "disk_format", "container_format",
               "size", "virtual_size", "checksum", "os_hash_algo", "os_hash_value", "min_disk",
               "min_ram", "protected", "os_hidden")


class ImageStorageMediaFull(exception.NovaLabException):
    """What ``ImageDataController.upload`` answers for glance_store's ``StorageFull``
    (``HTTPRequestEntityTooLarge``); the image goes back to ``queued``."""

    msg_fmt = "Image storage media is full: %(reason)s"
    code = 413


def _iso(value) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value else None


def image_view(image: Image) -> dict:
    """Glance v2's flat image document: core fields, then properties at top level."""
    view = {field: getattr(image, field) for field in CORE_FIELDS}
    view["os_hidden"] = bool(image.os_hidden)  # rows from before the column read as False
    view.update(created_at=_iso(image.created_at), updated_at=_iso(image.updated_at or
                                                                   image.created_at),
                tags=[t.value for t in image.tags], self=f"/v2/images/{image.id}",
                file=f"/v2/images/{image.id}/file", schema="/v2/schemas/image")
    for prop in image.properties:
        view[prop.name] = prop.value
    active = [loc.value for loc in image.locations if loc.status == "active"]
    if active:
        view["direct_url"] = active[0]
    return view


# Writable at creation; everything else a client sends becomes a property.
CREATE_FIELDS = {"name", "visibility", "disk_format", "container_format", "min_disk",
                 "min_ram", "protected", "id", "tags", "os_hidden"}
READ_ONLY = set(schemas.READ_ONLY)
DISK_FORMATS = set(schemas.DISK_FORMATS)
CONTAINER_FORMATS = set(schemas.CONTAINER_FORMATS)
VISIBILITIES = set(schemas.VISIBILITIES)


class DuplicateImage(exception.Conflict):
    msg_fmt = "Image with identifier %(image_id)s already exists!"


def canonical_id(image_id) -> str | None:
    """``image_id`` as the canonical UUID string, or None if it is not a UUID."""
    try:
        return object_name(image_id)
    except (ValueError, AttributeError, TypeError):
        return None


class ImageRepo:
    """Images as a project sees them (``glance/db/__init__.py``'s ImageRepo)."""

    def __init__(self, db: Database, tracer, store=None, limits: dict | None = None,
                 image_size_cap: int = IMAGE_SIZE_CAP):
        self.db = db
        self.tracer = tracer
        self.store = store
        self.quota = ImageQuota(db, limits)
        self.image_size_cap = image_size_cap

    def _visible(self, context: RequestContext):
        if context.is_admin:
            return True
        public = Image.visibility.in_(("public", "community"))
        if not context.project_id:   # an unscoped token owns nothing
            return public
        return or_(public, Image.owner == context.project_id)

    @upstream("glance/db/__init__.py", "ImageRepo.list")
    def list(self, context: RequestContext, *, name: str | None = None,
             limit: int | None = None, marker: str | None = None,
             os_hidden: bool = False, tags: list[str] | None = None,
             visibility: str | None = None) -> list[dict]:
        """Visible images, newest first; hidden ones only with ``os_hidden=true`` (then
        only those), and only images carrying every one of ``tags``.

        ``visibility`` keeps only that kind (``all``: every kind). Without it, as
        Glance lists since images v2.5, another project's ``community`` image is
        left out: it is there for whoever asks for it, never in the way of a name
        (anyone may make one, so one called ``cirros`` would otherwise make every
        ``--image cirros`` ambiguous).
        """
        policy.authorize(context, "get_images", None)
        query = select(Image).where(self._visible(context)).order_by(Image.created_at.desc(),
                                                                    Image.id)
        if visibility is not None and visibility not in (*VISIBILITIES, "all"):
            raise exception.Invalid(f"Invalid visibility value: {visibility}")
        if visibility is None:
            others_community = Image.visibility == "community"
            if context.project_id:
                others_community &= Image.owner != context.project_id
            query = query.where(~others_community)
        elif visibility != "all":
            query = query.where(Image.visibility == visibility)
        if name is not None:
            query = query.where(Image.name == name)
        query = query.where(Image.os_hidden.is_(True) if os_hidden
                            else or_(Image.os_hidden.is_(False), Image.os_hidden.is_(None)))
        for tag in tags or []:
            query = query.where(Image.tags.any(ImageTag.value == tag))
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
        """The image if ``context`` may see it: an image it cannot see is a 404 before any
        policy is asked (its existence does not leak); one it sees but may not read, 403."""
        if canonical_id(image_id) is None:
            raise exception.ImageNotFound(image_id=image_id)
        with self.db.session() as session:
            image = session.scalars(select(Image).where(Image.id == image_id,
                                                        self._visible(context))).first()
            if image is None:
                raise exception.ImageNotFound(image_id=image_id)
            found = image_view(image)
        policy.authorize(context, "get_image", found["owner"])
        return found

    @upstream("glance/api/v2/images.py", "ImagesController.create")
    def create_from_request(self, context: RequestContext, body: dict) -> dict:
        """``POST /v2/images`` (body already checked against ``schemas.IMAGE_CREATE``):
        a ``queued`` record owned by the caller's project."""
        bad = sorted(set(body) & READ_ONLY)
        if bad:
            raise exception.Forbidden(action=f"setting the read-only attribute(s) {bad}")
        policy.authorize(context, "add_image", context.project_id)
        visibility = body.get("visibility", "shared")
        if visibility == "public":
            policy.authorize(context, "publicize_image", context.project_id)
        if visibility == "community":
            policy.authorize(context, "communitize_image", context.project_id)
        self.quota.check_deltas(context.project_id, {"image_count_total": 1})
        fields = {k: v for k, v in body.items()
                  if k in CREATE_FIELDS - {"id", "tags", "name", "visibility", "os_hidden"}}
        properties = {k: v for k, v in body.items() if k not in CREATE_FIELDS}
        image_id = canonical_id(body["id"]) if "id" in body else None
        if "id" in body and image_id is None:
            raise exception.Invalid(f"Invalid image id {body['id']!r}: it must be a UUID.")
        image = self.create(name=body.get("name"), owner=context.project_id,
                            visibility=visibility, properties=properties,
                            image_id=image_id, status="queued", tags=body.get("tags", []),
                            os_hidden=body.get("os_hidden", False), **fields)
        try:
            self.quota.recheck(context.project_id, {"image_count_total": 1})
        except exception.NovaLabException:
            with self.db.session() as session:
                session.delete(session.get(Image, image["id"]))
            raise
        return image

    @upstream("glance/api/v2/image_data.py", "ImageDataController.upload")
    def upload(self, context: RequestContext, image_id: str, data,
               length: int | None = None) -> dict:
        """Store the bytes, record location, size and checksums, go ``active``.

        ``data`` is bytes or an iterable of chunks (the request's stream);
        ``length`` its Content-Length if known. The upload is refused (413)
        before a byte is read if it cannot fit the project's ``image_size_total``
        or ``image_size_cap``, and cut off as it streams otherwise.
        """
        with self.db.session() as session:
            image = self._owned(session, context, image_id, "upload_image")
            image_id = image.id
            owner = image.owner
            if image.status != "queued":
                raise exception.Conflict(f"Image status transition from {image.status} to "
                                         "saving is not allowed")
        self.quota.check_deltas(owner, {"image_count_uploading": 1})
        allowance = self.quota.upload_allowance(owner, self.image_size_cap)

        def too_big(limit: int) -> Exception:
            if limit == self.image_size_cap:
                return ImageSizeLimitExceeded(
                    reason=f"Image exceeds the configured maximum image size "
                           f"(image_size_cap) of {limit} bytes.")
            return ImageSizeLimitExceeded(
                reason=f"Image exceeds the storage quota: image_size_total leaves "
                       f"{limit} bytes to project {owner}.")

        if length is not None and length > allowance:
            raise too_big(allowance)
        with self.db.session() as session:
            image = session.get(Image, image_id)
            if image.status != "queued":
                raise exception.Conflict(f"Image status transition from {image.status} to "
                                         "saving is not allowed")
            image.status = "saving"
        try:
            staged = stage(data, allowance, too_big)
            try:
                stored = self.store.add(image_id, staged)
            except StorageFull as exc:
                raise ImageStorageMediaFull(reason=exc.format_message()) from exc
            finally:
                staged.close()
        except BaseException:
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
        policy.authorize(context, "download_image", image["owner"])
        if image["status"] == "deactivated" and not context.is_admin:
            raise exception.Forbidden("The requested image has been deactivated. Image data "
                                      "download is forbidden.")
        if image["status"] not in ("active", "deactivated") or "direct_url" not in image:
            return image, None
        return image, self.store.get(image["direct_url"])

    @upstream("glance/api/v2/images.py", "ImagesController.delete")
    def delete(self, context: RequestContext, image_id: str) -> None:
        with self.db.session() as session:
            image = self._owned(session, context, image_id, "delete_image")
            if image.protected:
                raise exception.Forbidden(action=f"delete protected image {image_id}")
            locations = [loc.value for loc in image.locations]
            session.delete(image)
        for location in locations:
            self.store.delete(location)

    def _owned(self, session, context: RequestContext, image_id: str, action: str) -> Image:
        """The image, if the caller sees it (else 404) and ``action`` is allowed on it
        (else 403)."""
        image = None
        if canonical_id(image_id) is not None:
            image = session.scalars(select(Image).where(Image.id == image_id,
                                                        self._visible(context))).first()
        if image is None:
            raise exception.ImageNotFound(image_id=image_id)
        policy.authorize(context, action, image.owner)
        return image

    def create(self, *, name: str, owner: str | None = None, visibility: str = "public",
               properties: dict | None = None, image_id: str | None = None,
               tags: list[str] | None = None, **fields) -> dict:
        """Register an image record (the seeding and admin path); 409 if the id is taken."""
        if image_id is not None:
            image_id = canonical_id(image_id)
            if image_id is None:
                raise exception.Invalid("An image id must be a UUID.")
        image_id = image_id or str(uuid.uuid4())
        try:
            with self.db.session() as session:
                if session.get(Image, image_id) is not None:
                    raise DuplicateImage(image_id=image_id)
                image = Image(id=image_id, name=name, owner=owner,
                              visibility=visibility, **fields)
                image.properties = [ImageProperty(name=k, value=str(v))
                                    for k, v in (properties or {}).items()]
                image.tags = [ImageTag(value=t) for t in tags or []]
                session.add(image)
                session.flush()
                return image_view(image)
        except IntegrityError as exc:   # the same id, created at the same moment
            raise DuplicateImage(image_id=image_id) from exc

    def set_owner(self, image_id: str, owner: str) -> None:
        """Give an image to a project (seeding: images made before their owner was known)."""
        with self.db.session() as session:
            session.get(Image, image_id).owner = owner

    def find_by_name(self, name: str) -> dict | None:
        """The cloud's own image of that name: public (only admins make one), the first
        made. A project's image of the same name is never the seed, whatever it holds."""
        with self.db.session() as session:
            image = session.scalars(select(Image).where(
                Image.name == name, Image.visibility == "public").order_by(
                Image.created_at, Image.id)).first()
            return image_view(image) if image else None
