"""User messages (``cinder/message/api.py``, ``message_field.py``): why a volume failed.

When an asynchronous operation fails (a create in cinder-volume long after the
API said 202), the user sees ``status: error`` and can ask
``GET /v3/{project_id}/messages`` why. A message names the action and a fixed
detail from a short list, never the exception's text: that stays in the log
and the trace, where operators look.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from novalab.reference.cinder.db import api as db_api
from novalab.reference.common.db import Database, utcnow

LOG = logging.getLogger(__name__)

MESSAGE_TTL = timedelta(days=30)   # upstream's message_ttl default is 2592000 s

VOLUME = "VOLUME"
VOLUME_SNAPSHOT = "VOLUME_SNAPSHOT"


class Action:
    SCHEDULE_ALLOCATE_VOLUME = ("001", "schedule allocate volume")
    UPDATE_ATTACHMENT = ("004", "update attachment")
    COPY_IMAGE_TO_VOLUME = ("005", "copy image to volume")
    CREATE_VOLUME_FROM_BACKEND = ("008", "create volume from backend storage")
    SNAPSHOT_CREATE = ("009", "create snapshot")
    SNAPSHOT_DELETE = ("010", "delete snapshot")
    ALL = (SCHEDULE_ALLOCATE_VOLUME, UPDATE_ATTACHMENT, COPY_IMAGE_TO_VOLUME,
           CREATE_VOLUME_FROM_BACKEND, SNAPSHOT_CREATE, SNAPSHOT_DELETE)


class Detail:
    UNKNOWN_ERROR = ("001", "An unknown error occurred.")
    DRIVER_FAILED_CREATE = ("012", "Driver failed to create the volume.")
    NOT_ENOUGH_SPACE_FOR_IMAGE = ("007", "Image used for creating volume exceeds "
                                         "available space.")
    SNAPSHOT_CREATE_ERROR = ("025", "Snapshot failed to create.")
    SNAPSHOT_DELETE_ERROR = ("027", "Snapshot failed to delete.")
    ALL = (UNKNOWN_ERROR, DRIVER_FAILED_CREATE, NOT_ENOUGH_SPACE_FOR_IMAGE,
           SNAPSHOT_CREATE_ERROR, SNAPSHOT_DELETE_ERROR)


def user_message(action_id: str, detail_id: str) -> str:
    """``"<action>: <detail>"``, as the messages API shows it."""
    action = dict(Action.ALL).get(action_id, "unknown action")
    detail = dict(Detail.ALL).get(detail_id, Detail.UNKNOWN_ERROR[1])
    return f"{action}: {detail}"


def create(db: Database, context, action: tuple[str, str], resource_uuid: str | None,
           detail: tuple[str, str] = Detail.UNKNOWN_ERROR, level: str = "ERROR",
           resource_type: str = VOLUME) -> None:
    """Record a message for the context's project; never fails the caller."""
    try:
        db_api.message_create(db, {
            "project_id": context.project_id, "request_id": context.request_id,
            "resource_type": resource_type, "resource_uuid": resource_uuid,
            "action_id": action[0], "detail_id": detail[0],
            "event_id": f"VOLUME_{resource_type}_{action[0]}_{detail[0]}",
            "message_level": level, "expires_at": utcnow() + MESSAGE_TTL})
    except Exception:
        LOG.exception("Failed to create message record for request_id %s", context.request_id)
