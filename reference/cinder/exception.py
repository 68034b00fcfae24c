"""Cinder's exceptions (``cinder/exception.py``), on novalab's shared tree.

Each subclasses the common class with the same HTTP meaning (``NotFound`` is 404,
``Invalid`` 400, ``Conflict`` 409), so the API's fault handler renders them as
Cinder does. They stay in this package: RPC rebuilds only the common classes on
the caller's side, so a failure raised in cinder-volume reaches cinder-api as
``RemoteError``, which the API turns into the 500 upstream answers too.
"""

from __future__ import annotations

from novalab.reference.common import exception


class VolumeNotFound(exception.NotFound):
    msg_fmt = "Volume %(volume_id)s could not be found."


class VolumeAttachmentNotFound(exception.NotFound):
    msg_fmt = "Volume attachment could not be found with filter: %(filter)s."


class VolumeTypeNotFoundByName(exception.NotFound):
    msg_fmt = "Volume type with name %(volume_type_name)s could not be found."


class SnapshotNotFound(exception.NotFound):
    msg_fmt = "Snapshot %(snapshot_id)s could not be found."


class InvalidSnapshot(exception.Invalid):
    msg_fmt = "Invalid snapshot: %(reason)s"


class MessageNotFound(exception.NotFound):
    msg_fmt = "Message %(message_id)s could not be found."


class InvalidInput(exception.Invalid):
    msg_fmt = "Invalid input received: %(reason)s"


class InvalidVolume(exception.Invalid):
    msg_fmt = "Invalid volume: %(reason)s"


class ResourceConflict(exception.Invalid):
    msg_fmt = "Resource conflict: %(reason)s"
    code = 409


class InvalidAPIVersionString(exception.Invalid):
    msg_fmt = ("API Version String %(version)s is of invalid format. Must be of format "
               "MajorNum.MinorNum.")


class InvalidGlobalAPIVersion(exception.Invalid):
    msg_fmt = ("Version %(req_ver)s is not supported by the API. Minimum is %(min_ver)s and "
               "maximum is %(max_ver)s.")
    code = 406


class VersionNotFoundForAPIMethod(exception.NotFound):
    """Raised for a method newer than the request's version: looks like no such resource."""

    msg_fmt = "The resource could not be found."


class ImageNotFound(exception.NotFound):
    msg_fmt = "Image %(image_id)s could not be found."


class ImageUnacceptable(exception.Invalid):
    msg_fmt = "Image %(image_id)s is unacceptable: %(reason)s"


class ImageDownloadFailed(exception.NovaLabException):
    msg_fmt = "Failed to download image %(image_href)s, reason: %(reason)s"


class ImageCopyFailure(exception.NovaLabException):
    msg_fmt = "Failed to copy image to volume: %(reason)s"


class GlanceConnectionFailed(exception.NovaLabException):
    msg_fmt = "Connection to glance failed: %(reason)s"


class VolumeBackendAPIException(exception.NovaLabException):
    msg_fmt = "Bad or unexpected response from the storage volume backend API: %(data)s"


class InvalidConnectorException(exception.NovaLabException):
    msg_fmt = "Connector doesn't have required information: %(missing)s"
