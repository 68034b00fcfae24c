"""Power, lock and console-output actions (``nova/api/openstack/compute/servers.py``,
``pause_server.py``, ``suspend_server.py``, ``lock_server.py``, ``console_output.py``).

Each finds the server (another project's is a 404), checks its policy against
the server's project and asks ``compute_api``; the power actions answer ``202``
at once (the compute host does the work, the task state shows it), a server in a
state the action does not take is a 409 naming the state, a locked server is a
409 for everyone but admins. ``os-getConsoleOutput`` waits for the host (an RPC
call) and answers 200 with the guest's serial console log.

    POST /v2.1/servers/{id}/action  {"os-stop": null}                  openstack server stop
    POST /v2.1/servers/{id}/action  {"os-start": null}                 openstack server start
    POST /v2.1/servers/{id}/action  {"reboot": {"type": "SOFT"}}       openstack server reboot
    POST /v2.1/servers/{id}/action  {"pause": null} / {"unpause": null}
    POST /v2.1/servers/{id}/action  {"suspend": null} / {"resume": null}
    POST /v2.1/servers/{id}/action  {"lock": null} / {"unlock": null}
    POST /v2.1/servers/{id}/action  {"os-getConsoleOutput": {"length": 10}}
                                                               openstack console log show
"""

from __future__ import annotations

import re

from flask import g
from opentelemetry import trace

from novalab.reference.common import exception
from novalab.reference.nova import exception as nova_exception
from novalab.reference.nova import policy
from novalab.reference.nova.api.actions import (
    action,
    raise_http_conflict_for_instance_invalid_state,
)
from novalab.reference.nova.api.schemas import server_actions as schema
from novalab.reference.nova.compute import instance_actions
from novalab.reference.nova.compute.api import API as ComputeAPI
from novalab.tracing import attributes as attr
from novalab.tracing.spans import upstream

_SERVERS = "nova/api/openstack/compute/servers.py"
_PAUSE = "nova/api/openstack/compute/pause_server.py"
_SUSPEND = "nova/api/openstack/compute/suspend_server.py"
_LOCK = "nova/api/openstack/compute/lock_server.py"
_CONSOLE = "nova/api/openstack/compute/console_output.py"
# Control characters a JSON (once XML) answer should not carry (console_output.py).
_REMOVE_RE = re.compile("[\x00-\x08\x0B-\x1F]")


class ServerActionsController:
    def __init__(self, compute_api: ComputeAPI, tracer):
        self.compute_api = compute_api
        self.tracer = tracer

    def _instance(self, server_id: str, rule: str, recorded: str | None) -> dict:
        context = g.context
        instance = self.compute_api.get(context, server_id)
        policy.authorize(context, rule,
                         {"project_id": instance["project_id"], "user_id": instance["user_id"]})
        span = trace.get_current_span()
        span.set_attribute(attr.NOVA_INSTANCE_UUID, instance["uuid"])
        if recorded:
            span.set_attribute(attr.NOVA_INSTANCE_ACTION, recorded)
        return instance

    def _act(self, server_id: str, rule: str, action_name: str, recorded: str, call,
             *args) -> tuple:
        instance = self._instance(server_id, rule, recorded)
        try:
            call(g.context, instance, *args)
        except exception.InstanceInvalidState as exc:
            raise_http_conflict_for_instance_invalid_state(exc, action_name, server_id)
        return "", 202

    @action("os-stop", schema.stop)
    @upstream(_SERVERS, "ServersController._stop")
    def _stop(self, server_id: str, body: dict):
        return self._act(server_id, "os_compute_api:servers:stop", "stop",
                         instance_actions.STOP, self.compute_api.stop)

    @action("os-start", schema.start)
    @upstream(_SERVERS, "ServersController._start")
    def _start(self, server_id: str, body: dict):
        return self._act(server_id, "os_compute_api:servers:start", "start",
                         instance_actions.START, self.compute_api.start)

    @action("reboot", schema.reboot)
    @upstream(_SERVERS, "ServersController._reboot")
    def _reboot(self, server_id: str, body: dict):
        reboot_type = body["reboot"]["type"].upper()
        return self._act(server_id, "os_compute_api:servers:reboot", "reboot",
                         instance_actions.REBOOT, self.compute_api.reboot, reboot_type)

    @action("pause", schema.pause)
    @upstream(_PAUSE, "PauseServerController._pause")
    def _pause(self, server_id: str, body: dict):
        return self._act(server_id, "os_compute_api:os-pause-server:pause", "pause",
                         instance_actions.PAUSE, self.compute_api.pause)

    @action("unpause", schema.unpause)
    @upstream(_PAUSE, "PauseServerController._unpause")
    def _unpause(self, server_id: str, body: dict):
        return self._act(server_id, "os_compute_api:os-pause-server:unpause", "unpause",
                         instance_actions.UNPAUSE, self.compute_api.unpause)

    @action("suspend", schema.suspend)
    @upstream(_SUSPEND, "SuspendServerController._suspend")
    def _suspend(self, server_id: str, body: dict):
        return self._act(server_id, "os_compute_api:os-suspend-server:suspend", "suspend",
                         instance_actions.SUSPEND, self.compute_api.suspend)

    @action("resume", schema.resume)
    @upstream(_SUSPEND, "SuspendServerController._resume")
    def _resume(self, server_id: str, body: dict):
        return self._act(server_id, "os_compute_api:os-suspend-server:resume", "resume",
                         instance_actions.RESUME, self.compute_api.resume)

    @action("lock", schema.lock)
    @upstream(_LOCK, "LockServerController._lock")
    def _lock(self, server_id: str, body: dict):
        instance = self._instance(server_id, "os_compute_api:os-lock-server:lock",
                                  instance_actions.LOCK)
        self.compute_api.lock(g.context, instance)
        return "", 202

    @action("unlock", schema.unlock)
    @upstream(_LOCK, "LockServerController._unlock")
    def _unlock(self, server_id: str, body: dict):
        """Anyone the policy lets unlock may lift a lock of their own kind; an admin's
        lock takes ``unlock_override`` (admins only) to lift."""
        context = g.context
        instance = self._instance(server_id, "os_compute_api:os-lock-server:unlock",
                                  instance_actions.UNLOCK)
        if not self.compute_api.is_expected_locked_by(context, instance):
            policy.authorize(context, "os_compute_api:os-lock-server:unlock:unlock_override",
                             {"project_id": instance["project_id"],
                              "user_id": instance["user_id"]})
        self.compute_api.unlock(context, instance)
        return "", 202

    @action("os-getConsoleOutput", schema.get_console_output)
    @upstream(_CONSOLE, "ConsoleOutputController.get_console_output")
    def get_console_output(self, server_id: str, body: dict):
        """``length`` lines from the end (-1 or none: all the host returns)."""
        instance = self._instance(server_id, "os_compute_api:os-console-output", None)
        length = body["os-getConsoleOutput"].get("length")
        if length is not None and int(length) == -1:
            length = None  # -1 means unlimited, as None does internally
        try:
            output = self.compute_api.get_console_output(g.context, instance, length)
        except nova_exception.ConsoleNotAvailable as exc:
            raise exception.NotFound(exc.format_message()) from exc
        return {"output": _REMOVE_RE.sub("", output)}
