"""The bodies and query strings of ``os-keypairs`` (``schemas/keypairs.py``), per microversion.

2.1 takes a name and, to import rather than generate, a public key; 2.2 adds
``type`` (``ssh`` or ``x509``); 2.10 an admin's ``user_id``; 2.92 allows ``@``
and ``.`` in names and requires ``public_key`` (Nova no longer generates keys).
Names are 1-255 characters of letters, digits, ``_``, ``-`` and spaces, with
no space at either end. Query strings are lists of values (``?user_id=a&user_id=b``):
2.10 reads ``user_id``, 2.35 ``limit`` and ``marker``; from 2.75 nothing else.
"""

from __future__ import annotations

import copy

from novalab.reference.nova.api.schemas import parameter_types

keypair_name_special_chars = {"allOf": [
    parameter_types.name,
    {"type": "string", "pattern": r"^[_\- a-zA-Z0-9]+$", "minLength": 1, "maxLength": 255},
]}
keypair_name_special_chars_v292 = {"allOf": [
    parameter_types.name,
    {"type": "string", "pattern": r"^[_\-\@\. a-zA-Z0-9]+$", "minLength": 1,
     "maxLength": 255},
]}
_TYPE = {"type": "string", "enum": ["ssh", "x509"]}


def _create(**properties) -> dict:
    return {"type": "object",
            "properties": {"keypair": {
                "type": "object",
                "properties": {"name": keypair_name_special_chars,
                               "public_key": {"type": "string"}, **properties},
                "required": ["name"],
                "additionalProperties": False}},
            "required": ["keypair"],
            "additionalProperties": False}


create = _create()
create_v22 = _create(type=_TYPE)
create_v210 = _create(type=_TYPE, user_id={"type": "string"})
create_v292 = copy.deepcopy(create_v210)
create_v292["properties"]["keypair"]["properties"]["name"] = keypair_name_special_chars_v292
create_v292["properties"]["keypair"]["required"] = ["name", "public_key"]


def multi_params(schema: dict) -> dict:
    return {"type": "array", "items": schema}


# parameter_types.non_negative_integer, as a query string's value.
_NON_NEGATIVE = {"type": ["integer", "string"], "pattern": "^[0-9]*$", "minimum": 0,
                 "minLength": 1}

index_query_v20 = {"type": "object", "properties": {}, "additionalProperties": True}
index_query_v210 = {"type": "object",
                    "properties": {"user_id": multi_params({"type": "string"})},
                    "additionalProperties": True}
index_query_v235 = copy.deepcopy(index_query_v210)
index_query_v235["properties"].update(limit=multi_params(_NON_NEGATIVE),
                                      marker=multi_params({"type": "string"}))
index_query_v275 = dict(copy.deepcopy(index_query_v235), additionalProperties=False)
show_query_v20 = delete_query_v20 = index_query_v20
show_query_v210 = delete_query_v210 = index_query_v210
show_query_v275 = delete_query_v275 = dict(copy.deepcopy(index_query_v210),
                                           additionalProperties=False)

# Which schema from which version on (each holds until the next one's version).
CREATE = (("2.1", create), ("2.2", create_v22), ("2.10", create_v210), ("2.92", create_v292))
INDEX_QUERY = (("2.1", index_query_v20), ("2.10", index_query_v210),
               ("2.35", index_query_v235), ("2.75", index_query_v275))
SHOW_QUERY = (("2.1", show_query_v20), ("2.10", show_query_v210), ("2.75", show_query_v275))
DELETE_QUERY = (("2.1", delete_query_v20), ("2.10", delete_query_v210),
                ("2.75", delete_query_v275))
