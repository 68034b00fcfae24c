"""Version discovery and microversions (``nova/api/openstack/api_version_request.py``).

Clients discover the API at ``/`` and ``/v2.1`` and may ask for a microversion with
``OpenStack-API-Version: compute X.Y``. novalab implements the 2.1 behaviour and
says so: it advertises 2.1 as both minimum and maximum, answers ``latest`` with
2.1, and refuses a higher version with 406 as Nova does.
"""

from __future__ import annotations

from flask import Flask, g, jsonify, request

from novalab.reference.common.wsgi import nova_fault

MIN_VERSION = (2, 1)
MAX_VERSION = (2, 1)
UPDATED = "2013-07-23T11:33:21Z"


def _fmt(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def version_doc(base: str) -> dict:
    return {"id": "v2.1", "status": "CURRENT", "version": _fmt(MAX_VERSION),
            "min_version": _fmt(MIN_VERSION), "updated": UPDATED,
            "links": [{"rel": "self", "href": f"{base}/v2.1/"},
                      {"rel": "describedby", "type": "text/html",
                       "href": "https://docs.openstack.org/"}],
            "media-types": [{"base": "application/json",
                             "type": "application/vnd.openstack.compute+json;version=2.1"}]}


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
        major, minor = (int(p) for p in value.split("."))
    except ValueError:
        return value
    return major, minor


def install(app: Flask) -> None:
    @app.get("/")
    def versions():
        base = request.host_url.rstrip("/")
        return jsonify({"versions": [version_doc(base)]})

    @app.get("/v2.1")
    @app.get("/v2.1/")
    def version():
        return jsonify({"version": version_doc(request.host_url.rstrip("/"))})

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
        version = _fmt(getattr(g, "api_version", MIN_VERSION))
        response.headers["OpenStack-API-Version"] = f"compute {version}"
        response.headers["X-OpenStack-Nova-API-Version"] = version
        response.headers["Vary"] = "OpenStack-API-Version, X-OpenStack-Nova-API-Version"
        return response
