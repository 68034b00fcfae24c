"""The request bodies Keystone accepts, as JSON Schema (``keystone/*/schema.py``).

Upstream validates every body with these before any work; an id or a name is a
bounded string, a password at most 4096 characters, ``methods`` a list of
method names. novalab keeps no free-form "extra" attributes on users and
projects, so the unknown ones are refused rather than silently dropped.
"""

from __future__ import annotations

from novalab.reference.common.validation import parameter_types

ID = {"type": "string", "minLength": 1, "maxLength": 64}
NAME = parameter_types.name(255)
PROJECT_NAME = parameter_types.name(64)
PASSWORD = {"type": "string", "maxLength": 4096}
DESCRIPTION = parameter_types.description(255)
ENABLED = {"type": "boolean"}
DOMAIN = {"type": "object", "properties": {"id": ID, "name": NAME},
          "additionalProperties": False}

_USER_REF = {"type": "object",
             "properties": {"id": ID, "name": NAME, "password": PASSWORD, "domain": DOMAIN},
             "required": ["password"], "additionalProperties": False}

_PROJECT_REF = {"type": "object",
                "properties": {"id": ID, "name": PROJECT_NAME, "domain": DOMAIN},
                "additionalProperties": False}

authenticate = {
    "type": "object",
    "properties": {"auth": {
        "type": "object",
        "properties": {
            "identity": {
                "type": "object",
                "properties": {
                    "methods": {"type": "array", "minItems": 1, "maxItems": 8,
                                "items": {"type": "string", "minLength": 1, "maxLength": 64}},
                    "password": {"type": "object", "properties": {"user": _USER_REF},
                                 "required": ["user"], "additionalProperties": False},
                },
                "required": ["methods"],
            },
            "scope": {
                "type": "object",
                "properties": {"project": _PROJECT_REF},
                "additionalProperties": False,
            },
        },
        "required": ["identity"],
        "additionalProperties": False,
    }},
    "required": ["auth"],
}

_user_properties = {
    "name": NAME, "password": {"type": ["string", "null"], "maxLength": 4096},
    "enabled": ENABLED, "default_project_id": {"type": ["string", "null"], "maxLength": 64},
    "domain_id": ID, "description": DESCRIPTION,
    "email": {"type": ["string", "null"], "maxLength": 255},
}

user_create = {
    "type": "object",
    "properties": {"user": {"type": "object", "properties": _user_properties,
                            "required": ["name"], "additionalProperties": False}},
    "required": ["user"],
}

user_update = {
    "type": "object",
    "properties": {"user": {"type": "object", "properties": _user_properties,
                            "minProperties": 1, "additionalProperties": False}},
    "required": ["user"],
}

_project_properties = {
    "name": PROJECT_NAME, "description": DESCRIPTION, "enabled": ENABLED, "domain_id": ID,
    # Projects here are never domains and never nested below another project.
    "is_domain": {"const": False}, "parent_id": {"type": ["string", "null"], "maxLength": 64},
    "tags": {"type": "array", "maxItems": 0},
    "options": {"type": "object", "maxProperties": 0},
}

project_create = {
    "type": "object",
    "properties": {"project": {"type": "object", "properties": _project_properties,
                               "required": ["name"], "additionalProperties": False}},
    "required": ["project"],
}

project_update = {
    "type": "object",
    "properties": {"project": {"type": "object", "properties": _project_properties,
                               "minProperties": 1, "additionalProperties": False}},
    "required": ["project"],
}
