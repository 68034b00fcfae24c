"""Nova's Cinder client (``nova/volume/cinder.py``): volumes and attachments over REST.

nova-compute uses it to create a boot volume, wait for it, and attach it:
``attachment_create`` (reserve), ``attachment_update`` with the host's connector
(answers ``connection_info``), ``attachment_complete`` once the guest has the
disk, ``attachment_delete`` to detach. Each call carries the user's token from
the request context and goes to the endpoint given at construction (upstream
finds ``volumev3`` in the catalog, or uses ``[cinder] endpoint_template``).

Attachment calls ask for microversion 3.44, as upstream: 3.27 brought the
attachments API, 3.44 ``os-complete``; ``attachment_create`` first reads the
server's version document and raises ``CinderAPIVersionNotAvailable`` when the
server is older. Cinder's answers come back in Nova's shapes: a volume as the
"untranslated summary view" (``display_name``, ``attach_status``, ``bootable``
as a bool...), an attachment with ``connection_info`` nested again as
``{"driver_volume_type": ..., "data": {...}}``, the shape the libvirt volume
drivers read. HTTP failures become Nova's exceptions below (upstream keeps
those in ``nova/exception.py``; novalab keeps them with the client).
"""

from __future__ import annotations

import copy
import logging
import time

import httpx

from novalab.reference.common import exception
from novalab.reference.common.context import RequestContext
from novalab.reference.common.wsgi import REQUEST_ID_HEADER
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)

PATH = "nova/volume/cinder.py"
ATTACH_MICROVERSION = "3.44"


# Nova's exceptions for Cinder failures --------------------------------------------------

class VolumeNotFound(exception.NotFound):
    msg_fmt = "Volume %(volume_id)s could not be found."


class VolumeAttachmentNotFound(exception.NotFound):
    msg_fmt = "Volume attachment %(attachment_id)s could not be found."


class VolumeNotCreated(exception.NovaLabException):
    msg_fmt = ("Volume %(volume_id)s did not finish being created even after we waited "
               "%(seconds)s seconds or %(attempts)s attempts. And its status is "
               "%(volume_status)s.")


class CinderConnectionFailed(exception.NovaLabException):
    msg_fmt = "Connection to cinder host failed: %(reason)s"


class CinderAPIVersionNotAvailable(exception.NovaLabException):
    msg_fmt = "Version %(version)s of Cinder API is not available."


class InvalidInput(exception.Invalid):
    msg_fmt = "Invalid input received: %(reason)s"


class CinderClientException(exception.NovaLabException):
    """An error answer Nova has no better name for (cinderclient's ``ClientException``)."""

    msg_fmt = "Cinder answered %(status)s: %(reason)s"

    def __init__(self, message: str | None = None, **kwargs):
        super().__init__(message, **kwargs)
        self.code = kwargs.get("status", 500)


# Shapes -----------------------------------------------------------------------------------

def _untranslate_volume_summary_view(vol: dict) -> dict:
    """Cinder's volume as Nova's code reads it (upstream's function of the same name)."""
    d = {"id": vol["id"], "status": vol["status"], "size": vol["size"],
         "availability_zone": vol.get("availability_zone"), "created_at": vol.get("created_at"),
         "attach_time": "", "mountpoint": "", "multiattach": vol.get("multiattach", False)}
    if vol.get("attachments"):
        d["attachments"] = {a["server_id"]: {"attachment_id": a.get("attachment_id"),
                                             "mountpoint": a.get("device")}
                            for a in vol["attachments"]}
        d["attach_status"] = "attached"
    else:
        d["attach_status"] = "detached"
    d["display_name"] = vol.get("name")
    d["display_description"] = vol.get("description")
    d["volume_type_id"] = vol.get("volume_type")
    d["snapshot_id"] = vol.get("snapshot_id")
    d["bootable"] = str(vol.get("bootable")).lower() in ("true", "1", "yes")
    d["volume_metadata"] = dict(vol.get("metadata") or {})
    if "volume_image_metadata" in vol:
        d["volume_image_metadata"] = copy.deepcopy(vol["volume_image_metadata"])
    return d


def _translate_attachment_ref(attachment: dict) -> dict:
    """Nest the flat ``connection_info`` under ``data`` again, with the attachment's facts
    beside it (upstream's function of the same name)."""
    attachment = dict(attachment)
    flat = attachment.pop("connection_info", None)
    translated: dict = {}
    if flat:
        flat = dict(flat)
        flat.pop("attachment_id", None)
        translated["driver_volume_type"] = flat.pop("driver_volume_type", None)
        translated["data"] = flat
        for key in ("status", "instance", "attached_at", "detached_at"):
            translated[key] = attachment.pop(key, None)
        for key, value in attachment.items():
            if key not in ("id", "attach_mode"):
                translated[key] = value
    attachment["connection_info"] = translated
    return attachment


def _with_mountpoint(connector: dict | None, mountpoint: str | None) -> dict | None:
    """Cinder takes the mountpoint inside the connector (upstream works around it the same)."""
    if connector and mountpoint and "mountpoint" not in connector:
        connector = dict(connector, mountpoint=mountpoint)
    return connector


# The client -------------------------------------------------------------------------------

class API:
    """The volume API of one nova service, bound to its traced HTTP client."""

    def __init__(self, endpoint: str, http: httpx.Client, tracer):
        self.endpoint = endpoint.rstrip("/")
        self.http = http
        self.tracer = tracer

    def _url(self, context: RequestContext, path: str) -> str:
        return f"{self.endpoint}/v3/{context.project_id}{path}"

    def _request(self, context: RequestContext, method: str, path: str, *,
                 microversion: str = "3.0", json: dict | None = None,
                 params: dict | None = None,
                 not_found: exception.NovaLabException | None = None) -> httpx.Response:
        headers = {"X-Auth-Token": context.auth_token or "",
                   "OpenStack-API-Version": f"volume {microversion}",
                   REQUEST_ID_HEADER: context.global_id}  # cinderclient's global_request_id
        try:
            response = self.http.request(method, self._url(context, path), headers=headers,
                                         json=json, params=params)
        except httpx.HTTPError as exc:
            raise CinderConnectionFailed(reason=str(exc)) from exc
        if response.status_code < 400:
            return response
        reason = _fault_message(response)
        if response.status_code == 404 and not_found is not None:
            raise not_found
        if response.status_code == 400:
            raise InvalidInput(reason=reason)
        if response.status_code == 403:
            raise exception.Forbidden(reason)
        if response.status_code == 404:
            raise exception.NotFound(reason)
        raise CinderClientException(status=response.status_code, reason=reason)

    def _get_server_version(self) -> tuple[str, str]:
        """(min, max) of the server's v3 API, from the unversioned root document."""
        try:
            response = self.http.get(f"{self.endpoint}/")
            versions = response.json()["versions"]
        except (httpx.HTTPError, ValueError, KeyError) as exc:
            raise CinderConnectionFailed(reason=f"version discovery failed: {exc}") from exc
        for version in versions:
            if version.get("version", "").startswith("3."):
                return version["min_version"], version["version"]
        return "2.0", "2.0"

    def _check_microversion(self, microversion: str) -> str:
        _, current = self._get_server_version()
        if _as_tuple(current) < _as_tuple(microversion):
            raise CinderAPIVersionNotAvailable(version=microversion)
        return microversion

    # Volumes --------------------------------------------------------------------------------

    @upstream(PATH, "API.get")
    def get(self, context: RequestContext, volume_id: str, microversion: str = "3.0") -> dict:
        response = self._request(context, "GET", f"/volumes/{volume_id}",
                                 microversion=microversion,
                                 not_found=VolumeNotFound(volume_id=volume_id))
        return _untranslate_volume_summary_view(response.json()["volume"])

    @upstream(PATH, "API.create")
    def create(self, context: RequestContext, size: int, name: str | None,
               description: str | None, snapshot=None, image_id: str | None = None,
               volume_type: str | None = None, metadata: dict | None = None,
               availability_zone: str | None = None) -> dict:
        body = {"volume": {"size": size, "name": name, "description": description,
                           "snapshot_id": snapshot["id"] if snapshot else None,
                           "imageRef": image_id, "volume_type": volume_type,
                           "metadata": metadata or {},
                           "availability_zone": availability_zone}}
        response = self._request(context, "POST", "/volumes", json=body)
        return _untranslate_volume_summary_view(response.json()["volume"])

    @upstream(PATH, "API.get_all")
    def get_all(self, context: RequestContext, search_opts: dict | None = None) -> list[dict]:
        """The project's volumes matching ``search_opts`` (e.g. ``{"name": ...}``)."""
        response = self._request(context, "GET", "/volumes/detail", params=search_opts)
        return [_untranslate_volume_summary_view(v) for v in response.json()["volumes"]]

    @upstream(PATH, "API.delete")
    def delete(self, context: RequestContext, volume_id: str) -> None:
        self._request(context, "DELETE", f"/volumes/{volume_id}",
                      not_found=VolumeNotFound(volume_id=volume_id))

    @upstream(PATH, "API.begin_detaching")
    def begin_detaching(self, context: RequestContext, volume_id: str) -> None:
        """Mark the volume ``detaching`` (``os-begin_detaching``): nothing else may take it."""
        self._request(context, "POST", f"/volumes/{volume_id}/action",
                      json={"os-begin_detaching": {}},
                      not_found=VolumeNotFound(volume_id=volume_id))

    @upstream(PATH, "API.roll_detaching")
    def roll_detaching(self, context: RequestContext, volume_id: str) -> None:
        """A detach that failed: ``in-use`` again (``os-roll_detaching``)."""
        self._request(context, "POST", f"/volumes/{volume_id}/action",
                      json={"os-roll_detaching": {}},
                      not_found=VolumeNotFound(volume_id=volume_id))

    # Attachments ----------------------------------------------------------------------------

    @upstream(PATH, "API.attachment_create")
    def attachment_create(self, context: RequestContext, volume_id: str, instance_id: str,
                          connector: dict | None = None, mountpoint: str | None = None) -> dict:
        """Reserve the volume for the instance; with a connector, connect it too."""
        version = self._check_microversion(ATTACH_MICROVERSION)
        body = {"attachment": {"volume_uuid": volume_id, "instance_uuid": instance_id,
                               "connector": _with_mountpoint(connector, mountpoint)}}
        response = self._request(context, "POST", "/attachments", microversion=version,
                                 json=body, not_found=VolumeNotFound(volume_id=volume_id))
        return _translate_attachment_ref(response.json()["attachment"])

    @upstream(PATH, "API.attachment_get")
    def attachment_get(self, context: RequestContext, attachment_id: str) -> dict:
        response = self._request(
            context, "GET", f"/attachments/{attachment_id}", microversion=ATTACH_MICROVERSION,
            not_found=VolumeAttachmentNotFound(attachment_id=attachment_id))
        return _translate_attachment_ref(response.json()["attachment"])

    @upstream(PATH, "API.attachment_get_all")
    def attachment_get_all(self, context: RequestContext, instance_id: str | None = None,
                           volume_id: str | None = None) -> list[dict]:
        """The attachments Cinder has for an instance (or a volume)."""
        params = {key: value for key, value in (("instance_id", instance_id),
                                                ("volume_id", volume_id)) if value}
        response = self._request(context, "GET", "/attachments", params=params,
                                 microversion=ATTACH_MICROVERSION)
        return response.json()["attachments"]

    @upstream(PATH, "API.attachment_update")
    def attachment_update(self, context: RequestContext, attachment_id: str, connector: dict,
                          mountpoint: str | None = None) -> dict:
        """Give Cinder the host's connector; answers the attachment with connection_info."""
        body = {"attachment": {"connector": _with_mountpoint(connector, mountpoint)}}
        response = self._request(
            context, "PUT", f"/attachments/{attachment_id}", microversion=ATTACH_MICROVERSION,
            json=body, not_found=VolumeAttachmentNotFound(attachment_id=attachment_id))
        return _translate_attachment_ref(response.json()["attachment"])

    @upstream(PATH, "API.attachment_complete")
    def attachment_complete(self, context: RequestContext, attachment_id: str) -> None:
        self._request(context, "POST", f"/attachments/{attachment_id}/action",
                      microversion=ATTACH_MICROVERSION, json={"os-complete": None},
                      not_found=VolumeAttachmentNotFound(attachment_id=attachment_id))

    @upstream(PATH, "API.attachment_delete")
    def attachment_delete(self, context: RequestContext, attachment_id: str) -> None:
        """Detach; an attachment already gone is not an error (upstream logs and goes on)."""
        try:
            self._request(context, "DELETE", f"/attachments/{attachment_id}",
                          microversion=ATTACH_MICROVERSION,
                          not_found=VolumeAttachmentNotFound(attachment_id=attachment_id))
        except VolumeAttachmentNotFound:
            LOG.warning("Attachment %s does not exist. Ignoring.", attachment_id)


def await_volume_created(volume_api: API, context: RequestContext, volume_id: str, *,
                         retries: int = 60, interval: float = 0.05,
                         max_interval: float = 1.0) -> int:
    """Poll until the volume is ``available``; return the attempts it took.

    ``ComputeManager._await_block_device_map_created``'s semantics: ``retries + 1``
    attempts (one if ``retries`` is 0); ``creating`` and ``downloading`` mean
    wait; any other status than ``available`` ends the wait at once; either way
    failure is ``VolumeNotCreated``. Upstream sleeps a fixed
    ``block_device_allocate_retries_interval`` (3 s); here the pause starts at
    ``interval`` and doubles up to ``max_interval``, so a volume made in
    milliseconds is not waited on for seconds.
    """
    start = time.monotonic()
    attempts = retries + 1 if retries >= 1 else 1
    pause = interval
    status = None
    attempt = 0
    for attempt in range(1, attempts + 1):
        status = volume_api.get(context, volume_id)["status"]
        if status not in ("creating", "downloading"):
            if status == "available":
                return attempt
            LOG.warning("Volume id: %s finished being created but its status is %s.",
                        volume_id, status)
            break
        if attempt < attempts:
            time.sleep(pause)
            pause = min(pause * 2, max_interval)
    raise VolumeNotCreated(volume_id=volume_id, seconds=int(time.monotonic() - start),
                           attempts=attempt, volume_status=status)


def _fault_message(response: httpx.Response) -> str:
    """The message of an OpenStack fault body (``{"itemNotFound": {"message": ...}}``)."""
    try:
        body = response.json()
        (fault,) = body.values()
        return str(fault.get("message", response.text[:200]))
    except (ValueError, AttributeError, TypeError):
        return response.text[:200]


def _as_tuple(version: str) -> tuple[int, int]:
    major, _, minor = version.partition(".")
    return int(major), int(minor or 0)
