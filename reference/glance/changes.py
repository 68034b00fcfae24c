"""Changing an image after its creation: ``PATCH``, tags, deactivate and reactivate.

``openstack image set`` sends ``PATCH /v2/images/{id}`` with the media type
``application/openstack-images-v2.1-json-patch``: a list of JSON-patch
operations (``add``, ``replace``, ``remove``) on ``/<property>``
(``glance/api/v2/images.py``, ``RequestDeserializer.update``). Glance's rules:

- any other media type is a 415; a malformed body or operation a 400;
- a read-only attribute (``status``, ``size``, ``checksum``, ``id``, ...) or a
  reserved one (``location``, ``deleted``, ``os_glance_*``) is a 403 naming it;
- ``add`` sets a property (replacing it if present, v2.1); ``replace`` and
  ``remove`` of a property that is not there are 409; a base property may not be
  removed (403);
- ``disk_format`` and ``container_format`` change only while the image is
  ``queued`` (403 after); ``visibility: public`` needs ``publicize_image``;
- the result must still match the image schema (400), within the property
  and tag quotas (413).

Tags are ``PUT``/``DELETE /v2/images/{id}/tags/{tag}`` (idempotent add, 404 for a
missing one). ``POST .../actions/deactivate`` makes an ``active`` image's data
unreadable to non-admins (``deactivated``), ``reactivate`` undoes it; both are
admin-only by default and a no-op on an image already there.
"""

from __future__ import annotations

import json

import jsonschema
from flask import request
from sqlalchemy import select

from novalab.reference.common import exception
from novalab.reference.common.context import RequestContext
from novalab.reference.glance import policy, schemas
from novalab.reference.glance.core import CORE_FIELDS, READ_ONLY, image_view
from novalab.reference.glance.models import Image, ImageProperty, ImageTag
from novalab.tracing.spans import upstream

PATCH_MEDIA_TYPES = ("application/openstack-images-v2.1-json-patch",
                     "application/openstack-images-v2.0-json-patch")
RESERVED = {"location", "deleted", "deleted_at"}
# Attributes glance keeps in its images table: never removable, set by name.
BASE = {"name", "visibility", "protected", "os_hidden", "disk_format", "container_format",
        "min_ram", "min_disk", "tags", "owner"}
QUEUED_ONLY = {"disk_format", "container_format"}
# What an image document shows that is not a property: everything else is one, those
# the image schema names (os_distro, hw_*...) too, stored as any other property.
NOT_PROPERTIES = set(CORE_FIELDS) | READ_ONLY | {"tags"}
IMAGES = "glance/api/v2/images.py"


class ImageTagLimitExceeded(exception.NovaLabException):
    msg_fmt = "Maximum number of tags exceeded (image_tag_quota is %(limit)d)."
    code = 413


class ImagePropertyLimitExceeded(exception.NovaLabException):
    msg_fmt = "Maximum number of properties exceeded (image_property_quota is %(limit)d)."
    code = 413


class UnsupportedMediaType(exception.NovaLabException):
    code = 415


def patch_body() -> list:
    """The PATCH body as a list, after the media type check (415) and JSON parsing (400):
    the loader :func:`validation.schema` validates against ``schemas.IMAGE_PATCH``."""
    media = request.headers.get("Content-Type", "").split(";")[0].strip()
    if media not in PATCH_MEDIA_TYPES:
        raise UnsupportedMediaType(
            f"Unsupported Content-Type {media!r}: use {PATCH_MEDIA_TYPES[0]}")
    try:
        body = json.loads(request.get_data())
    except (ValueError, RecursionError) as exc:  # RecursionError: nesting past any sense
        raise exception.Invalid(f"Malformed request body: {exc.__class__.__name__}") from exc
    if not isinstance(body, list):
        raise exception.Invalid("A JSON patch body is a list of operations.")
    return body


def parse_patch(body: list) -> list[tuple[str, str, object]]:
    """``(op, property, value)`` of each (schema-checked) operation, or glance's 403/400."""
    changes = []
    for item in body:
        path = item["path"]
        name = path[1:].replace("~1", "/").replace("~0", "~")
        if name in READ_ONLY or name == "id":
            raise exception.Forbidden(f"Attribute '{name}' is read-only.")
        if name in RESERVED or name.startswith("os_glance"):
            raise exception.Forbidden(f"Attribute '{name}' is reserved.")
        if item["op"] in ("add", "replace") and "value" not in item:
            raise exception.Invalid(f"Operation {item['op']} on {path} needs a 'value'.")
        changes.append((item["op"], name, item.get("value")))
    return changes


class ImageChanges:
    """``PATCH``, tags and (de)activation over the image repository's tables."""

    def __init__(self, repo):
        self.repo = repo
        self.db = repo.db
        self.tracer = repo.tracer

    @upstream(IMAGES, "ImagesController.update")
    def update(self, context: RequestContext, image_id: str,
               changes: list[tuple[str, str, object]]) -> dict:
        with self.db.session() as session:
            image = self.repo._owned(session, context, image_id, "modify_image")
            view = image_view(image)
            for op, name, value in changes:
                present = name in view
                if op == "remove":
                    if name in BASE:
                        raise exception.Forbidden(f"Property {name} may not be removed.")
                    if not present:
                        raise exception.Conflict(f"Property {name} does not exist.")
                    del view[name]
                    continue
                if op == "replace" and not present:
                    raise exception.Conflict(f"Property {name} does not exist.")
                view[name] = value
            self._check(context, image, view)
            self._apply(session, image, view)
            session.flush()
            return image_view(image)

    def _check(self, context: RequestContext, image: Image, view: dict) -> None:
        if image.status != "queued":
            for name in QUEUED_ONLY:
                if view.get(name) != getattr(image, name):
                    raise exception.Forbidden(
                        f"Attribute {name} can be only replaced for a queued image.")
        if view.get("owner") != image.owner and not context.is_admin:
            # glance/api/authorization.py: only an admin gives an image away.
            raise exception.Forbidden("You are not permitted to modify 'owner' on this image.")
        if view.get("visibility") != image.visibility:
            if view.get("visibility") == "public":
                policy.authorize(context, "publicize_image", image.owner)
            if view.get("visibility") == "community":
                policy.authorize(context, "communitize_image", image.owner)
        try:
            jsonschema.validate(view, schemas.IMAGE_SCHEMA)
        except jsonschema.ValidationError as exc:
            raise exception.Invalid(f"Provided object does not match schema 'image': "
                                    f"{exc.message}") from exc
        properties = [k for k in view if k not in NOT_PROPERTIES]
        if len(properties) > schemas.MAX_PROPERTIES:
            raise ImagePropertyLimitExceeded(limit=schemas.MAX_PROPERTIES)
        if len(view.get("tags") or []) > schemas.MAX_TAGS:
            raise ImageTagLimitExceeded(limit=schemas.MAX_TAGS)

    @staticmethod
    def _apply(session, image: Image, view: dict) -> None:
        for name in BASE - {"tags"}:
            setattr(image, name, view.get(name))
        wanted = list(dict.fromkeys(view.get("tags") or []))
        if [t.value for t in image.tags] != wanted:
            image.tags = [ImageTag(value=t) for t in wanted]
        extra = {k: v for k, v in view.items() if k not in NOT_PROPERTIES}
        current = {p.name: p for p in image.properties}
        for name, prop in current.items():
            if name not in extra:
                session.delete(prop)
                image.properties.remove(prop)
            elif prop.value != extra[name]:
                prop.value = extra[name]
        image.properties.extend(ImageProperty(name=k, value=v) for k, v in extra.items()
                                if k not in current)

    @upstream("glance/api/v2/image_tags.py", "Controller.update")
    def add_tag(self, context: RequestContext, image_id: str, tag: str) -> None:
        if len(tag) > 255 or "\x00" in tag:
            raise exception.Invalid("Image tag must be at most 255 characters, with no NUL.")
        with self.db.session() as session:
            image = self.repo._owned(session, context, image_id, "modify_image")
            if tag in {t.value for t in image.tags}:
                return
            if len(image.tags) >= schemas.MAX_TAGS:
                raise ImageTagLimitExceeded(limit=schemas.MAX_TAGS)
            image.tags.append(ImageTag(value=tag))

    @upstream("glance/api/v2/image_tags.py", "Controller.delete")
    def delete_tag(self, context: RequestContext, image_id: str, tag: str) -> None:
        with self.db.session() as session:
            image = self.repo._owned(session, context, image_id, "modify_image")
            found = session.scalars(select(ImageTag).where(ImageTag.image_id == image.id,
                                                           ImageTag.value == tag)).first()
            if found is None:
                raise exception.NotFound(f"Tag {tag} not found.")
            image.tags.remove(found)

    @upstream("glance/api/v2/image_actions.py", "ImageActionsController.deactivate")
    def deactivate(self, context: RequestContext, image_id: str) -> None:
        self._move(context, image_id, "deactivate", "active", "deactivated")

    @upstream("glance/api/v2/image_actions.py", "ImageActionsController.reactivate")
    def reactivate(self, context: RequestContext, image_id: str) -> None:
        self._move(context, image_id, "reactivate", "deactivated", "active")

    def _move(self, context, image_id: str, action: str, source: str, target: str) -> None:
        with self.db.session() as session:
            image = self.repo._owned(session, context, image_id, action)
            if image.status == target:
                return
            if image.status != source:
                raise exception.Forbidden(
                    f"Not allowed to {action} image in status '{image.status}'")
            image.status = target
