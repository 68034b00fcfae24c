"""Availability zones (``nova/availability_zones.py``): which zone each service is in.

Upstream a compute host's zone is the ``availability_zone`` metadata of the host
aggregates it is in, and ``default_availability_zone`` (``nova``) when none says;
every other service (scheduler, conductor) is in ``internal_service_availability_zone``
(``internal``), which the zone list hides from users. novalab has no host
aggregates, so every compute host is in ``nova``.
"""

from __future__ import annotations

DEFAULT_AVAILABILITY_ZONE = "nova"  # CONF.default_availability_zone
INTERNAL_SERVICE_AVAILABILITY_ZONE = "internal"  # CONF.internal_service_availability_zone


def set_availability_zones(services: list[dict]) -> list[dict]:
    """Copies of ``services``, each with its ``availability_zone``."""
    return [dict(s, availability_zone=DEFAULT_AVAILABILITY_ZONE if s["topic"] == "compute"
                 else INTERNAL_SERVICE_AVAILABILITY_ZONE) for s in services]


def get_availability_zones(services: list[dict]) -> tuple[list[str], list[str]]:
    """(available, not available) zone names, sorted: a zone is available when one of
    its services is enabled (``_get_availability_zones``); ``services`` have zones set."""
    available = {s["availability_zone"] for s in services if not s["disabled"]}
    not_available = {s["availability_zone"] for s in services
                     if s["disabled"] and s["availability_zone"] not in available}
    return sorted(available), sorted(not_available)


def get_instance_availability_zone(instance: dict) -> str:
    """``get_instance_availability_zone``: the zone of the instance's host; the zone it
    asked for (or none, ``""`` in the view) while it has no host."""
    if instance.get("host"):
        return DEFAULT_AVAILABILITY_ZONE
    return instance.get("availability_zone") or ""
