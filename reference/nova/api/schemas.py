"""JSON schemas of the compute API's request bodies (``nova/api/openstack/compute/schemas``).

Validated with ``jsonschema``; a failure becomes a 400 whose message names the
field, as Nova's validator does.
"""

from __future__ import annotations

import jsonschema

from novalab.reference.common import exception

_NAME = {"type": "string", "minLength": 1, "maxLength": 255,
         "pattern": r"^(?![\s])[\S\s]*(?<![\s])$"}
_UUID = {"type": "string", "format": "uuid",
         "pattern": r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?"
                    r"[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"}
_METADATA = {"type": "object", "maxProperties": 128,
             "patternProperties": {r"^[a-zA-Z0-9-_:. ]{1,255}$":
                                   {"type": "string", "maxLength": 255}},
             "additionalProperties": False}
# nova/api/openstack/compute/schemas/block_device_mapping.py, trimmed.
_BDM_V2 = {
    "type": "object",
    "properties": {
        "source_type": {"type": "string", "enum": ["volume", "image", "snapshot", "blank"]},
        "destination_type": {"type": "string", "enum": ["local", "volume"]},
        "uuid": {"type": "string", "minLength": 1, "maxLength": 255},
        "boot_index": {"type": ["integer", "string", "null"], "pattern": "^-?[0-9]+$"},
        "delete_on_termination": {"type": ["boolean", "string"]},
        "volume_size": {"type": ["integer", "string"], "pattern": "^[0-9]+$", "minimum": 1},
        "device_name": {"type": "string", "maxLength": 255},
        "device_type": {"type": "string"},
        "disk_bus": {"type": "string"},
        "guest_format": {"type": "string"},
        "volume_type": {"type": ["string", "null"]},
        "no_device": {},
        "tag": {"type": "string"},
    },
    "additionalProperties": False,
}
_COUNT = {"type": ["integer", "string"], "pattern": "^[0-9]+$", "minimum": 1}

SERVER_CREATE = {
    "type": "object",
    "properties": {
        "server": {
            "type": "object",
            "properties": {
                "name": _NAME,
                "imageRef": {"oneOf": [_UUID, {"type": "string", "maxLength": 0},
                                       {"type": "string", "format": "uri",
                                        "pattern": "^https?://"}]},
                "flavorRef": {"type": ["string", "integer"], "minLength": 1},
                "adminPass": {"type": "string"},
                "metadata": _METADATA,
                "networks": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"uuid": _UUID, "port": {"oneOf": [_UUID, {"type": "null"}]},
                                   "fixed_ip": {"type": "string"}},
                    "additionalProperties": False}},
                "OS-DCF:diskConfig": {"type": "string", "enum": ["AUTO", "MANUAL"]},
                "accessIPv4": {"type": "string"},
                "accessIPv6": {"type": "string"},
                "key_name": {"type": "string", "minLength": 1, "maxLength": 255},
                "user_data": {"type": "string", "maxLength": 65535},
                "availability_zone": {"type": "string", "minLength": 1, "maxLength": 255},
                "min_count": _COUNT,
                "max_count": _COUNT,
                "return_reservation_id": {"type": "boolean"},
                "security_groups": {"type": "array", "items": {
                    "type": "object", "properties": {"name": {"type": "string"}},
                    "additionalProperties": False}},
                "config_drive": {"type": ["boolean", "string"]},
                "block_device_mapping_v2": {"type": "array", "items": _BDM_V2},
            },
            "required": ["name", "flavorRef"],
            "additionalProperties": False,
        },
        "os:scheduler_hints": {"type": "object"},
        "OS-SCH-HNT:scheduler_hints": {"type": "object"},
    },
    "required": ["server"],
    "additionalProperties": False,
}

_VALIDATOR = jsonschema.Draft4Validator(SERVER_CREATE,
                                        format_checker=jsonschema.FormatChecker())


def validate_server_create(body: dict) -> None:
    """Raise ValidationError (400) describing the first problem in ``body``."""
    error = jsonschema.exceptions.best_match(_VALIDATOR.iter_errors(body))
    if error is None:
        return
    path = "/".join(str(p) for p in error.absolute_path)
    if error.validator == "additionalProperties":
        detail = f"Additional properties are not allowed ({error.message.split('(')[-1]}"
        detail = detail.rstrip(")") + ")"
    elif error.validator == "required":
        detail = error.message
    else:
        detail = error.message
    if path:
        detail = f"Invalid input for field/attribute {path.split('/')[-1]}. " \
                 f"Value: {error.instance!r}. {detail}"
    raise exception.ValidationError(detail=detail)
