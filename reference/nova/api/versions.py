"""Version discovery and microversions (``nova/api/openstack/api_version_request.py``).

Clients discover the API at ``/`` and ``/v2.1`` and may ask for a microversion with
``OpenStack-API-Version: compute X.Y`` (or the older ``X-OpenStack-Nova-API-Version``).
None means 2.1, ``latest`` the maximum, a malformed one is 400 and one out of range
406, as in Nova.

The maximum is **2.61**: the lowest version with everything the openstack CLI's
first-hour commands use (key pair types 2.2, key pairs of other users 2.10 and
their pagination 2.35, flavor extra specs in the flavor 2.61), and the highest
whose every response field novalab backs with real state. 2.62 would add the
compute host to instance action events and 2.63 trusted image certificates,
which novalab does not keep. Each view asks :func:`is_supported` before it shows
a field a version added (docs/nova.md lists them, field by field).

``/`` lists v2.0 and v2.1 as Nova does; v2.0 is the legacy API (``/v2``), whose
version document novalab serves but whose resources it does not: everything
novalab implements is under ``/v2.1``.
"""

from __future__ import annotations

import functools

from flask import Flask, g, jsonify, request

from novalab.reference.common import exception, validation
from novalab.reference.common.wsgi import NOT_FOUND, json_body, nova_fault

MIN_VERSION = (2, 1)
MAX_VERSION = (2, 61)
UPDATED = "2013-07-23T11:33:21Z"
V20_UPDATED = "2025-07-04T12:00:00Z"
DOCS = "http://docs.openstack.org/"


def _fmt(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def parse(value: str) -> tuple[int, int]:
    major, minor = (int(p) for p in value.split("."))
    return major, minor


def requested() -> tuple[int, int]:
    """The version this request negotiated (2.1 outside a request's negotiation)."""
    return getattr(g, "api_version", MIN_VERSION)


def is_supported(min_version: str, max_version: str | None = None) -> bool:
    """``api_version_request.is_supported(req, min_version)``: does the request's version
    have what ``min_version`` (up to ``max_version``) added?"""
    version = requested()
    if version < parse(min_version):
        return False
    return max_version is None or version <= parse(max_version)


def min_version(first: str):
    """``@wsgi.api_version(first)`` on a route: below ``first`` the method is not there,
    a 404 with no word of why (``VersionNotFoundForAPIMethod`` -> ``HTTPNotFound()``)."""

    def decorator(view):
        @functools.wraps(view)
        def checked(*args, **kwargs):
            if not is_supported(first):
                raise exception.NotFound(NOT_FOUND)
            return view(*args, **kwargs)

        return checked

    return decorator


def schemas(versioned):
    """``@validation.schema(schema, min_version)`` stacked: check the body against the
    schema of the request's version, ``versioned`` being ``(first version, schema)``
    pairs in order. The route carries the 2.1 schema (what a client sending no
    version gets) as ``body_schema``."""
    validators = [(parse(first), validation.validator_for(schema))
                  for first, schema in versioned]

    def decorator(view):
        @functools.wraps(view)
        def checked(*args, **kwargs):
            version = requested()
            validator = [v for first, v in validators if first <= version][-1]
            validation.validate(json_body(), validator)
            return view(*args, **kwargs)

        checked.body_schema = versioned[0][1]
        checked.versioned_schemas = versioned
        return checked

    return decorator


def _versions(base: str) -> dict:
    """The two versions as ``/`` lists them (``build_versions``: self links only)."""
    return {"versions": [
        {"id": "v2.0", "status": "DEPRECATED", "version": "", "min_version": "",
         "updated": V20_UPDATED, "links": [{"rel": "self", "href": f"{base}/v2/"}]},
        {"id": "v2.1", "status": "CURRENT", "version": _fmt(MAX_VERSION),
         "min_version": _fmt(MIN_VERSION), "updated": UPDATED,
         "links": [{"rel": "self", "href": f"{base}/v2.1/"}]},
    ]}


def version_doc(base: str) -> dict:
    """``GET /v2.1/``: the one version in full (``build_version``)."""
    return {"id": "v2.1", "status": "CURRENT", "version": _fmt(MAX_VERSION),
            "min_version": _fmt(MIN_VERSION), "updated": UPDATED,
            "links": [{"rel": "self", "href": f"{base}/v2.1/"},
                      {"rel": "describedby", "type": "text/html", "href": DOCS}],
            "media-types": [{"base": "application/json",
                             "type": "application/vnd.openstack.compute+json;version=2.1"}]}


def v20_doc(base: str) -> dict:
    return {"id": "v2.0", "status": "DEPRECATED", "version": "", "min_version": "",
            "updated": V20_UPDATED,
            "links": [{"rel": "self", "href": f"{base}/v2/"},
                      {"rel": "describedby", "type": "text/html", "href": DOCS}],
            "media-types": [{"base": "application/json",
                             "type": "application/vnd.openstack.compute+json;version=2"}]}


def requested_version() -> tuple[int, int] | str:
    header = request.headers.get("OpenStack-API-Version", "")
    value = None
    for item in header.split(","):
        service, _, version = item.strip().partition(" ")
        if service.lower() == "compute":
            value = version.strip()
    if value is None:
        value = request.headers.get("X-OpenStack-Nova-API-Version")
    if not value:
        return MIN_VERSION
    if value.lower() == "latest":
        return MAX_VERSION
    try:
        return parse(value)
    except ValueError:
        return value


def install(app: Flask) -> None:
    @app.get("/")
    def versions():
        return jsonify(_versions(request.host_url.rstrip("/")))

    @app.get("/v2.1")
    @app.get("/v2.1/")
    def version():
        return jsonify({"version": version_doc(request.host_url.rstrip("/"))})

    @app.get("/v2")
    @app.get("/v2/")
    def version_v20():
        return jsonify({"version": v20_doc(request.host_url.rstrip("/"))})

    @app.route("/v2/<path:rest>", methods=["GET", "POST", "PUT", "DELETE", "PATCH"])
    @validation.raw_body("every request to the legacy v2.0 API is refused unread")
    def legacy_v20(rest):
        return nova_fault(404, "novalab serves the compute API at /v2.1 only, not the legacy "
                               "v2.0 API at /v2 (see README.md, \"Left out, on purpose\").")

    @app.before_request
    def _negotiate():
        version = requested_version()
        if isinstance(version, str):
            return nova_fault(400, f"API Version String {version} is of invalid format. "
                                   "Must be of format MajorNum.MinorNum.")
        if not MIN_VERSION <= version <= MAX_VERSION:
            return nova_fault(406, f"Version {_fmt(version)} is not supported by the API. "
                                   f"Minimum is {_fmt(MIN_VERSION)} and maximum is "
                                   f"{_fmt(MAX_VERSION)}.")
        g.api_version = version
        return None

    @app.after_request
    def _advertise(response):
        version = _fmt(requested())
        response.headers["OpenStack-API-Version"] = f"compute {version}"
        response.headers["X-OpenStack-Nova-API-Version"] = version
        response.headers["Vary"] = "OpenStack-API-Version, X-OpenStack-Nova-API-Version"
        return response
