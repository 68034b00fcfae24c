"""``POST /servers``, ``GET /servers`` and ``createImage`` (``schemas/servers.py``), at 2.1.

``base_create`` as upstream has it: ``server`` takes no key it does not list
(``additionalProperties: false``), ``name`` and ``flavorRef`` are required,
``imageRef`` is a UUID or "" (a boot from volume), ``networks`` a list of
``{uuid, port, fixed_ip}`` (the strings ``auto`` and ``none`` came with 2.37),
counts positive, ``user_data`` base64 of at most 65535 characters. Left out
because novalab has no use for them: ``personality`` (injected files) and the
legacy ``block_device_mapping``; ``adminPass`` (novalab sets no guest password:
no config drive, no injection) and ``security_groups`` (no security groups yet),
so a request naming them is refused rather than silently ignored.
"""

from __future__ import annotations

from novalab.reference.nova.api.schemas import parameter_types as types

# schemas/block_device_mapping.py (block_device_mapping_v2 items), bounded.
block_device_mapping_v2 = {
    "type": "object",
    "properties": {
        "source_type": {"type": "string", "enum": ["volume", "image", "snapshot", "blank"]},
        "destination_type": {"type": "string", "enum": ["local", "volume"]},
        "uuid": {"type": "string", "minLength": 1, "maxLength": 255,
                 "pattern": "^[a-zA-Z0-9._-]*$"},
        "boot_index": {"type": ["integer", "string", "null"], "pattern": "^-?[0-9]{1,4}$",
                       "minimum": -1, "maximum": 9999},
        "delete_on_termination": types.boolean,
        "volume_size": {"type": ["integer", "string"], "pattern": "^[1-9][0-9]{0,4}$",
                        "minimum": 1, "maximum": 99999},
        "device_name": {"type": "string", "maxLength": 255, "pattern": "^[a-zA-Z0-9/._-]*$"},
        "device_type": {"type": "string", "maxLength": 255},
        "disk_bus": {"type": "string", "maxLength": 255},
        "guest_format": {"type": "string", "maxLength": 255},
        "volume_type": {"type": ["string", "null"], "maxLength": 255},
        "no_device": {"type": ["boolean", "null"]},
        "tag": {"type": "string", "maxLength": 60},
    },
    "additionalProperties": False,
}

_network = {
    "type": "object",
    "properties": {"uuid": types.uuid, "port": {"oneOf": [types.uuid, {"type": "null"}]},
                   "fixed_ip": types.ip_address},
    "additionalProperties": False,
}

_hints = {"type": "object", "maxProperties": 32}

base_create = {
    "type": "object",
    "properties": {
        "server": {
            "type": "object",
            "properties": {
                "name": types.name,
                "imageRef": {"oneOf": [types.uuid, {"type": "string", "maxLength": 0}]},
                "flavorRef": {"type": ["string", "integer"], "minLength": 1, "maxLength": 255,
                              "minimum": 0, "maximum": types.MAX_INT},
                "metadata": types.metadata,
                "networks": {"type": "array", "maxItems": 16, "items": _network},
                "OS-DCF:diskConfig": {"type": "string", "enum": ["AUTO", "MANUAL"]},
                "accessIPv4": {"type": "string", "format": "ip-address", "maxLength": 15},
                "accessIPv6": {"type": "string", "format": "ip-address", "maxLength": 45},
                "key_name": {**types.name, "pattern": "^[a-zA-Z0-9 _.@-]+$"},
                "user_data": {"type": "string", "maxLength": 65535, "format": "base64"},
                "availability_zone": types.name,
                "min_count": types.positive_integer,
                "max_count": types.positive_integer,
                "return_reservation_id": types.boolean,
                "config_drive": types.boolean,
                "block_device_mapping_v2": {"type": "array", "maxItems": 32,
                                            "items": block_device_mapping_v2},
            },
            "required": ["name", "flavorRef"],
            "additionalProperties": False,
        },
        "os:scheduler_hints": _hints,
        "OS-SCH-HNT:scheduler_hints": _hints,
    },
    "required": ["server"],
    "additionalProperties": False,
}

# The createImage action (``create_image``): a name, and metadata for the image.
create_image = {
    "type": "object",
    "properties": {
        "createImage": {
            "type": "object",
            "properties": {"name": types.name, "metadata": types.metadata},
            "required": ["name"],
            "additionalProperties": False,
        },
    },
    "required": ["createImage"],
    "additionalProperties": False,
}

# query_params_v21: the 2.1 API ignores parameters it does not know, but checks these.
query_params_v21 = {
    "type": "object",
    "properties": {
        "limit": types.non_negative_integer_string,
        "marker": {"type": "string", "maxLength": 255},
        "name": types.query_regex,
        "all_tenants": {"type": "string", "maxLength": 16},
    },
    "additionalProperties": True,
}
