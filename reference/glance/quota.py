"""Glance's per-project image limits (``glance/quota/keystone.py``, unified limits).

Upstream, Glance reads these limits from Keystone's unified limits and counts
usage from its own tables:

- ``image_count_total``: images the project owns, in any status;
- ``image_size_total``: MiB of image data the project has stored;
- ``image_stage_total``: MiB in the staging area of interoperable import
  (novalab has no import, so this is always 0 and never the one over);
- ``image_count_uploading``: images the project is uploading at once.

Here the limits are the registered defaults below, the same for every project
(there is no unified-limits API to raise them per project). A request over a
limit is a 413, before the record is written or a byte is stored.
"""

from __future__ import annotations

import math

from sqlalchemy import func, select

from novalab.reference.common import exception
from novalab.reference.common.db import Database
from novalab.reference.common.quota import QuotaEngine
from novalab.reference.glance.models import Image

MiB = 1024 ** 2
GiB = 1024 ** 3

# Generous for a class: each lab uploads a handful of small images; benchmarks
# reuse the seeded cirros.
DEFAULT_LIMITS = {
    "image_count_total": 100,
    "image_size_total": 20 * 1024,      # MiB: 20 GiB of data per project
    "image_stage_total": 20 * 1024,     # MiB
    "image_count_uploading": 10,
}
# glance's ``image_size_cap`` (upstream default 1 TiB): no single upload is larger.
IMAGE_SIZE_CAP = 10 * GiB


class ImageQuotaExceeded(exception.NovaLabException):
    """Glance's 413 (``LimitExceeded`` from oslo.limit, rendered as an overLimit)."""

    msg_fmt = ("Quota exceeded for %(overs)s: Requested %(req)s, but already used "
               "%(used)s of %(allowed)s %(overs)s")
    code = 413


class ImageSizeLimitExceeded(exception.NovaLabException):
    msg_fmt = "%(reason)s"
    code = 413


class ImageQuota(QuotaEngine):
    """The engine with fixed, registered limits (no per-project rows)."""

    def __init__(self, db: Database, defaults: dict | None = None):
        super().__init__(db, None, {**DEFAULT_LIMITS, **(defaults or {})}, {
            "image_count_total": self._count,
            "image_size_total": lambda project: math.ceil(self.stored_bytes(project) / MiB),
            "image_stage_total": lambda project: 0,
            "image_count_uploading": self._uploading,
        }, error=ImageQuotaExceeded)

    def limits(self, project_id: str) -> dict[str, int]:
        return dict(self.defaults)

    def set_limits(self, project_id, values):
        raise exception.Forbidden(action="set image limits (they are registered limits)")

    def delete_limits(self, project_id) -> None:
        raise exception.Forbidden(action="delete image limits (they are registered limits)")

    def _scalar(self, query) -> int:
        with self.db.session() as session:
            return int(session.scalar(query) or 0)

    def _count(self, project_id: str) -> int:
        return self._scalar(select(func.count()).select_from(Image)
                            .where(Image.owner == project_id))

    def _uploading(self, project_id: str) -> int:
        return self._scalar(select(func.count()).select_from(Image)
                            .where(Image.owner == project_id, Image.status == "saving"))

    def stored_bytes(self, project_id: str) -> int:
        return self._scalar(select(func.sum(Image.size)).where(Image.owner == project_id))

    def upload_allowance(self, project_id: str | None, cap: int) -> int:
        """How many bytes ``project_id`` may upload now: the cap, or what its
        ``image_size_total`` leaves, whichever is smaller (413 if nothing is left)."""
        if project_id is None:
            return cap
        limit = self.limits(project_id)["image_size_total"]
        if limit == -1:
            return cap
        room = limit * MiB - self.stored_bytes(project_id)
        if room <= 0:
            raise ImageQuotaExceeded(overs="image_size_total", req=1,
                                     used=self.usages(project_id, ["image_size_total"])
                                     ["image_size_total"], allowed=limit)
        return min(cap, room)
