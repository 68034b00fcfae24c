"""JSON schemas of the request bodies (``cinder/api/schemas/volumes.py``, ``attachments.py``).

Validated with ``jsonschema``; a failure is a 400 ``badRequest`` naming the
field, as Cinder's validator words it.
"""

from __future__ import annotations

import jsonschema

from novalab.reference.common import exception

_UUID = {"type": "string",
         "pattern": r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?"
                    r"[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"}
_OPTIONAL_TEXT = {"type": ["string", "null"], "maxLength": 255}

VOLUME_CREATE = {
    "type": "object",
    "properties": {
        "volume": {
            "type": "object",
            "properties": {
                "name": _OPTIONAL_TEXT,
                "description": _OPTIONAL_TEXT,
                "display_name": _OPTIONAL_TEXT,
                "display_description": _OPTIONAL_TEXT,
                "volume_type": {"type": ["string", "null"], "maxLength": 255},
                "metadata": {"type": ["object", "null"],
                             "additionalProperties": {"type": "string", "maxLength": 255}},
                "snapshot_id": {"oneOf": [_UUID, {"type": "null"}]},
                "source_volid": {"oneOf": [_UUID, {"type": "null"}]},
                "size": {"type": ["integer", "string", "null"], "pattern": "^[0-9]+$",
                         "minimum": 1, "maximum": 2 ** 31 - 1},
                "availability_zone": {"type": ["string", "null"], "maxLength": 255},
                "multiattach": {"type": ["boolean", "string", "null"]},
                "image_id": {"type": ["string", "null"], "maxLength": 255},
                "imageRef": {"type": ["string", "null"], "maxLength": 255},
            },
            "additionalProperties": True,
        },
        "OS-SCH-HNT:scheduler_hints": {"type": ["object", "null"]},
    },
    "required": ["volume"],
    "additionalProperties": False,
}

ATTACHMENT_CREATE = {
    "type": "object",
    "properties": {
        "attachment": {
            "type": "object",
            "properties": {
                "instance_uuid": _UUID,
                "connector": {"type": ["object", "null"]},
                "volume_uuid": _UUID,
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
            "properties": {"connector": {"type": "object", "minProperties": 1}},
            "required": ["connector"],
            "additionalProperties": False,
        },
    },
    "required": ["attachment"],
    "additionalProperties": False,
}

ATTACHMENT_COMPLETE = {
    "type": "object",
    "properties": {"os-complete": {}},
    "required": ["os-complete"],
    "additionalProperties": False,
}


def validate(schema: dict, body: dict) -> None:
    """Raise ValidationError (400) describing the first problem of ``body``."""
    validator = jsonschema.Draft4Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(body))
    if error is None:
        return
    path = [str(p) for p in error.absolute_path]
    if path and error.validator not in ("required", "additionalProperties"):
        detail = (f"Invalid input for field/attribute {path[-1]}. Value: {error.instance}. "
                  f"{error.message}")
    else:
        detail = error.message
    raise exception.ValidationError(detail=detail)
