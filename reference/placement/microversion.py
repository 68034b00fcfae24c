"""Microversions (``placement/microversion.py`` and microversion-parse's middleware).

A client asks for one with ``OpenStack-API-Version: placement 1.X``; none means
the minimum, 1.0, and ``latest`` the maximum. A malformed version is a 400, a
version outside the range a 406 whose error carries ``min_version`` and
``max_version``: that is how osc-placement negotiates (it asks ``GET /`` at
1.29, its newest version with no gap, and falls back to the ``max_version`` a
406 names). Every answer names the version it was served at.

The range is **1.0 to 1.29**: what osc-placement asks for first, and what the
scheduler's claim needs (consumer generations, 1.28). Within it, novalab honours
every change to the routes it has (list below); the routes it does not have at
all (aggregates, traits, custom resource classes, reshaper) are 404 at every
version, as an unknown URL is.
"""

from __future__ import annotations

import functools
import re

from flask import Flask, g, request

from novalab.reference.placement import exception

SERVICE_TYPE = "placement"
MIN_VERSION = (1, 0)
MAX_VERSION = (1, 29)
HEADER = "OpenStack-API-Version"

# The changes novalab honours (rest_api_version_history.rst).
RESOURCE_CLASSES = (1, 2)           # GET /resource_classes
MEMBER_OF = (1, 3)                  # ?member_of= on GET /resource_providers
RP_RESOURCES = (1, 4)               # ?resources= on GET /resource_providers
DELETE_INVENTORIES = (1, 5)         # DELETE /resource_providers/{uuid}/inventories
ALLOCATIONS_PROJECT_USER = (1, 8)   # PUT /allocations needs project_id and user_id
USAGES = (1, 9)                     # GET /usages?project_id=
ALLOCATION_CANDIDATES = (1, 10)     # GET /allocation_candidates
RP_ALLOCATIONS_LINK = (1, 11)       # 'allocations' in a provider's links
ALLOCATIONS_DICT = (1, 12)          # PUT /allocations in the dict form GET answers
POST_ALLOCATIONS = (1, 13)          # POST /allocations: several consumers at once
NESTED_PROVIDERS = (1, 14)          # parent/root provider, ?in_tree=
LAST_MODIFIED = (1, 15)             # last-modified and cache-control headers
CANDIDATES_LIMIT = (1, 16)          # ?limit= on allocation candidates
CANDIDATES_TRAITS = (1, 17)         # ?required= and traits in provider summaries
RP_REQUIRED = (1, 18)               # ?required= on GET /resource_providers
RP_CREATE_RETURNS_BODY = (1, 20)    # POST /resource_providers answers 200 with the provider
CANDIDATES_MEMBER_OF = (1, 21)      # ?member_of= on allocation candidates
ERROR_CODES = (1, 23)               # 'code' in error bodies
GRANULAR = (1, 25)                  # resourcesN / requiredN / member_ofN, group_policy
RESERVED_EQUALS_TOTAL = (1, 26)     # reserved may equal total
SUMMARIES_ALL_RESOURCES = (1, 27)   # provider summaries list every inventory
CONSUMER_GENERATION = (1, 28)       # consumer generations in allocations
NESTED_CANDIDATES = (1, 29)         # candidates across a provider tree; root/parent in summaries

_VERSION = re.compile(r"^\s*(\d+)\.(\d+)\s*$")


def fmt(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def requested_header() -> str | None:
    """The placement version asked for in any ``OpenStack-API-Version`` header."""
    found = None
    for header in request.headers.getlist(HEADER):
        for item in header.split(","):
            service, _, version = item.strip().partition(" ")
            if service.lower() == SERVICE_TYPE:
                found = version.strip()
    return found


def extract_version() -> tuple[int, int]:
    """The version to serve: 400 for a malformed one, 406 outside the range."""
    value = requested_header() or fmt(MIN_VERSION)
    if value.lower() == "latest":
        return MAX_VERSION
    match = _VERSION.match(value)
    if not match:
        raise exception.BadRequest(f"Invalid microversion: invalid version string: {value}")
    version = (int(match[1]), int(match[2]))
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise exception.NotAcceptable(
            f"Invalid microversion: Unacceptable version header: {value}")
    return version


def requested() -> tuple[int, int]:
    return g.get("api_version", MIN_VERSION)


def matches(version: tuple[int, int]) -> bool:
    """Whether the request's version is ``version`` or later (upstream ``matches``)."""
    return requested() >= version


def version_handler(min_version: tuple[int, int], status: int = 404):
    """A handler that exists from ``min_version`` on; earlier, ``status`` (404 or 405)."""
    error = exception.NotFound if status == 404 else exception.MethodNotAllowed

    def decorate(func):
        @functools.wraps(func)
        def versioned(*args, **kwargs):
            if not matches(min_version):
                raise error("" if status == 404 else None)
            return func(*args, **kwargs)

        return versioned

    return decorate


def install(app: Flask) -> None:
    """Pick the version of each request (after auth, as upstream's middleware order
    has it) and name it on the answer."""

    @app.before_request
    def _negotiate():
        g.api_version = extract_version()

    @app.after_request
    def _advertise(response):
        if "api_version" in g:
            response.headers[HEADER] = f"{SERVICE_TYPE} {fmt(g.api_version)}"
            response.headers["Vary"] = HEADER
        return response
