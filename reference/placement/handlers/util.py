"""What every handler shares (``placement/util.py``): bodies in, JSON out, errors as
placement writes them.

An error is ``{"errors": [{"status", "title", "detail", "code", "request_id"}]}``
(the API working group's guideline): ``detail`` is webob's explanation of the
status, a blank line, then the message, as upstream's ``json_error_formatter``
leaves it; ``code`` appears from microversion 1.23; a 406 for a version out of
range also names ``min_version`` and ``max_version``. The 401 of the auth
middleware keeps keystonemiddleware's own shape, as upstream.
"""

from __future__ import annotations

import functools
import json
from datetime import UTC, datetime

import jsonschema
from flask import Response, g, request

from novalab.reference.common import validation
from novalab.reference.placement import errors, exception, microversion, schemas

TITLES = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
          405: "Method Not Allowed", 406: "Not Acceptable", 409: "Conflict",
          413: "Request Entity Too Large", 415: "Unsupported Media Type",
          500: "Internal Server Error", 503: "Service Unavailable"}
# webob's explanation of each status, which leads every detail.
EXPLANATIONS = {
    400: "The server could not comply with the request since it is either malformed or "
         "otherwise incorrect.",
    403: "Access was denied to this resource.",
    404: "The resource could not be found.",
    405: "The method is not allowed for this resource.",
    406: "The resource could not be generated that was acceptable to your browser.",
    409: "There was a conflict when trying to complete your request.",
    413: "The request is larger than the server is willing or able to process.",
    415: "The request media type is not supported by this server.",
    500: "The server has either erred or is incapable of performing the requested operation.",
    503: "The server is currently unavailable. Please try again at a later time.",
}


def fault(status: int, message: str, error_code: str | None = None) -> Response:
    """Placement's error body for ``status``."""
    error = {"status": status, "title": TITLES.get(status, "Error"),
             "detail": f"{EXPLANATIONS.get(status, '')}\n\n {message}  "}
    version = g.get("api_version")
    if version is not None and version >= microversion.ERROR_CODES:
        error["code"] = error_code or errors.DEFAULT
    if g.get("request_id"):
        error["request_id"] = g.request_id
    if status == 406 and version is None:   # the version itself was refused
        error["max_version"] = microversion.fmt(microversion.MAX_VERSION)
        error["min_version"] = microversion.fmt(microversion.MIN_VERSION)
    return Response(json.dumps({"errors": [error]}), status=status,
                    mimetype="application/json")


def send(body: dict | None, status: int = 200, last_modified: datetime | None = None,
         location: str | None = None) -> Response:
    """A JSON answer (none for a 204); from 1.15 with ``last-modified`` and
    ``cache-control: no-cache``."""
    response = Response(json.dumps(body) if body is not None else None, status=status,
                        mimetype="application/json" if body is not None else None)
    if location:
        response.headers["Location"] = location
    if body is not None and microversion.matches(microversion.LAST_MODIFIED):
        response.last_modified = last_modified or datetime.now(UTC)
        response.cache_control.no_cache = True
    return response


def newest(*times: datetime | None) -> datetime | None:
    found = [t for t in times if t is not None]
    return max(found).replace(tzinfo=UTC) if found else None


def body_schemas(table: dict):
    """Declare the schemas (``{first version: schema}``) of a handler's body.

    :func:`extract_json` validates against them when the handler reads its body
    (after its policy check, as upstream); the newest is ``body_schema`` on the
    view, where tests find every route that takes a body.
    """
    def decorate(func):
        @functools.wraps(func)
        def with_schemas(*args, **kwargs):
            g.body_schemas = table
            return func(*args, **kwargs)

        with_schemas.body_schema = schemas.newest(table)
        return with_schemas

    return decorate


def extract_json() -> dict:
    """The request's JSON body, validated for the request's version (``extract_json``)."""
    if request.mimetype != "application/json":
        raise exception.UnsupportedMediaType(
            f"The media type {request.mimetype or 'None'} is not supported, "
            "use application/json")
    try:
        data = json.loads(request.get_data(as_text=True))
        json.dumps(data, ensure_ascii=False).encode("utf-8")   # no lone surrogates
    except (ValueError, UnicodeError) as exc:
        raise exception.BadRequest(f"Malformed JSON: {exc}") from exc
    except RecursionError as exc:  # thousands of nested arrays or objects
        raise exception.BadRequest("Malformed JSON: nested too deeply") from exc
    schema = schemas.schema_for(g.body_schemas, microversion.requested())
    try:
        best = jsonschema.exceptions.best_match(
            validation.validator_for(schema).iter_errors(data))
    except RecursionError as exc:
        raise exception.BadRequest("JSON does not validate: nested too deeply") from exc
    if best is not None:
        raise exception.BadRequest(f"JSON does not validate: {best.message}")
    return data


def validate_query_params(table: dict) -> dict[str, str]:
    """The query string as a dict, validated for the request's version."""
    params = request.args.to_dict()
    schema = schemas.schema_for(table, microversion.requested())
    best = jsonschema.exceptions.best_match(
        validation.validator_for(schema).iter_errors(params))
    if best is not None:
        raise exception.BadRequest(f"Invalid query string parameters: {best.message}")
    return params


def normalize_resources_qs_param(value: str) -> dict[str, int]:
    """``VCPU:2,MEMORY_MB:1024`` -> ``{"VCPU": 2, "MEMORY_MB": 1024}``, or a 400."""
    form = "?resources=VCPU:2,MEMORY_MB:1024"
    if not value.strip():
        raise exception.BadRequest("Badly formed resources parameter. Expected resources "
                                   f"query string parameter in form: {form}. "
                                   "Got: empty string.")
    result = {}
    for item in value.split(","):
        name, colon, amount = item.partition(":")
        if not colon or ":" in amount:
            raise exception.BadRequest("Badly formed resources parameter. Expected resources "
                                       f"query string parameter in form: {form}. Got: {item}.")
        try:
            number = int(amount)
        except ValueError:
            raise exception.BadRequest(f"Requested resource {name} expected positive integer "
                                       f"amount. Got: {amount}.") from None
        if number < 1:
            raise exception.BadRequest(f"Requested resource {name} requires amount >= 1. "
                                       f"Got: {number}.")
        result[name] = number
    return result


def normalize_member_of_qs_param(value: str) -> list[str]:
    """``in:UUID1,UUID2`` or ``UUID``: the aggregates, any of which will do."""
    if value.startswith("in:"):
        value = value[3:]
    elif "," in value:
        raise exception.BadRequest("Multiple values for 'member_of' must be prefixed with "
                                   f"the 'in:' keyword. Got: {value}")
    uuids = value.split(",")
    if not all(_is_uuid(u) for u in uuids):
        raise exception.BadRequest("Invalid query string parameters: Expected 'member_of' "
                                   f"parameter to contain valid UUID(s). Got: {value}")
    return uuids


def check_traits(value: str) -> None:
    """Traits are not kept here, so any trait named is one that does not exist."""
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise exception.BadRequest("Invalid query string parameters: Expected 'required' "
                                   "parameter value of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. "
                                   f"Got: {value}")
    raise exception.BadRequest(f"No such trait(s): {', '.join(n.lstrip('!') for n in names)}.")


def _is_uuid(value: str) -> bool:
    return validation.FORMAT_CHECKER.conforms(value, "uuid")


def resource_provider_url(uuid: str) -> str:
    return f"{request.script_root}/resource_providers/{uuid}"
