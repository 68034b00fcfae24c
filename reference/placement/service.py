"""placement's service builder: ``placement-api`` on the port key ``"placement"``.

It needs keystone running (``w.urls["keystone"]``) and validates tokens as the
service user ``placement``. It registers nothing in keystone's catalog: the
deployment does (service type ``placement``, ``{placement}`` as the URL, as
DevStack's ``/placement`` without the prefix).
"""

from __future__ import annotations

from novalab.reference.common.wiring import Wiring
from novalab.reference.placement.app import create_app
from novalab.reference.placement.db import models as _models  # noqa: F401 (tables)
from novalab.reference.placement.objects.allocation import Allocations
from novalab.reference.placement.objects.allocation_candidate import AllocationCandidates
from novalab.reference.placement.objects.resource_provider import ResourceProviders

SERVICE = "placement-api"


def placement(w: Wiring) -> ResourceProviders:
    """Serve the Placement API; returns its resource provider objects (for tests and
    a deployment's own use)."""
    tracer = w.tracer(SERVICE)
    db = w.database(SERVICE)
    providers = ResourceProviders(db, tracer)
    allocations = Allocations(db, providers, tracer)
    candidates = AllocationCandidates(db, tracer)
    w.serve(create_app(providers, allocations, candidates, w.auth(SERVICE, "placement"), tracer,
                       tracer_provider=w.provider(SERVICE)), SERVICE, "placement")
    return providers
