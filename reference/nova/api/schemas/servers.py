"""``POST /servers``, ``PUT /servers/{id}``, ``GET /servers`` and ``createImage``
(``schemas/servers.py``), one schema per microversion that changed them.

``base_create`` is 2.1 as upstream has it: ``server`` takes no key it does not
list (``additionalProperties: false``), ``name`` and ``flavorRef`` are
required, ``imageRef`` is a UUID or "" (a boot from volume), ``networks`` a list
of ``{uuid, port, fixed_ip}``, counts positive, ``user_data`` base64 of at most
65535 characters. Then, as upstream:

- 2.19 ``description``;
- 2.32 a device ``tag`` on a network and on a block device mapping; 2.33 to 2.41
  only on a network (upstream's bug, kept), 2.37 to 2.41 on neither;
- 2.37 ``networks`` is required, a list (with a UUID ``uuid``) or ``"auto"`` or
  ``"none"``;
- 2.42 the device tags again; 2.52 the server's ``tags``.

``security_groups`` is a list of ``{"name": ...}``, each a group's name or id
(resolved in Neutron by ``compute_api``).

Left out because novalab has no use for them: ``personality`` (injected files,
gone in 2.57 anyway) and the legacy ``block_device_mapping``; ``adminPass``
(novalab sets no guest password: no config drive, no injection), so a request
naming it is refused rather than silently ignored. A device tag passes the schema but is
refused by the controller: novalab does not give the guest device metadata.
"""

from __future__ import annotations

import copy

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
        "no_device": {"type": ["boolean", "null"]},
    },
    "additionalProperties": False,
}

_network = {
    "type": "object",
    # A string at 2.1 upstream, whose controller then refuses one that is not a UUID
    # ("Bad networks format"); the schema says it at once, with the same 400.
    "properties": {"uuid": types.uuid,
                   "port": {"oneOf": [types.uuid, {"type": "null"}]},
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
                # A name or an id: parameter_types.name allows both.
                "security_groups": {"type": "array", "maxItems": 32, "items": {
                    "type": "object", "properties": {"name": types.name},
                    "additionalProperties": False}},
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

def _copy(schema: dict) -> dict:
    return copy.deepcopy(schema)


def _server(schema: dict) -> dict:
    return schema["properties"]["server"]["properties"]


# parameter_types.description and parameter_types.tag, bounded as upstream.
description = {"type": ["string", "null"], "minLength": 0, "maxLength": 255,
               "pattern": r"^[^\x00-\x1f\x7f]*$"}
tag = {"type": "string", "minLength": 1, "maxLength": 60, "pattern": "^[^,/]*$"}
MAX_TAG_COUNT = 50

create_v219 = _copy(base_create)
_server(create_v219)["description"] = description

create_v232 = _copy(create_v219)
_server(create_v232)["networks"]["items"]["properties"]["tag"] = tag
_server(create_v232)["block_device_mapping_v2"]["items"]["properties"]["tag"] = tag

create_v233 = _copy(create_v219)
_server(create_v233)["networks"]["items"]["properties"]["tag"] = tag

_network_v237 = _copy(_network)
_network_v237["properties"]["uuid"] = types.uuid
create_v237 = _copy(create_v219)
create_v237["properties"]["server"]["required"].append("networks")
_server(create_v237)["networks"] = {"oneOf": [
    {"type": "array", "maxItems": 16, "items": _network_v237},
    {"type": "string", "enum": ["none", "auto"]}]}

create_v242 = _copy(create_v237)
_server(create_v242)["networks"]["oneOf"][0]["items"]["properties"]["tag"] = tag
_server(create_v242)["block_device_mapping_v2"]["items"]["properties"]["tag"] = tag

create_v252 = _copy(create_v242)
_server(create_v252)["tags"] = {"type": "array", "items": tag, "maxItems": MAX_TAG_COUNT}

# (first version, schema): the create schema of a request is the last one at or below
# its version (2.32's tags were lost at 2.33, see the module's docstring).
CREATE = (("2.1", base_create), ("2.19", create_v219), ("2.32", create_v232),
          ("2.33", create_v233), ("2.37", create_v237), ("2.42", create_v242),
          ("2.52", create_v252))

# PUT /servers/{id}: the name, and from 2.19 the description.
update = {
    "type": "object",
    "properties": {"server": {
        "type": "object",
        "properties": {
            "name": types.name,
            "OS-DCF:diskConfig": {"type": "string", "enum": ["AUTO", "MANUAL"]},
        },
        "additionalProperties": False,
    }},
    "required": ["server"],
    "additionalProperties": False,
}
update_v219 = _copy(update)
_server(update_v219)["description"] = description
UPDATE = (("2.1", update), ("2.19", update_v219))

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
