"""Version discovery and microversions (``cinder/api/versions.py``,
``cinder/api/openstack/api_version_request.py``).

``GET /`` answers 300 Multiple Choices with the one API, ``v3.0``; ``GET /v3/``
answers the same document (200, behind auth as upstream). A client asks for a
microversion with ``OpenStack-API-Version: volume 3.X``; none means 3.0,
``latest`` the maximum, a malformed one is 400, one out of range 406.

The maximum is **3.44**, the lowest version with everything Nova's attach flow
uses: the attachments API (3.27) and ``os-complete`` (3.44); Nova asks for 3.44
on every attachment call. The changes between 3.0 and 3.44 that touch what
novalab serves are honoured: the messages API (3.3), the strict ``bootable``
filter (3.2), ``group_id`` in volume details (3.13), ``provider_id`` for admins
(3.21), attachments (3.27) and ``os-complete`` (3.44). The resources novalab does
not have at all (snapshots, backups, groups, types, clusters, ...) are 404 at
every version, as an unknown URL is.
"""

from __future__ import annotations

from flask import Flask, g, jsonify, request

from novalab.reference.cinder import exception

MIN_VERSION = (3, 0)
MAX_VERSION = (3, 44)
UPDATED = "2017-09-01T00:00:00Z"    # around the Queens release, which shipped 3.44

MESSAGES = (3, 3)
VOLUME_LIST_BOOTABLE = (3, 2)
GROUP_VOLUME = (3, 13)
VOLUME_DETAIL_PROVIDER_ID = (3, 21)
NEW_ATTACH = (3, 27)
NEW_ATTACH_COMPLETION = (3, 44)


def fmt(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def version_doc(base: str) -> dict:
    return {"id": "v3.0", "status": "CURRENT", "version": fmt(MAX_VERSION),
            "min_version": fmt(MIN_VERSION), "updated": UPDATED,
            "links": [{"rel": "describedby", "type": "text/html",
                       "href": "https://docs.openstack.org/"},
                      {"rel": "self", "href": f"{base}/v3/"}],
            "media-types": [{"base": "application/json",
                             "type": "application/vnd.openstack.volume+json;version=3"}]}


def parse(header: str) -> tuple[int, int] | None:
    """The volume microversion an ``OpenStack-API-Version`` header asks for."""
    value = None
    for item in header.split(","):
        service, _, version = item.strip().partition(" ")
        if service.lower() == "volume":
            value = version.strip()
    if not value:
        return None
    if value.lower() == "latest":
        return MAX_VERSION
    try:
        major, minor = (int(p) for p in value.split("."))
    except ValueError:
        raise exception.InvalidAPIVersionString(version=value) from None
    return major, minor


def requested() -> tuple[int, int]:
    return getattr(g, "api_version", MIN_VERSION)


def require(version: tuple[int, int]) -> None:
    """Methods newer than the request's version do not exist for it (404)."""
    if requested() < version:
        raise exception.VersionNotFoundForAPIMethod()


def install(app: Flask) -> None:
    @app.get("/")
    def all_versions():
        response = jsonify({"versions": [version_doc(request.host_url.rstrip("/"))]})
        response.status_code = 300
        return response

    @app.get("/v3/")
    @app.get("/v3")
    def index():
        return jsonify({"versions": [version_doc(request.host_url.rstrip("/"))]})

    @app.before_request
    def _negotiate():
        if not request.path.startswith("/v3"):
            return None
        version = parse(request.headers.get("OpenStack-API-Version", "")) or MIN_VERSION
        g.api_version = version
        if not MIN_VERSION <= version <= MAX_VERSION:
            g.api_version = MIN_VERSION
            raise exception.InvalidGlobalAPIVersion(req_ver=fmt(version),
                                                    min_ver=fmt(MIN_VERSION),
                                                    max_ver=fmt(MAX_VERSION))
        return None

    @app.after_request
    def _advertise(response):
        if request.path.startswith("/v3"):
            response.headers["OpenStack-API-Version"] = f"volume {fmt(requested())}"
            response.headers["Vary"] = "OpenStack-API-Version"
        return response
