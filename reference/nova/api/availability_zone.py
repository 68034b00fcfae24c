"""``os-availability-zone`` (``nova/api/openstack/compute/availability_zone.py``).

``GET /os-availability-zone`` names the zones servers can be booted in, for
anyone: each with ``zoneState.available`` (one of its services enabled), never
the ``internal`` zone of the non-compute services. ``/detail`` (admins) adds,
per zone, its hosts and their services: ``available`` (up, from the
heartbeat) and ``active`` (enabled), with the time of their last report.
"""

from __future__ import annotations

from flask import g, jsonify

from novalab.reference.nova import availability_zones, policy
from novalab.reference.nova.api.keypairs import _time, _validated_query
from novalab.reference.nova.api.schemas import admin_views as schema
from novalab.reference.nova.db import api as db_api
from novalab.reference.nova.servicegroup import service_is_up
from novalab.tracing.spans import upstream

_AZ = "nova/api/openstack/compute/availability_zone.py"
POLICY = "os_compute_api:os-availability-zone:%s"
_API_SERVICES = ("nova-osapi_compute", "nova-metadata")


class AvailabilityZoneController:
    def __init__(self, db, tracer):
        self.db = db
        self.tracer = tracer

    def _services(self) -> list[dict]:
        return availability_zones.set_availability_zones(db_api.service_get_all(self.db))

    @staticmethod
    def _filtered(zones: list[str], is_available: bool) -> list[dict]:
        return [{"zoneName": zone, "zoneState": {"available": is_available}, "hosts": None}
                for zone in zones
                if zone != availability_zones.INTERNAL_SERVICE_AVAILABILITY_ZONE]

    @upstream(_AZ, "AvailabilityZoneController.index")
    def index(self):
        _validated_query(schema.AVAILABILITY_ZONE_QUERY)
        policy.authorize(g.context, POLICY % "list", {})
        available, not_available = availability_zones.get_availability_zones(self._services())
        return jsonify({"availabilityZoneInfo": self._filtered(available, True)
                        + self._filtered(not_available, False)})

    @upstream(_AZ, "AvailabilityZoneController.detail")
    def detail(self):
        """``_describe_availability_zones_verbose``: enabled services by zone and host."""
        _validated_query(schema.AVAILABILITY_ZONE_QUERY)
        policy.authorize(g.context, POLICY % "detail", {})
        services = self._services()
        available, not_available = availability_zones.get_availability_zones(services)
        hosts: dict[str, dict[str, dict]] = {}
        for service in services:
            if service["disabled"] or service["binary"] in _API_SERVICES:
                continue
            zone = hosts.setdefault(service["availability_zone"], {})
            zone.setdefault(service["host"], {})[service["binary"]] = {
                "available": service_is_up(service), "active": not service["disabled"],
                "updated_at": _time(service["updated_at"])}
        return jsonify({"availabilityZoneInfo": [
            {"zoneName": zone, "zoneState": {"available": True},
             "hosts": hosts.get(zone, {})} for zone in available] + [
            {"zoneName": zone, "zoneState": {"available": False}, "hosts": None}
            for zone in not_available]})


class AggregateController:
    """``GET /os-aggregates``: novalab has no host aggregates (``openstack hypervisor
    show`` asks for them, to say which the hypervisor is in)."""

    def __init__(self, tracer):
        self.tracer = tracer

    @upstream("nova/api/openstack/compute/aggregates.py", "AggregateController.index")
    def index(self):
        policy.authorize(g.context, "os_compute_api:os-aggregates:index", {})
        return jsonify({"aggregates": []})


def register(app, db, tracer) -> None:
    controller = AvailabilityZoneController(db, tracer)
    app.add_url_rule("/v2.1/os-availability-zone", "availability_zone_index",
                     controller.index)
    app.add_url_rule("/v2.1/os-availability-zone/detail", "availability_zone_detail",
                     controller.detail)
    app.add_url_rule("/v2.1/os-aggregates", "aggregates_index",
                     AggregateController(tracer).index)
