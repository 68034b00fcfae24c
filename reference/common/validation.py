"""Request bodies checked against a JSON Schema before any work is done.

This is what ``nova/api/validation`` does upstream: each API method that takes a
body carries a schema (``@validation.schema(servers.create)``), the body is
validated before the method runs, and a body that does not fit is answered with a
400 whose message names the field and the rule it broke. The method itself may
then trust the types, lengths and ranges it reads.

Use it under the route decorator::

    @app.post("/servers")
    @validation.schema(schemas.create)
    def create():
        body = json_body()   # already validated (Flask caches the parsed JSON)

The schema stays on the view as ``view.body_schema``, so tests can list every
route that takes a body, check that none is missing a schema, and fuzz each route
from its own schema (``routes_with_schemas``).

``parameter_types`` below are the reusable pieces, named after Nova's
(``nova/api/validation/parameter_types.py``).
"""

from __future__ import annotations

import base64
import binascii
import functools
import ipaddress
import json
import re
import uuid

import jsonschema
from flask import Flask
from jsonschema import Draft7Validator, FormatChecker

from novalab.reference.common import exception
from novalab.reference.common.wsgi import json_body

BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})

FORMAT_CHECKER = FormatChecker()


@FORMAT_CHECKER.checks("uuid", raises=ValueError)
def _is_uuid(value) -> bool:
    """A UUID in its canonical or hex form (Nova's ``uuid`` format)."""
    if not isinstance(value, str):
        return True
    return bool(uuid.UUID(value)) and re.fullmatch(r"[0-9a-fA-F-]{32,36}", value) is not None


@FORMAT_CHECKER.checks("cidr", raises=ValueError)
def _is_cidr(value) -> bool:
    if not isinstance(value, str):
        return True
    return ipaddress.ip_network(value, strict=False) is not None and "/" in value


@FORMAT_CHECKER.checks("ip-address", raises=ValueError)
def _is_ip(value) -> bool:
    if not isinstance(value, str):
        return True
    return ipaddress.ip_address(value) is not None


@FORMAT_CHECKER.checks("base64", raises=(ValueError, binascii.Error))
def _is_base64(value) -> bool:
    """Standard base64, padded (Nova's ``base64`` format for ``user_data``)."""
    if not isinstance(value, str):
        return True
    return base64.b64decode(value, validate=True) is not None


@FORMAT_CHECKER.checks("mac-address")
def _is_mac(value) -> bool:
    if not isinstance(value, str):
        return True
    return re.fullmatch(r"[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}", value) is not None


class parameter_types:  # noqa: N801 - named as Nova's module, used as a namespace
    """Schema pieces shared by the APIs (fresh dicts: callers may extend them)."""

    @staticmethod
    def name(max_length: int = 255, min_length: int = 1) -> dict:
        """A printable name with no leading or trailing whitespace."""
        return {"type": "string", "minLength": min_length, "maxLength": max_length,
                "pattern": r"^(?!\s)[^\x00-\x1f\x7f]*(?<!\s)$"}

    @staticmethod
    def description(max_length: int = 255) -> dict:
        return {"type": ["string", "null"], "maxLength": max_length,
                "pattern": r"^[^\x00\x7f]*$"}

    @staticmethod
    def uuid() -> dict:
        return {"type": "string", "format": "uuid"}

    @staticmethod
    def non_negative_integer(maximum: int = 2**31 - 1) -> dict:
        return {"type": "integer", "minimum": 0, "maximum": maximum}

    @staticmethod
    def positive_integer(maximum: int = 2**31 - 1) -> dict:
        return {"type": "integer", "minimum": 1, "maximum": maximum}

    @staticmethod
    def boolean() -> dict:
        return {"type": "boolean"}

    @staticmethod
    def metadata(max_items: int = 128, max_key: int = 255, max_value: int = 255) -> dict:
        """A flat string→string map, as server and image metadata are."""
        return {"type": "object", "maxProperties": max_items,
                "propertyNames": {"minLength": 1, "maxLength": max_key},
                "additionalProperties": {"type": "string", "maxLength": max_value}}


def _field_path(error: jsonschema.ValidationError) -> str:
    """The field that broke a rule, named as Nova names it: the last part of its path."""
    return str(error.absolute_path[-1]) if error.absolute_path else ""


def _message(error: jsonschema.ValidationError) -> str:
    """Nova's wording: which field, which value, which rule."""
    path = _field_path(error)
    detail = error.message
    if len(detail) > 300:
        detail = detail[:300] + "…"
    if error.validator == "additionalProperties":
        return f"Additional properties are not allowed ({detail.split('(')[-1]}"
    if not path:
        return f"Invalid input for the request body. {detail}"
    value = repr(error.instance)
    if len(value) > 80:
        value = value[:80] + "…"
    return f"Invalid input for field/attribute {path}. Value: {value}. {detail}"


@functools.lru_cache(maxsize=1024)
def _check_schema(text: str) -> None:
    Draft7Validator.check_schema(json.loads(text))


def validator_for(body_schema: dict) -> Draft7Validator:
    """A validator for ``body_schema`` (the schema itself is checked first).

    Checking walks the schema against Draft 7's metaschema, about 2 ms a schema, and a
    cloud builds 77 validators as it starts: each schema's text is checked once a process.
    """
    _check_schema(json.dumps(body_schema, sort_keys=True))
    return Draft7Validator(body_schema, format_checker=FORMAT_CHECKER)


def validate(body, body_schema: dict | Draft7Validator,
             error: type[exception.NovaLabException] = exception.ValidationError) -> None:
    """Raise ``error`` (a 400) with the first, most relevant problem in ``body``."""
    validator = body_schema if isinstance(body_schema, Draft7Validator) \
        else validator_for(body_schema)
    best = jsonschema.exceptions.best_match(validator.iter_errors(body))
    if best is not None:
        raise error(detail=_message(best))


def schema(body_schema: dict, error: type[exception.NovaLabException] = exception.ValidationError,
           loader=json_body):
    """Decorate a view so its JSON body is validated before the view runs.

    ``error`` lets a service raise its own 400 type (Neutron's, Keystone's) so the
    fault body has that service's shape; ``loader`` reads the body (the default
    insists on a JSON object; Glance's JSON-patch bodies are lists).
    """
    validator = validator_for(body_schema)

    def decorator(view):
        @functools.wraps(view)
        def checked(*args, **kwargs):
            validate(loader(), validator, error)
            return view(*args, **kwargs)

        checked.body_schema = body_schema
        return checked

    return decorator


def raw_body(reason: str):
    """Mark a view whose body is not JSON (image data), saying why no schema applies."""

    def decorator(view):
        view.raw_body_reason = reason
        return view

    return decorator


def routes_with_schemas(app: Flask) -> list[tuple[str, str, dict | None]]:
    """``(method, rule, schema-or-None)`` for every route of ``app`` that takes a JSON body.

    Views marked :func:`raw_body` are left out; a ``None`` schema is a route that
    takes a body nobody checks (a test fails on it).
    """
    found = []
    for rule in app.url_map.iter_rules():
        view = app.view_functions.get(rule.endpoint)
        if getattr(view, "raw_body_reason", None):
            continue
        for method in sorted((rule.methods or set()) & BODY_METHODS):
            found.append((method, rule.rule, getattr(view, "body_schema", None)))
    return found
