"""What every agent says to the server: its state, and (the L2 agent) device events.

``PluginReportStateAPI`` is the heartbeat on ``q-reports-plugin``: the first
report is a *call*, so an agent is in the agents table before it takes work,
later ones are casts every ``report_interval`` (``neutron/agent/rpc.py``).
``PluginApi`` is the L2 agent's client of the server's ``q-plugin`` endpoints.
"""

from __future__ import annotations

import logging
import threading

from novalab.reference.common.context import RequestContext, get_admin_context
from novalab.reference.common.db import utcnow
from novalab.reference.neutron import constants
from novalab.reference.rpc import RPCClient, Target
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)


def plugin_client(transport, tracer, topic: str = constants.PLUGIN_TOPIC) -> RPCClient:
    return RPCClient(transport, Target(topic=topic, exchange=constants.EXCHANGE), tracer=tracer)


class PluginReportStateAPI:
    def __init__(self, transport, tracer):
        self.client = plugin_client(transport, tracer, constants.REPORTS_TOPIC)
        self.tracer = tracer

    @upstream("neutron/agent/rpc.py", "PluginReportStateAPI.report_state")
    def report_state(self, context: RequestContext, agent_state: dict, use_call: bool = False):
        kwargs = {"agent_state": {"agent_state": agent_state}, "time": utcnow().isoformat()}
        if use_call:
            return self.client.call(context, "report_state", **kwargs)
        self.client.cast(context, "report_state", **kwargs)
        return None


class StateReporter:
    """Report ``agent_state`` now (a call) and then every ``interval`` seconds (casts)."""

    def __init__(self, state_rpc: PluginReportStateAPI, agent_state: dict, interval: float):
        self.state_rpc = state_rpc
        self.agent_state = dict(agent_state, start_flag=True)
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self.state_rpc.report_state(get_admin_context(), self.agent_state, use_call=True)
        self.agent_state.pop("start_flag", None)
        if self.interval > 0:
            self._thread = threading.Thread(target=self._loop, daemon=True,
                                            name=f"report-{self.agent_state['binary']}")
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.state_rpc.report_state(get_admin_context(), self.agent_state)
            except Exception:
                LOG.exception("Failed reporting state of %s", self.agent_state["binary"])

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


class PluginApi:
    """The L2 agent's calls to the server (``neutron/agent/rpc.py`` ``PluginApi``)."""

    def __init__(self, transport, tracer):
        self.client = plugin_client(transport, tracer)
        self.tracer = tracer

    @upstream("neutron/agent/rpc.py", "PluginApi.get_device_details")
    def get_device_details(self, context, device: str, agent_id: str, host: str) -> dict:
        return self.client.call(context, "get_device_details", device=device,
                                agent_id=agent_id, host=host)

    @upstream("neutron/agent/rpc.py", "PluginApi.update_device_up")
    def update_device_up(self, context, device: str, agent_id: str, host: str) -> None:
        return self.client.call(context, "update_device_up", device=device,
                                agent_id=agent_id, host=host)

    @upstream("neutron/agent/rpc.py", "PluginApi.update_device_down")
    def update_device_down(self, context, device: str, agent_id: str, host: str) -> dict:
        return self.client.call(context, "update_device_down", device=device,
                                agent_id=agent_id, host=host)


class SecurityGroupServerRpcApi:
    """The L2 agent's question about its ports' rules
    (``neutron/api/rpc/handlers/securitygroups_rpc.py``)."""

    def __init__(self, transport, tracer):
        self.client = plugin_client(transport, tracer)
        self.tracer = tracer

    @upstream("neutron/api/rpc/handlers/securitygroups_rpc.py",
              "SecurityGroupServerRpcApi.security_group_info_for_devices")
    def security_group_info_for_devices(self, context, devices: list[str]) -> dict:
        return self.client.call(context, "security_group_info_for_devices", devices=devices)
