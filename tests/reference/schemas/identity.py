"""Keystone v3 response bodies novalab returns, from the Identity API reference
(https://docs.openstack.org/api-ref/identity/v3/), written as JSON schemas with
additional properties forbidden: ``POST /v3/auth/tokens`` (password, project
scope) and ``GET /v3`` (the version document)."""

from __future__ import annotations

_ref = {"type": "object", "properties": {"id": {"type": "string"},
                                         "name": {"type": "string"}},
        "required": ["id", "name"], "additionalProperties": False}
_domain_ref = _ref
_project = {"type": "object",
            "properties": {"id": {"type": "string"}, "name": {"type": "string"},
                           "domain": _domain_ref},
            "required": ["id", "name", "domain"], "additionalProperties": False}
_user = {"type": "object",
         "properties": {"id": {"type": "string"}, "name": {"type": "string"},
                        "domain": _domain_ref,
                        "password_expires_at": {"type": ["string", "null"]}},
         "required": ["id", "name", "domain"], "additionalProperties": False}
_endpoint = {"type": "object",
             "properties": {"id": {"type": "string"}, "interface": {
                 "enum": ["public", "internal", "admin"]},
                 "region": {"type": "string"}, "region_id": {"type": "string"},
                 "url": {"type": "string", "format": "uri"}},
             "required": ["id", "interface", "url"], "additionalProperties": False}
catalog = {"type": "array", "items": {
    "type": "object",
    "properties": {"id": {"type": "string"}, "type": {"type": "string"},
                   "name": {"type": "string"},
                   "endpoints": {"type": "array", "items": _endpoint}},
    "required": ["id", "type", "endpoints"], "additionalProperties": False}}

token = {
    "type": "object",
    "properties": {"token": {
        "type": "object",
        "properties": {
            "audit_ids": {"type": "array", "items": {"type": "string"}},
            "catalog": catalog,
            "expires_at": {"type": "string"},
            "issued_at": {"type": "string"},
            "methods": {"type": "array", "items": {"type": "string"}},
            "project": _project,
            "roles": {"type": "array", "items": _ref},
            "user": _user,
            "is_domain": {"type": "boolean"},
        },
        "required": ["audit_ids", "expires_at", "issued_at", "methods", "user"],
        "additionalProperties": False,
    }},
    "required": ["token"],
    "additionalProperties": False,
}

version = {
    "type": "object",
    "properties": {"version": {
        "type": "object",
        "properties": {
            "id": {"type": "string"}, "status": {"type": "string"},
            "updated": {"type": "string"},
            "links": {"type": "array", "items": {
                "type": "object",
                "properties": {"rel": {"type": "string"}, "href": {"type": "string"},
                               "type": {"type": "string"}},
                "required": ["rel", "href"], "additionalProperties": False}},
            "media-types": {"type": "array", "items": {
                "type": "object",
                "properties": {"base": {"type": "string"}, "type": {"type": "string"}},
                "additionalProperties": False}},
        },
        "required": ["id", "status", "links"],
        "additionalProperties": False,
    }},
    "required": ["version"],
    "additionalProperties": False,
}
