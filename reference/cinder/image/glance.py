"""Cinder's Glance client (``cinder/image/glance.py``): image records and image bytes.

cinder-api reads the record to validate ``imageRef`` (active, fits the volume);
cinder-volume downloads the bytes to write them into the new volume. Both use
the user's token from the request context and their own traced HTTP client.

Like glanceclient's ``images.data(do_checksum=True)``, a download is checked
against the ``Content-MD5`` glance sends, and against the record's
``os_hash_value`` when it has one: a corrupt transfer never reaches a volume.
"""

from __future__ import annotations

import hashlib

import httpx

from novalab.reference.cinder import exception
from novalab.reference.common.context import RequestContext
from novalab.tracing.spans import upstream


class GlanceImageService:
    def __init__(self, endpoint: str, http: httpx.Client, tracer):
        self.endpoint = endpoint.rstrip("/")
        self.http = http
        self.tracer = tracer

    def _get(self, context: RequestContext, path: str) -> httpx.Response:
        try:
            return self.http.get(f"{self.endpoint}{path}",
                                 headers={"X-Auth-Token": context.auth_token or ""})
        except httpx.HTTPError as exc:
            raise exception.GlanceConnectionFailed(reason=str(exc)) from exc

    @upstream("cinder/image/glance.py", "GlanceImageService.show")
    def show(self, context: RequestContext, image_id: str) -> dict:
        response = self._get(context, f"/v2/images/{image_id}")
        if response.status_code == 404:
            raise exception.ImageNotFound(image_id=image_id)
        if response.status_code != 200:
            raise exception.GlanceConnectionFailed(
                reason=f"HTTP {response.status_code}: {response.text[:200]}")
        return response.json()

    @upstream("cinder/image/glance.py", "GlanceImageService.download")
    def download(self, context: RequestContext, image_id: str,
                 image_meta: dict | None = None) -> bytes:
        """The image's bytes, verified; ``ImageDownloadFailed`` otherwise."""
        response = self._get(context, f"/v2/images/{image_id}/file")
        if response.status_code == 404:
            raise exception.ImageNotFound(image_id=image_id)
        if response.status_code == 204:
            raise exception.ImageDownloadFailed(image_href=image_id,
                                                reason="image contains no data.")
        if response.status_code != 200:
            raise exception.ImageDownloadFailed(
                image_href=image_id, reason=f"HTTP {response.status_code}")
        data = response.content
        expected = response.headers.get("Content-MD5")
        if expected and hashlib.md5(data).hexdigest() != expected:
            raise exception.ImageDownloadFailed(
                image_href=image_id, reason=f"Corrupt image download. Checksum was "
                                            f"{hashlib.md5(data).hexdigest()} expected {expected}")
        meta = image_meta or {}
        algo, value = meta.get("os_hash_algo"), meta.get("os_hash_value")
        if algo and value and algo in hashlib.algorithms_available:
            if hashlib.new(algo, data).hexdigest() != value:
                raise exception.ImageDownloadFailed(
                    image_href=image_id, reason=f"Corrupt image download: {algo} mismatch")
        return data
