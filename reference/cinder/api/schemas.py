"""JSON schemas of the request bodies (``cinder/api/schemas/volumes.py``, ``attachments.py``,
``quotas.py``), checked by :func:`novalab.reference.common.validation.schema` before the view.

A body that does not fit is a 400 ``badRequest`` naming the field and the rule,
as Cinder's validator words it. Upstream lets a volume body carry properties
it does not know (``additionalProperties`` is true there), but not the request
around it; the attachment and quota bodies allow nothing unknown.
"""

from __future__ import annotations

from novalab.reference.common.validation import parameter_types

DB_MAX_INT = 2**31 - 1

_UUID = parameter_types.uuid()
_UUID_OR_NULL = {"type": ["string", "null"], "format": "uuid"}
# No NUL: PostgreSQL cannot store it in a text column (a 500 there, not a 400).
_NO_NUL = r"^[^\x00]*$"
_NAME = {"type": ["string", "null"], "maxLength": 255, "pattern": _NO_NUL}
_DESCRIPTION = parameter_types.description(255)
# cinder's metadata_allows_null: keys of 1 to 255 ordinary characters, string values.
_METADATA = {"type": ["object", "null"],
             "propertyNames": {"pattern": r"^[a-zA-Z0-9-_:. /]{1,255}$"},
             "additionalProperties": {"type": "string", "maxLength": 255, "pattern": _NO_NUL}}

VOLUME_CREATE = {
    "type": "object",
    "properties": {
        "volume": {
            "type": "object",
            "properties": {
                "name": _NAME,
                "description": _DESCRIPTION,
                "display_name": _NAME,
                "display_description": _DESCRIPTION,
                "volume_type": _NAME,
                "metadata": _METADATA,
                "snapshot_id": _UUID_OR_NULL,
                "source_volid": _UUID_OR_NULL,
                "backup_id": _UUID_OR_NULL,
                "group_id": _UUID_OR_NULL,
                "consistencygroup_id": _UUID_OR_NULL,
                # cinder's volume_size_allows_null: an integer, or digits in a string.
                "size": {"type": ["integer", "string", "null"], "pattern": "^[0-9]+$",
                         "minimum": 1, "maximum": DB_MAX_INT, "maxLength": 10},
                "availability_zone": _NAME,
                "multiattach": {"type": ["boolean", "string", "null"], "maxLength": 5},
                "image_id": _UUID_OR_NULL,
                "imageRef": _UUID_OR_NULL,
            },
            "additionalProperties": True,
        },
        "OS-SCH-HNT:scheduler_hints": {"type": ["object", "null"]},
    },
    "required": ["volume"],
    "additionalProperties": False,
}

_CONNECTOR = {"type": ["object", "null"], "maxProperties": 64}

ATTACHMENT_CREATE = {
    "type": "object",
    "properties": {
        "attachment": {
            "type": "object",
            "properties": {
                "instance_uuid": _UUID,
                "connector": _CONNECTOR,
                "volume_uuid": _UUID,
                "mode": {"type": "string", "enum": ["rw", "ro"]},
            },
            "required": ["volume_uuid"],
            "additionalProperties": False,
        },
    },
    "required": ["attachment"],
    "additionalProperties": False,
}

ATTACHMENT_UPDATE = {
    "type": "object",
    "properties": {
        "attachment": {
            "type": "object",
            "properties": {"connector": {**_CONNECTOR, "type": "object", "minProperties": 1}},
            "required": ["connector"],
            "additionalProperties": False,
        },
    },
    "required": ["attachment"],
    "additionalProperties": False,
}

# POST .../attachments/{id}/action: one action per body; os-complete is the one here
# (the view answers any other with "There is no such action").
ATTACHMENT_ACTION = {
    "type": "object",
    "properties": {"os-complete": {"type": ["null", "object"], "maxProperties": 0}},
    "minProperties": 1,
    "maxProperties": 1,
    "propertyNames": {"maxLength": 255},
}

# cinder's quota_set: an integer, or digits in a string, from -1 (unlimited) up.
_QUOTA_VALUE = {"type": ["integer", "string"], "pattern": "^-?[0-9]{1,10}$",
                "minimum": -1, "maximum": DB_MAX_INT}

QUOTA_UPDATE = {
    "type": "object",
    "properties": {
        "quota_set": {
            "type": "object",
            "properties": {
                **{name: _QUOTA_VALUE for name in (
                    "volumes", "gigabytes", "snapshots", "backups", "backup_gigabytes",
                    "groups", "per_volume_gigabytes")},
                "skip_validation": {"type": ["boolean", "string"], "maxLength": 5},
            },
            "additionalProperties": False,
        },
    },
    "required": ["quota_set"],
    "additionalProperties": False,
}
