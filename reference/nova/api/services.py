"""``os-services`` (``nova/api/openstack/compute/services.py``): the nova services.

``GET /os-services`` lists every service with a ``services`` row (nova-compute on
each host, nova-scheduler, nova-conductor), filtered by ``host`` and ``binary``:
its zone, **up** or **down** from its heartbeat (``servicegroup``), **enabled**
or **disabled**, and why. Only nova-compute services can be changed, and that is
what the scheduler reads: a disabled host gets no new servers (ComputeFilter).

* 2.1: ``PUT /os-services/enable``, ``/disable``, ``/disable-log-reason`` with
  ``host`` and ``binary`` in the body; 2.11 adds ``/force-down`` and
  ``forced_down`` in the list;
* 2.53: ids are uuids, and ``PUT /os-services/{uuid}`` takes ``status``,
  ``disabled_reason`` and ``forced_down``.

``DELETE /os-services/{id}`` refuses (409) a compute service that still hosts
instances; otherwise the service and its compute nodes go (their resource
providers in placement stay: novalab's report client cannot delete one yet). Admins only.
"""

from __future__ import annotations

import re

from flask import Response, g, jsonify

from novalab.reference.common import exception
from novalab.reference.common.wsgi import json_body
from novalab.reference.nova import availability_zones, policy
from novalab.reference.nova import exception as nova_exception
from novalab.reference.nova.api import versions
from novalab.reference.nova.api.keypairs import _time, _validated_query
from novalab.reference.nova.api.schemas import admin_views as schema
from novalab.reference.nova.api.schemas.parameter_types import is_true
from novalab.reference.nova.db import api as db_api
from novalab.reference.nova.servicegroup import get_updated_time, service_is_up
from novalab.tracing.spans import upstream

_SERVICES = "nova/api/openstack/compute/services.py"
POLICY = "os_compute_api:os-services:%s"
_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?"
                   r"[0-9a-fA-F]{12}$")
_API_SERVICES = ("nova-osapi_compute", "nova-metadata")


class ServiceController:
    def __init__(self, db, tracer):
        self.db = db
        self.tracer = tracer

    def _detail(self, service: dict, additional_fields=()) -> dict:
        """``_get_service_detail``."""
        if "availability_zone" not in service:
            service = availability_zones.set_availability_zones([service])[0]
        body = {"binary": service["binary"], "host": service["host"],
                "id": service["uuid"] if versions.is_supported("2.53") else service["id"],
                "zone": service["availability_zone"],
                "status": "disabled" if service["disabled"] else "enabled",
                "state": "up" if service_is_up(service) else "down",
                "updated_at": _time(get_updated_time(service)),
                "disabled_reason": service["disabled_reason"]}
        for field in additional_fields:
            body[field] = service[field]
        return body

    @upstream(_SERVICES, "ServiceController.index")
    def index(self):
        query = _validated_query(schema.SERVICES_INDEX_QUERY)
        policy.authorize(g.context, POLICY % "list", {})
        services = [s for s in availability_zones.set_availability_zones(
            db_api.service_get_all(self.db)) if s["binary"] not in _API_SERVICES]
        # ``req.GET['host']``: the last value given.
        for key in ("host", "binary"):
            if query.get(key) and query[key][-1]:
                services = [s for s in services if s[key] == query[key][-1]]
        extra = ("forced_down",) if versions.is_supported("2.11") else ()
        return jsonify({"services": [self._detail(s, extra) for s in services]})

    @upstream(_SERVICES, "ServiceController.update")
    def update(self, service_id: str):
        body = json_body()  # checked against its version's schema
        if versions.is_supported("2.53"):
            return self._update_v253(service_id, body)
        return self._update_v21(service_id, body)

    def _update_v21(self, action: str, body: dict):
        policy.authorize(g.context, POLICY % "update", {})
        actions = {"enable": self._enable, "disable": self._disable,
                   "disable-log-reason": self._disable_log_reason}
        if versions.is_supported("2.11"):
            actions["force-down"] = self._forced_down
        if action not in actions:
            raise exception.NotFound("Unknown action")
        return jsonify(actions[action](body))

    def _enable(self, body: dict) -> dict:
        return self._enable_disable(body, "enabled", {"disabled": False,
                                                      "disabled_reason": None})

    def _disable(self, body: dict, reason: str | None = None) -> dict:
        return self._enable_disable(body, "disabled", {"disabled": True,
                                                       "disabled_reason": reason})

    def _disable_log_reason(self, body: dict) -> dict:
        if "disabled_reason" not in body:
            raise exception.Invalid("Missing disabled reason field")
        return self._disable(body, body["disabled_reason"])

    def _enable_disable(self, body: dict, status: str, values: dict) -> dict:
        answer = {"host": body["host"], "binary": body["binary"], "status": status}
        if values.get("disabled_reason"):
            answer["disabled_reason"] = values["disabled_reason"]
        self._update(body["host"], body["binary"], values)
        return {"service": answer}

    def _forced_down(self, body: dict) -> dict:
        if "forced_down" not in body:
            raise exception.Invalid("Missing forced_down field")
        forced_down = is_true(body["forced_down"])
        self._update(body["host"], body["binary"], {"forced_down": forced_down})
        return {"service": {"host": body["host"], "binary": body["binary"],
                            "forced_down": forced_down}}

    def _update(self, host: str, binary: str, values: dict) -> None:
        if binary != "nova-compute":
            raise exception.Invalid(f"Updating a {binary} service is not supported. Only "
                                    "nova-compute services can be updated.")
        try:
            service = db_api.service_get_by_host_and_binary(self.db, host, binary)
        except nova_exception.HostBinaryNotFound as exc:
            raise exception.NotFound(exc.format_message()) from exc
        db_api.service_update(self.db, service["id"], values)

    def _update_v253(self, service_id: str, body: dict):
        if not _UUID.match(service_id):
            raise exception.Invalid(f"Invalid uuid {service_id[:255]}")
        policy.authorize(g.context, POLICY % "update", {})
        service = db_api.service_get(self.db, uuid=service_id.lower())
        if service["binary"] != "nova-compute":
            raise exception.Invalid(f"Updating a {service['binary']} service is not "
                                    "supported. Only nova-compute services can be updated.")
        values = {}
        if "status" in body:
            if body["status"] == "enabled":
                if body.get("disabled_reason"):
                    raise exception.Invalid("Specifying 'disabled_reason' with status "
                                            "'enabled' is invalid.")
                values.update(disabled=False, disabled_reason=None)
            else:
                values.update(disabled=True, disabled_reason=body.get("disabled_reason"))
        if "forced_down" in body:
            values["forced_down"] = is_true(body["forced_down"])
        if not values:
            raise exception.Invalid("No updates were requested. Fields 'status' or "
                                    "'forced_down' should be specified.")
        service = db_api.service_update(self.db, service["id"], values)
        return jsonify({"service": self._detail(service, ("forced_down",))})

    @upstream(_SERVICES, "ServiceController.delete")
    def delete(self, service_id: str):
        policy.authorize(g.context, POLICY % "delete", {})
        if versions.is_supported("2.53"):
            if not _UUID.match(service_id):
                raise exception.Invalid(f"Invalid uuid {service_id[:255]}")
            lookup = {"uuid": service_id.lower()}
        else:
            if not re.match(r"^-?[0-9]+$", service_id):
                raise exception.Invalid(f"id must be an integer, not {service_id[:255]!r}")
            lookup = {"service_id": int(service_id)}
        try:
            service = db_api.service_get(self.db, **lookup)
        except exception.ServiceNotFound as exc:
            raise exception.NotFound(f"Service {service_id} not found.") from exc
        if service["binary"] == "nova-compute":
            if db_api.instance_count_by_host(self.db, service["host"]):
                raise exception.Conflict("Unable to delete compute service that is hosting "
                                         "instances. Migrate or delete the instances first.")
        db_api.service_destroy(self.db, service["id"])
        return Response(status=204)


def register(app, db, tracer) -> None:
    controller = ServiceController(db, tracer)
    app.add_url_rule("/v2.1/os-services", "services_index", controller.index)
    app.add_url_rule("/v2.1/os-services/<service_id>", "services_update",
                     versions.schemas(schema.SERVICES_UPDATE)(controller.update),
                     methods=["PUT"])
    app.add_url_rule("/v2.1/os-services/<service_id>", "services_delete", controller.delete,
                     methods=["DELETE"])
