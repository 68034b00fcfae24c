"""``/servers/{id}/os-instance-actions`` (``nova/api/openstack/compute/instance_actions.py``).

What happened to a server, request by request. nova-api records an *action*
(``create``, ``delete``) under the request id it answers with; services add
*events* to it as they work (``compute__do_build_and_run_instance``). So the
``X-OpenStack-Request-ID`` of ``POST /servers`` is the key to the boot's story:

    GET /v2.1/servers/{id}/os-instance-actions               the actions, newest first
    GET /v2.1/servers/{id}/os-instance-actions/{request_id}  one action and its events

Everyone who may see the action sees its events; their ``traceback`` only those
the policy ``os_compute_api:os-instance-actions:events`` allows (admins). That is
Nova from microversion 2.51 on; at 2.1 Nova hid the events from non-admins
altogether, which the openstack CLI cannot show (docs/decisions.md).
"""

from __future__ import annotations

from datetime import datetime

from flask import g, jsonify

from novalab.reference.common import exception
from novalab.reference.nova import policy
from novalab.reference.nova.compute.api import API as ComputeAPI
from novalab.reference.nova.compute.api import InstanceActionAPI
from novalab.tracing.spans import upstream

_INSTANCE_ACTIONS = "nova/api/openstack/compute/instance_actions.py"

ACTION_KEYS = ("action", "instance_uuid", "request_id", "user_id", "project_id",
               "start_time", "message")
EVENT_KEYS = ("event", "start_time", "finish_time", "result", "traceback")


def strtime(value) -> str | None:
    """Nova's JSON form of a timestamp: ``2018-04-25T01:26:29.092892`` (naive UTC)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.strftime("%Y-%m-%dT%H:%M:%S.%f")


def _format(row: dict, keys) -> dict:
    return {key: strtime(row.get(key)) if key.endswith("_time") else row.get(key)
            for key in keys}


def _format_event(row: dict, show_traceback: bool) -> dict:
    """An event as the API shows it; without ``traceback`` for those not allowed it."""
    event = _format(row, EVENT_KEYS)
    if not show_traceback:
        del event["traceback"]
    return event


class InstanceActionsController:
    def __init__(self, compute_api: ComputeAPI, action_api: InstanceActionAPI, tracer):
        self.compute_api = compute_api
        self.action_api = action_api
        self.tracer = tracer

    @upstream(_INSTANCE_ACTIONS, "InstanceActionsController.index")
    def index(self, server_id: str):
        """The server's actions, newest first."""
        context = g.context
        instance = self.compute_api.get(context, server_id)  # another project's: 404
        policy.authorize(context, "os_compute_api:os-instance-actions:list",
                         {"project_id": instance["project_id"]})
        actions = self.action_api.actions_get(context, instance)
        return jsonify({"instanceActions": [_format(a, ACTION_KEYS) for a in actions]})

    @upstream(_INSTANCE_ACTIONS, "InstanceActionsController.show")
    def show(self, server_id: str, request_id: str):
        """One action, found by the request id that started it, with its events."""
        context = g.context
        instance = self.compute_api.get(context, server_id)
        policy.authorize(context, "os_compute_api:os-instance-actions:show",
                         {"project_id": instance["project_id"]})
        action = self.action_api.action_get_by_request_id(context, instance, request_id)
        if action is None:
            raise exception.NotFound(f"Action {request_id} not found")
        body = _format(action, ACTION_KEYS)
        show_traceback = policy.check(context, "os_compute_api:os-instance-actions:events",
                                      {"project_id": instance["project_id"]})
        events = self.action_api.action_events_get(context, instance, action["id"])
        body["events"] = [_format_event(e, show_traceback) for e in events]
        return jsonify({"instanceAction": body})


def register(app, controller: InstanceActionsController) -> None:
    app.add_url_rule("/v2.1/servers/<server_id>/os-instance-actions", "instance_actions_index",
                     controller.index, methods=["GET"])
    app.add_url_rule("/v2.1/servers/<server_id>/os-instance-actions/<request_id>",
                     "instance_actions_show", controller.show, methods=["GET"])
