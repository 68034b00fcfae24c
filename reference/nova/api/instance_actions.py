"""``/servers/{id}/os-instance-actions`` (``nova/api/openstack/compute/instance_actions.py``).

What happened to a server, request by request. nova-api records an *action*
(``create``, ``delete``) under the request id it answers with; services add
*events* to it as they work (``compute__do_build_and_run_instance``). So the
``X-OpenStack-Request-ID`` of ``POST /servers`` is the key to the boot's story:

    GET /v2.1/servers/{id}/os-instance-actions               the actions, newest first
    GET /v2.1/servers/{id}/os-instance-actions/{request_id}  one action and its events

By microversion, as upstream: below 2.51 only those the policy
``os_compute_api:os-instance-actions:events`` allows (admins) see the events at
all; from 2.51 everyone who may see the action sees its events, and only admins
their ``traceback`` (the openstack CLI asks for 2.51 or later, see
docs/decisions.md). From 2.21 a deleted server's actions can still be read; from
2.58 an action shows its ``updated_at`` and the list pages (``limit``,
``marker``: a request id, ``changes-since``), with a ``links`` entry to the next
page when one is full.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from urllib.parse import urlencode

from flask import g, jsonify, request

from novalab.reference.common import exception, validation
from novalab.reference.nova import policy
from novalab.reference.nova.api import versions
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


def _format_action(row: dict) -> dict:
    action = _format(row, ACTION_KEYS)
    if versions.is_supported("2.58"):
        action["updated_at"] = strtime(row.get("updated_at") or row.get("start_time"))
    return action


# The 2.58 query parameters (schemas/instance_actions.py list_query_params_v258), bounded.
_QUERY_V258 = validation.validator_for({
    "type": "object",
    "properties": {"limit": {"type": "string", "pattern": "^[0-9]{1,10}$"},
                   "marker": {"type": "string", "maxLength": 255},
                   "changes-since": {"type": "string", "format": "date-time",
                                     "maxLength": 64}},
    "additionalProperties": True,
})
MAX_LIMIT = 1000


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
        instance = self._get_instance(context, server_id)  # another project's: 404
        policy.authorize(context, "os_compute_api:os-instance-actions:list",
                         {"project_id": instance["project_id"]})
        actions = self.action_api.actions_get(context, instance)
        if not versions.is_supported("2.58"):
            return jsonify({"instanceActions": [_format(a, ACTION_KEYS) for a in actions]})
        return jsonify(self._paged(server_id, actions))

    def _get_instance(self, context, server_id: str) -> dict:
        """From 2.21 a deleted server's actions are still there to read."""
        return self.compute_api.get(context, server_id,
                                    read_deleted=versions.is_supported("2.21"))

    @staticmethod
    def _paged(server_id: str, actions: list[dict]) -> dict:
        """2.58's page of actions (newest first): after ``marker``, changed since
        ``changes-since``, at most ``limit`` (``max_limit`` when none)."""
        query = request.args.to_dict()
        validation.validate(query, _QUERY_V258)
        if "changes-since" in query:
            since = datetime.fromisoformat(query["changes-since"].replace("Z", "+00:00"))
            since = since.replace(tzinfo=None) - (since.utcoffset() or timedelta())
            actions = [a for a in actions if (a.get("updated_at") or a["start_time"]) >= since]
        if "marker" in query:
            ids = [a["request_id"] for a in actions]
            if query["marker"] not in ids:
                raise exception.ValidationError(
                    detail=f"Marker {query['marker'][:255]} could not be found.")
            actions = actions[ids.index(query["marker"]) + 1:]
        limit = min(int(query.get("limit") or 0) or MAX_LIMIT, MAX_LIMIT)
        page = actions[:limit]
        body: dict = {"instanceActions": [_format_action(a) for a in page]}
        if page and len(page) == limit:
            query.update(limit=str(limit), marker=page[-1]["request_id"])
            base = request.host_url.rstrip("/") + "/v2.1"
            body["links"] = [{"rel": "next", "href": f"{base}/servers/{server_id}/"
                                                     f"os-instance-actions?{urlencode(query)}"}]
        return body

    @upstream(_INSTANCE_ACTIONS, "InstanceActionsController.show")
    def show(self, server_id: str, request_id: str):
        """One action, found by the request id that started it, with its events."""
        context = g.context
        instance = self._get_instance(context, server_id)
        policy.authorize(context, "os_compute_api:os-instance-actions:show",
                         {"project_id": instance["project_id"]})
        action = self.action_api.action_get_by_request_id(context, instance, request_id)
        if action is None:
            raise exception.NotFound(f"Action {request_id} not found")
        body = _format_action(action)
        show_events = policy.check(context, "os_compute_api:os-instance-actions:events",
                                   {"project_id": instance["project_id"]})
        if show_events or versions.is_supported("2.51"):
            events = self.action_api.action_events_get(context, instance, action["id"])
            body["events"] = [_format_event(e, show_events) for e in events]
        return jsonify({"instanceAction": body})


def register(app, controller: InstanceActionsController) -> None:
    app.add_url_rule("/v2.1/servers/<server_id>/os-instance-actions", "instance_actions_index",
                     controller.index, methods=["GET"])
    app.add_url_rule("/v2.1/servers/<server_id>/os-instance-actions/<request_id>",
                     "instance_actions_show", controller.show, methods=["GET"])
