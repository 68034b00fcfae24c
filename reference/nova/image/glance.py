"""Nova's view of Glance (``nova/image/glance.py``): fetch image records over REST.

Both nova-api (to validate ``imageRef`` and read the properties the scheduler
filters on) and nova-compute (steps 19-20: "get image URI by image ID") use it,
each with its own traced HTTP client and the user's token from the context.
"""

from __future__ import annotations

import httpx

from novalab.reference.common import exception
from novalab.reference.common.context import RequestContext
from novalab.reference.common.wsgi import REQUEST_ID_HEADER
from novalab.tracing.spans import upstream

# Glance's top-level fields; everything else in an image document is a property.
_CORE = {"id", "name", "status", "visibility", "owner", "disk_format", "container_format",
         "size", "virtual_size", "checksum", "os_hash_algo", "os_hash_value", "min_disk",
         "min_ram", "protected", "created_at", "updated_at", "tags", "self", "file", "schema",
         "direct_url", "locations"}


def image_meta(image: dict) -> dict:
    """Glance's flat document reshaped as Nova's image meta: core fields + ``properties``."""
    meta = {k: v for k, v in image.items() if k in _CORE}
    meta["properties"] = {k: v for k, v in image.items() if k not in _CORE}
    return meta


def _headers(context: RequestContext) -> dict:
    """The user's token, and the request id to carry on (glanceclient's global_request_id)."""
    return {"X-Auth-Token": context.auth_token or "", REQUEST_ID_HEADER: context.global_id}


class GlanceImageServiceV2:
    """A glance v2 client bound to one service's HTTP client."""

    def __init__(self, endpoint: str, http: httpx.Client, tracer):
        self.endpoint = endpoint.rstrip("/")
        self.http = http
        self.tracer = tracer

    @upstream("nova/image/glance.py", "GlanceImageServiceV2.show")
    def show(self, context: RequestContext, image_id: str) -> dict:
        try:
            response = self.http.get(f"{self.endpoint}/v2/images/{image_id}",
                                     headers=_headers(context))
        except httpx.HTTPError as exc:
            raise exception.GlanceConnectionFailed(server=self.endpoint, reason=str(exc)) from exc
        if response.status_code == 404:
            raise exception.ImageNotFound(image_id=image_id)
        if response.status_code != 200:
            raise exception.GlanceConnectionFailed(
                server=self.endpoint, reason=f"HTTP {response.status_code}: {response.text[:200]}")
        return image_meta(response.json())

    @upstream("nova/image/glance.py", "GlanceImageServiceV2.download")
    def download(self, context: RequestContext, image_id: str) -> bytes:
        """The image's bytes through Glance's API (``GET /v2/images/{id}/file``)."""
        response = self.http.get(f"{self.endpoint}/v2/images/{image_id}/file",
                                 headers=_headers(context))
        if response.status_code == 404:
            raise exception.ImageNotFound(image_id=image_id)
        if response.status_code == 204:
            raise exception.ImageUnacceptable(image_id=image_id, reason="image has no data")
        if response.status_code != 200:
            raise exception.GlanceConnectionFailed(
                server=self.endpoint, reason=f"HTTP {response.status_code}")
        return response.content
