"""``POST /os-server-external-events`` (``server_external_events.py``): services tell Nova.

Neutron posts ``network-vif-plugged`` when a port is wired, Cinder
``volume-extended`` and so on. Each event names an instance; nova-api looks the
instances up, casts the events to their hosts, and answers per event: 200 for
delivered, 404 for an unknown instance, 422 for one not yet on a host. The
overall status is 200 if every event was accepted, 207 if some were, and 404 if
none was.
"""

from __future__ import annotations

from flask import g, jsonify

from novalab.reference.common import exception, validation
from novalab.reference.common.db import Database
from novalab.reference.common.wsgi import json_body
from novalab.reference.nova import policy
from novalab.reference.nova.api.schemas import server_external_events as schema
from novalab.reference.nova.compute.api import API as ComputeAPI
from novalab.reference.nova.db import api as db_api
from novalab.tracing.spans import upstream


class ServerExternalEventsController:
    def __init__(self, db: Database, compute_api: ComputeAPI, tracer):
        self.db = db
        self.compute_api = compute_api
        self.tracer = tracer

    @upstream("nova/api/openstack/compute/server_external_events.py",
              "ServerExternalEventsController.create")
    def create(self):
        context = g.context
        policy.authorize(context, "os_compute_api:os-server-external-events:create")
        events = json_body()["events"]  # checked against schema.create
        accepted, instances, results = [], {}, []
        for event in events:
            result = dict(event, status=event.get("status", "completed"))
            try:
                instance = instances.get(event["server_uuid"]) or \
                    db_api.instance_get_by_uuid(self.db, event["server_uuid"])
            except exception.InstanceNotFound:
                result["code"] = 404
            else:
                if instance.get("host"):
                    instances[instance["uuid"]] = instance
                    accepted.append(result)
                    result["code"] = 200
                else:
                    result["code"] = 422
            results.append(result)
        if accepted:
            self.compute_api.external_instance_event(context, list(instances.values()),
                                                     accepted)
        codes = {r["code"] for r in results}
        status = 200 if codes == {200} else 207 if 200 in codes else 404
        response = jsonify({"events": results})
        response.status_code = status
        return response


def register(app, controller: ServerExternalEventsController) -> None:
    app.add_url_rule("/v2.1/os-server-external-events", "server_external_events",
                     validation.schema(schema.create)(controller.create),
                     methods=["POST"])
