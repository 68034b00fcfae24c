"""JSON schemas of request bodies and query strings (``placement/schemas/*.py``).

Placement's bodies change shape with the microversion, so each table below maps
the first version a schema applies from to the schema (``schema_for`` picks
one). A body that does not fit is a 400 "JSON does not validate: ..."; a query
string that does not fit, "Invalid query string parameters: ...". Upstream's
own constraints, plus one: names may not hold NUL, which PostgreSQL cannot store.
"""

from __future__ import annotations

import copy

MAX_INT = 2**31 - 1
SQL_SP_FLOAT_MAX = 3.40282e38   # a single-precision float column's maximum, as upstream

UUID_PATTERN = "^[0-9a-fA-F-]{36}$"
RC_PATTERN = "^[A-Z0-9_]+$"
_UUID = {"type": "string", "format": "uuid"}
_NAME = {"type": "string", "maxLength": 200, "pattern": r"^[^\x00]*$"}
_EXTERNAL_ID = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": r"^[^\x00]*$"}


def schema_for(table: dict, version: tuple[int, int]) -> dict:
    """The schema of ``table`` ({first version: schema}) that applies at ``version``."""
    return table[max(v for v in table if v <= version)]


def newest(table: dict) -> dict:
    return table[max(table)]


# -- resource providers -------------------------------------------------------------------

_RP = {"type": "object", "properties": {"name": _NAME, "uuid": _UUID},
       "required": ["name"], "additionalProperties": False}
_RP_1_14 = copy.deepcopy(_RP)
_RP_1_14["properties"]["parent_provider_uuid"] = {"anyOf": [_UUID, {"type": "null"}]}


def _without_uuid(schema: dict) -> dict:
    schema = copy.deepcopy(schema)
    schema["properties"].pop("uuid")
    return schema


POST_RESOURCE_PROVIDER = {(1, 0): _RP, (1, 14): _RP_1_14}
PUT_RESOURCE_PROVIDER = {(1, 0): _without_uuid(_RP), (1, 14): _without_uuid(_RP_1_14)}

_GET_RPS = {"type": "object", "properties": {"name": {"type": "string"}, "uuid": _UUID},
            "additionalProperties": False}


def _with(schema: dict, **properties) -> dict:
    schema = copy.deepcopy(schema)
    schema["properties"].update(properties)
    return schema


_GET_RPS_1_3 = _with(_GET_RPS, member_of={"type": "string"})
_GET_RPS_1_4 = _with(_GET_RPS_1_3, resources={"type": "string"})
_GET_RPS_1_14 = _with(_GET_RPS_1_4, in_tree=_UUID)
GET_RESOURCE_PROVIDERS = {(1, 0): _GET_RPS, (1, 3): _GET_RPS_1_3, (1, 4): _GET_RPS_1_4,
                          (1, 14): _GET_RPS_1_14,
                          (1, 18): _with(_GET_RPS_1_14, required={"type": "string"})}

# -- inventories --------------------------------------------------------------------------


def _int(minimum: int) -> dict:
    return {"type": "integer", "minimum": minimum, "maximum": MAX_INT}


BASE_INVENTORY = {
    "type": "object",
    "properties": {
        "resource_provider_generation": {"type": "integer"},
        "total": _int(1),
        "reserved": _int(0),
        "min_unit": _int(1),
        "max_unit": _int(1),
        "step_size": _int(1),
        "allocation_ratio": {"type": "number", "maximum": SQL_SP_FLOAT_MAX},
    },
    "required": ["total", "resource_provider_generation"],
    "additionalProperties": False,
}
POST_INVENTORY = _with(BASE_INVENTORY, resource_class={"type": "string", "pattern": RC_PATTERN})
POST_INVENTORY["required"] = ["total", "resource_class"]
_INVENTORY_RECORD = copy.deepcopy(BASE_INVENTORY)
_INVENTORY_RECORD["required"] = ["total"]
PUT_INVENTORIES = {
    "type": "object",
    "properties": {
        "resource_provider_generation": {"type": "integer"},
        "inventories": {"type": "object", "patternProperties": {RC_PATTERN: _INVENTORY_RECORD}},
    },
    "required": ["resource_provider_generation", "inventories"],
    "additionalProperties": False,
}

# -- allocations --------------------------------------------------------------------------

_RESOURCES = {"type": "object", "minProperties": 1,
              "patternProperties": {RC_PATTERN: {"type": "integer", "minimum": 1}},
              "additionalProperties": False}
_ALLOCATION_1_0 = {
    "type": "object",
    "properties": {"allocations": {"type": "array", "minItems": 1, "items": {
        "type": "object",
        "properties": {
            "resource_provider": {"type": "object", "properties": {"uuid": _UUID},
                                  "required": ["uuid"], "additionalProperties": False},
            "resources": _RESOURCES,
        },
        "required": ["resource_provider", "resources"],
        "additionalProperties": False}}},
    "required": ["allocations"],
    "additionalProperties": False,
}
_ALLOCATION_1_8 = _with(_ALLOCATION_1_0, project_id=_EXTERNAL_ID, user_id=_EXTERNAL_ID)
_ALLOCATION_1_8["required"] += ["project_id", "user_id"]
_ALLOCATION_1_12 = {
    "type": "object",
    "properties": {
        "allocations": {
            "type": "object",
            "minProperties": 1,
            "patternProperties": {UUID_PATTERN: {
                "type": "object",
                # The provider generation is optional, and not checked (as upstream).
                "properties": {"generation": {"type": "integer"}, "resources": _RESOURCES},
                "required": ["resources"],
                "additionalProperties": False}},
            "additionalProperties": False,
        },
        "project_id": _EXTERNAL_ID,
        "user_id": _EXTERNAL_ID,
    },
    "required": ["allocations", "project_id", "user_id"],
    "additionalProperties": False,
}
# Empty allocations remove a consumer's: allowed in POST, and in PUT from 1.28.
_DELETABLE = copy.deepcopy(_ALLOCATION_1_12)
_DELETABLE["properties"]["allocations"]["minProperties"] = 0
_ALLOCATION_1_28 = _with(_DELETABLE, consumer_generation={"type": ["integer", "null"]})
_ALLOCATION_1_28["required"].append("consumer_generation")

PUT_ALLOCATIONS = {(1, 0): _ALLOCATION_1_0, (1, 8): _ALLOCATION_1_8,
                   (1, 12): _ALLOCATION_1_12, (1, 28): _ALLOCATION_1_28}


def _per_consumer(schema: dict) -> dict:
    return {"type": "object", "minProperties": 1, "additionalProperties": False,
            "patternProperties": {UUID_PATTERN: schema}}


POST_ALLOCATIONS = {(1, 13): _per_consumer(_DELETABLE), (1, 28): _per_consumer(_ALLOCATION_1_28)}

# -- usages and allocation candidates (query strings) ---------------------------------------

GET_USAGES = {"type": "object",
              "properties": {"project_id": _EXTERNAL_ID, "user_id": _EXTERNAL_ID},
              "required": ["project_id"], "additionalProperties": False}

_CANDIDATES_1_10 = {"type": "object", "properties": {"resources": {"type": "string"}},
                    "required": ["resources"], "additionalProperties": False}
_CANDIDATES_1_16 = _with(_CANDIDATES_1_10, limit={
    "type": ["integer", "string"], "pattern": "^[1-9][0-9]*$", "minimum": 1, "minLength": 1})
_CANDIDATES_1_17 = _with(_CANDIDATES_1_16, required={"type": "string"})
_CANDIDATES_1_21 = _with(_CANDIDATES_1_17, member_of={"type": "string"})
_CANDIDATES_1_25 = {
    "type": "object",
    "properties": {"limit": _CANDIDATES_1_16["properties"]["limit"],
                   "group_policy": {"type": "string", "enum": ["none", "isolate"]}},
    "patternProperties": {f"^{name}([1-9][0-9]*)?$": {"type": "string"}
                          for name in ("resources", "required", "member_of")},
    "additionalProperties": False,
}
GET_ALLOCATION_CANDIDATES = {(1, 10): _CANDIDATES_1_10, (1, 16): _CANDIDATES_1_16,
                             (1, 17): _CANDIDATES_1_17, (1, 21): _CANDIDATES_1_21,
                             (1, 25): _CANDIDATES_1_25}
