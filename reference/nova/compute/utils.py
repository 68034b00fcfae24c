"""Recording instance-action events (``nova/compute/utils.py``: ``EventReporter``).

An *action* is a user's request on an instance (``create``), recorded by nova-api
under the request id it answered with. An *event* is one step a service took for
it: ``compute__do_build_and_run_instance`` starts when the compute host begins
and finishes with ``Success``, or ``Error`` and the traceback. The compute host
has no database, so it sends both through the conductor (Grizzly's
``conductor_api.action_event_start`` / ``action_event_finish``); the event is
found again by the request id its context carries.

    with EventReporter(context, conductor_api, "compute__do_build_and_run_instance",
                       host, instance_uuid):
        ...                            # an exception here finishes it with "Error"

    @wrap_instance_event(prefix="compute")   # event "compute_terminate_instance"
    def terminate_instance(self, context, instance): ...
"""

from __future__ import annotations

import functools
import inspect
import traceback
import uuid as uuidlib

from opentelemetry import trace

from novalab.reference.common.db import utcnow
from novalab.tracing import attributes as attr

SUCCESS = "Success"
ERROR = "Error"


def pack_action_start(context, instance_uuid: str, action: str) -> dict:
    """The row of a new action: who asked, in which request, when (``updated_at`` too,
    as upstream: 2.58's ``changes-since`` and the action's ``updated_at`` start there)."""
    now = utcnow()
    return {"action": action, "instance_uuid": instance_uuid,
            "request_id": context.request_id, "user_id": context.user_id,
            "project_id": context.project_id, "start_time": now, "updated_at": now}


def pack_action_event_start(context, instance_uuid: str, event: str,
                            host: str | None = None) -> dict:
    return {"event": event, "instance_uuid": instance_uuid, "request_id": context.request_id,
            "start_time": utcnow(), "host": host}


def pack_action_event_finish(context, instance_uuid: str, event: str,
                             exc: BaseException | None = None) -> dict:
    """``Success``, or ``Error`` with the message (``details``) and the traceback."""
    values = {"event": event, "instance_uuid": instance_uuid,
              "request_id": context.request_id, "finish_time": utcnow(), "result": SUCCESS}
    if exc is not None:
        values["result"] = ERROR
        values["details"] = str(exc) or type(exc).__name__
        values["traceback"] = "".join(traceback.format_exception(exc))
    return values


class EventReporter:
    """Start an event for each instance on entry; finish it with the outcome on exit."""

    def __init__(self, context, conductor_api, event_name: str, host: str | None,
                 *instance_uuids: str):
        self.context = context
        self.conductor_api = conductor_api
        self.event_name = event_name
        self.host = host
        self.instance_uuids = instance_uuids

    def __enter__(self) -> EventReporter:
        # The span doing the work names the event, so a trace leads to `server event show`.
        trace.get_current_span().set_attribute(attr.NOVA_INSTANCE_ACTION_EVENT, self.event_name)
        for uuid in self.instance_uuids:
            self.conductor_api.action_event_start(
                self.context, pack_action_event_start(self.context, uuid, self.event_name,
                                                      self.host))
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        for uuid in self.instance_uuids:
            self.conductor_api.action_event_finish(
                self.context, pack_action_event_finish(self.context, uuid, self.event_name,
                                                       exc))
        return False  # never swallow the exception


def wrap_instance_event(prefix: str):
    """Record a method's call as the event ``<prefix>_<method name>`` of its ``instance``.

    The decorated method takes ``(self, context, ...)`` with an ``instance`` argument;
    ``self`` brings the ``conductor_api`` and the ``host``.
    """

    def helper(function):
        signature = inspect.signature(function)

        @functools.wraps(function)
        def decorated(self, context, *args, **kwargs):
            bound = signature.bind(self, context, *args, **kwargs)
            instance_uuid = bound.arguments["instance"]["uuid"]
            with EventReporter(context, self.conductor_api, f"{prefix}_{function.__name__}",
                               getattr(self, "host", None), instance_uuid):
                return function(self, context, *args, **kwargs)

        return decorated

    return helper


@functools.lru_cache(maxsize=65536)
def compute_node_uuid(hypervisor_hostname: str) -> str:
    """The node's resource provider uuid: stable for a host name, as upstream's
    ``compute_id`` file keeps a node's uuid across restarts (the scheduler maps
    allocation candidates back to hosts with it). Kept once worked out: the
    scheduler asks it for every host state of every request, and a SHA-1 each
    time was 7 µs a host (70 ms a request over 10,000 hosts)."""
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"novalab:compute-node:{hypervisor_hostname}"))
