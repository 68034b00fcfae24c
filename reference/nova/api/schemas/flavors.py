"""The bodies of flavor management, extra spec writes and flavor access (``schemas/flavors.py``,
``flavors_extraspecs.py``, ``flavor_access.py``), per microversion.

``POST /flavors`` takes a name, the sizes (``ram`` and ``vcpus`` at least 1,
``disk``, ``OS-FLV-EXT-DATA:ephemeral`` and ``swap`` at least 0, each an integer
or its digits), an optional ``id`` (a string or a number; none, or null, and Nova
makes a UUID), ``rxtx_factor`` (above 0) and ``os-flavor-access:is_public``;
2.55 adds ``description``, the one thing ``PUT /flavors/{id}`` changes. Extra
specs are a flat map of keys of letters, digits and ``-_:. `` (1-255) to strings
or numbers (at most 255 characters); 2.86 validates them against the known specs,
which is past novalab's maximum (2.61), so the pre-2.86 schema is all there is.
"""

from __future__ import annotations

import copy

from novalab.reference.nova.api.schemas import parameter_types

MAX_INT = parameter_types.MAX_INT
# parameter_types.flavor_param_positive / _non_negative (volume_size's shape).
flavor_param_positive = {"type": ["integer", "string"], "pattern": "^[0-9]+$",
                         "minimum": 1, "maximum": MAX_INT}
flavor_param_non_negative = dict(flavor_param_positive, minimum=0)

# parameter_types.valid_description_regex: printable characters and whitespace.
_flavor_description = {"type": ["string", "null"], "minLength": 0, "maxLength": 65535,
                       "pattern": r"^[^\x00-\x08\x0e-\x1f\x7f]*$"}

create = {
    "type": "object",
    "properties": {
        "flavor": {
            "type": "object",
            "properties": {
                "name": parameter_types.name,
                # No space at either end.
                "id": {"type": ["string", "number", "null"], "minLength": 1,
                       "maxLength": 255, "pattern": r"^(?! )[a-zA-Z0-9. _-]+(?<! )$"},
                "ram": flavor_param_positive,
                "vcpus": flavor_param_positive,
                "disk": flavor_param_non_negative,
                "OS-FLV-EXT-DATA:ephemeral": flavor_param_non_negative,
                "swap": flavor_param_non_negative,
                # A positive float, at most the database's SQL_SP_FLOAT_MAX.
                "rxtx_factor": {"type": ["number", "string"],
                                "pattern": r"^[0-9]+(\.[0-9]+)?$",
                                "exclusiveMinimum": 0, "maximum": 3.40282e+38},
                "os-flavor-access:is_public": parameter_types.boolean,
            },
            "required": ["name", "ram", "vcpus", "disk"],
            "additionalProperties": False,
        },
    },
    "required": ["flavor"],
    "additionalProperties": False,
}

create_v255 = copy.deepcopy(create)
create_v255["properties"]["flavor"]["properties"]["description"] = _flavor_description

update = {
    "type": "object",
    "properties": {
        "flavor": {
            "type": "object",
            "properties": {"description": _flavor_description},
            "required": ["description"],
            "additionalProperties": False,
        },
    },
    "required": ["flavor"],
    "additionalProperties": False,
}

# os-extra_specs: parameter_types.metadata whose values may also be numbers.
_metadata_key = r"^[a-zA-Z0-9-_:. ]{1,255}$"
_extra_specs = {"type": "object",
                "patternProperties": {_metadata_key: {"type": ["string", "number"],
                                                      "maxLength": 255}},
                "additionalProperties": False}
extra_specs_create = {"type": "object", "properties": {"extra_specs": _extra_specs},
                      "required": ["extra_specs"], "additionalProperties": False}
extra_specs_update = dict(copy.deepcopy(_extra_specs), minProperties=1, maxProperties=1)


def _tenant_access(action: str) -> dict:
    return {"type": "object",
            "properties": {action: {
                "type": "object",
                # The size of flavor_projects.project_id.
                "properties": {"tenant": {"type": "string", "minLength": 1,
                                          "maxLength": 255}},
                "required": ["tenant"],
                "additionalProperties": False}},
            "required": [action],
            "additionalProperties": False}


add_tenant_access = _tenant_access("addTenantAccess")
remove_tenant_access = _tenant_access("removeTenantAccess")

# GET /flavors and /flavors/detail: what the query string may hold (below 2.75,
# anything else is ignored). Each value is a list: ?limit=1&limit=2.
VALID_SORT_KEYS = ["created_at", "description", "disabled", "ephemeral_gb", "flavorid", "id",
                   "is_public", "memory_mb", "name", "root_gb", "rxtx_factor", "swap",
                   "updated_at", "vcpus"]
_NON_NEGATIVE = {"type": ["integer", "string"], "pattern": "^[0-9]*$", "minimum": 0,
                 "minLength": 1}


def _multi(schema: dict) -> dict:
    return {"type": "array", "items": schema}


index_query = {"type": "object",
               "properties": {"limit": _multi(_NON_NEGATIVE),
                              "marker": _multi({"type": "string"}),
                              "is_public": _multi({"type": "string"}),
                              "minRam": _multi({"type": "string"}),
                              "minDisk": _multi({"type": "string"}),
                              "sort_key": _multi({"type": "string", "enum": VALID_SORT_KEYS}),
                              "sort_dir": _multi({"type": "string",
                                                  "enum": ["asc", "desc"]})},
               "additionalProperties": True}

# Which schema from which version on.
CREATE = (("2.1", create), ("2.55", create_v255))
UPDATE = (("2.55", update),)
