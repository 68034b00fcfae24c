"""Nova's view of Glance (``nova/image/glance.py``): image records and data over REST.

Both nova-api (to validate ``imageRef`` and read the properties the scheduler
filters on) and nova-compute (steps 19-20: "get image URI by image ID") use it,
each with its own traced HTTP client and the user's token from the context.
Snapshots write through it too: nova-api ``create``s the image record (queued,
no data), nova-compute uploads the guest's disk into it (``_upload_data``), and
an unshelved server's snapshot is ``delete``d again.

Glance's errors become Nova's (``_translate_image_exception``): 404
``ImageNotFound``, 403 ``ImageNotAuthorized``, 400 ``Invalid``, 413 (a Glance
quota) ``OverQuota`` (Nova's 403), 409 a conflict; anything else
``GlanceConnectionFailed``.
"""

from __future__ import annotations

import httpx

from novalab.reference.common import exception
from novalab.reference.common.context import RequestContext
from novalab.reference.common.quota import OverQuota
from novalab.reference.common.wsgi import REQUEST_ID_HEADER
from novalab.tracing.spans import upstream

# Glance's top-level fields; everything else in an image document is a property.
_CORE = {"id", "name", "status", "visibility", "owner", "disk_format", "container_format",
         "size", "virtual_size", "checksum", "os_hash_algo", "os_hash_value", "min_disk",
         "min_ram", "protected", "created_at", "updated_at", "tags", "self", "file", "schema",
         "direct_url", "locations", "os_hidden"}


def image_meta(image: dict) -> dict:
    """Glance's flat document reshaped as Nova's image meta: core fields + ``properties``."""
    meta = {k: v for k, v in image.items() if k in _CORE}
    meta["properties"] = {k: v for k, v in image.items() if k not in _CORE}
    return meta


class ImageNotAuthorized(exception.Forbidden):
    msg_fmt = "Not authorized for image %(image_id)s."


def _headers(context: RequestContext) -> dict:
    """The user's token, and the request id to carry on (glanceclient's global_request_id)."""
    return {"X-Auth-Token": context.auth_token or "", REQUEST_ID_HEADER: context.global_id}


class GlanceImageServiceV2:
    """A glance v2 client bound to one service's HTTP client."""

    def __init__(self, endpoint: str, http: httpx.Client, tracer):
        self.endpoint = endpoint.rstrip("/")
        self.http = http
        self.tracer = tracer

    def _request(self, context: RequestContext, method: str, path: str,
                 image_id: str, **kwargs) -> httpx.Response:
        headers = {**_headers(context), **kwargs.pop("headers", {})}
        try:
            response = self.http.request(method, f"{self.endpoint}/v2/images{path}",
                                         headers=headers, **kwargs)
        except httpx.HTTPError as exc:
            raise exception.GlanceConnectionFailed(server=self.endpoint,
                                                   reason=str(exc)) from exc
        if response.status_code >= 400:
            raise _translate_image_exception(image_id, response)
        return response

    def generate_image_url(self, image_id: str) -> str:
        """Where the image is, for a ``Location`` header (``API.generate_image_url``)."""
        return f"{self.endpoint}/images/{image_id}"

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

    @upstream("nova/image/glance.py", "GlanceImageServiceV2.create")
    def create(self, context: RequestContext, meta: dict) -> dict:
        """Register an image (``POST /v2/images``); no data yet, so it is ``queued``.

        ``meta`` is Nova's shape (core fields + ``properties``); Glance v2 takes
        the properties as top-level strings (``_translate_to_glance``).
        """
        body = {k: v for k, v in meta.items() if k != "properties" and v is not None}
        body.update({k: str(v) for k, v in (meta.get("properties") or {}).items()})
        response = self._request(context, "POST", "", "", json=body)
        return image_meta(response.json())

    @upstream("nova/image/glance.py", "GlanceImageServiceV2._upload_data")
    def upload_data(self, context: RequestContext, image_id: str, data) -> dict:
        """Send the bytes (``PUT .../file``, streamed from a file object); Glance
        stores them, records size and checksums and makes the image ``active``."""
        self._request(context, "PUT", f"/{image_id}/file", image_id, content=data,
                      headers={"Content-Type": "application/octet-stream"})
        return self.show(context, image_id)

    @upstream("nova/image/glance.py", "GlanceImageServiceV2.delete")
    def delete(self, context: RequestContext, image_id: str) -> None:
        self._request(context, "DELETE", f"/{image_id}", image_id)


def _translate_image_exception(image_id: str, response: httpx.Response) -> Exception:
    """Glance's answer as the Nova exception it means (upstream's function of this name)."""
    status = response.status_code
    try:
        (fault,) = response.json().values()
        reason = str(fault.get("message", ""))
    except (ValueError, AttributeError, TypeError):
        reason = response.text[:200]
    if status == 404:
        return exception.ImageNotFound(image_id=image_id)
    if status == 403:
        return ImageNotAuthorized(image_id=image_id)
    if status == 400:
        return exception.Invalid(f"Glance refused the image: {reason}")
    if status == 413:
        return OverQuota(f"Glance refused the image: {reason}")
    if status == 409:
        return exception.Conflict(reason)
    return exception.GlanceConnectionFailed(server="glance", reason=f"HTTP {status}: {reason}")
