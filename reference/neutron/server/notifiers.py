"""Who neutron-server tells when a port changes: the agents over RPC, Nova over HTTP.

* :class:`DhcpAgentNotifyAPI` casts ``port_create_end`` / ``port_update_end`` /
  ``port_delete_end`` to each live DHCP agent (``dhcp_agent.<host>``).
* :class:`AgentNotifierApi` casts ``port_update`` / ``port_delete`` to the L2
  agent. Upstream fans these out to every L2 agent and each ignores ports it does
  not host; novalab's RPC has no fanout, so the cast goes to the agent of the
  port's binding host (``q-agent-notifier-port-update.<host>``). The same goes for
  ``security_groups_rule_updated`` / ``security_groups_member_updated``
  (``q-agent-notifier-security_group-update``): upstream a fanout, here a cast to
  each host with a bound port the change concerns.
* :class:`NovaNotifier` posts ``network-vif-plugged`` (and ``-unplugged``) to
  Nova's ``os-server-external-events`` when a compute port's status changes, as
  the neutron service user. Upstream queues events and sends a batch every
  ``send_events_interval`` (2 s) from a timer; novalab sends each at once, from the
  thread that changed the status, so the event stays in the trace that caused it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import httpx

from novalab.reference.common.context import RequestContext
from novalab.reference.neutron import constants
from novalab.reference.rpc import RPCClient, Target
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)

VIF_PLUGGED = "network-vif-plugged"
VIF_UNPLUGGED = "network-vif-unplugged"
# neutron/notifiers/nova.py NEUTRON_NOVA_EVENT_STATUS_MAP
EVENT_STATUS = {constants.PORT_STATUS_ACTIVE: "completed",
                constants.PORT_STATUS_ERROR: "failed",
                constants.PORT_STATUS_DOWN: "completed"}


class DhcpAgentNotifyAPI:
    def __init__(self, transport, tracer, get_dhcp_agents: Callable[[], list[dict]]):
        self.client = RPCClient(transport, Target(topic=constants.DHCP_AGENT_TOPIC,
                                                  exchange=constants.EXCHANGE), tracer=tracer)
        self.tracer = tracer
        self._get_dhcp_agents = get_dhcp_agents

    def notify(self, context: RequestContext, method: str, payload: dict) -> None:
        self._notify_agents(context, method, payload)

    @upstream("neutron/api/rpc/agentnotifiers/dhcp_rpc_agent_api.py",
              "DhcpAgentNotifyAPI._notify_agents")
    def _notify_agents(self, context: RequestContext, method: str, payload: dict) -> None:
        """Cast ``method`` to every live DHCP agent (all of them host every network)."""
        for agent in self._get_dhcp_agents():
            self.client.prepare(server=agent["host"]).cast(context, method, payload=payload)


class AgentNotifierApi:
    def __init__(self, transport, tracer):
        self.tracer = tracer
        self.update_client = RPCClient(transport, Target(topic=constants.PORT_UPDATE_TOPIC,
                                                         exchange=constants.EXCHANGE),
                                       tracer=tracer)
        self.delete_client = RPCClient(transport, Target(topic=constants.PORT_DELETE_TOPIC,
                                                         exchange=constants.EXCHANGE),
                                       tracer=tracer)

        self.sg_client = RPCClient(transport, Target(
            topic=constants.SECURITY_GROUP_UPDATE_TOPIC, exchange=constants.EXCHANGE),
            tracer=tracer)

    def security_groups_rule_updated(self, context: RequestContext, security_groups: list,
                                     hosts: list[str]) -> None:
        for host in hosts:
            self.sg_client.prepare(server=host).cast(
                context, "security_groups_rule_updated", security_groups=security_groups)

    def security_groups_member_updated(self, context: RequestContext, security_groups: list,
                                       hosts: list[str]) -> None:
        for host in hosts:
            self.sg_client.prepare(server=host).cast(
                context, "security_groups_member_updated", security_groups=security_groups)

    @upstream("neutron/plugins/ml2/rpc.py", "AgentNotifierApi.port_update")
    def port_update(self, context: RequestContext, port: dict, network: dict, host: str):
        self.update_client.prepare(server=host).cast(
            context, "port_update", port=port, network_type=network["provider:network_type"],
            segmentation_id=network["provider:segmentation_id"],
            physical_network=network["provider:physical_network"])

    @upstream("neutron/plugins/ml2/rpc.py", "AgentNotifierApi.port_delete")
    def port_delete(self, context: RequestContext, port_id: str, network_id: str, host: str):
        self.delete_client.prepare(server=host).cast(context, "port_delete", port_id=port_id,
                                                     network_id=network_id)


class NovaNotifier:
    """Tell Nova a VIF is plugged, authenticated as the neutron service user."""

    def __init__(self, http: httpx.Client, service_token: Callable[..., str],
                 urls: dict[str, str], tracer):
        self.http = http
        self.service_token = service_token
        self.urls = urls  # read at call time: nova may start after neutron
        self.tracer = tracer

    @staticmethod
    def status_event(port: dict, previous: str, current: str) -> dict | None:
        """The event a status change means to Nova, if any (``record_port_status_changed``)."""
        if not (port["device_owner"].startswith(constants.DEVICE_OWNER_COMPUTE_PREFIX)
                and port["device_id"]):
            return None
        if previous == constants.PORT_STATUS_ACTIVE and current == constants.PORT_STATUS_DOWN:
            name = VIF_UNPLUGGED
        elif previous in (constants.PORT_STATUS_DOWN, constants.PORT_STATUS_BUILD) and \
                current in (constants.PORT_STATUS_ACTIVE, constants.PORT_STATUS_ERROR):
            name = VIF_PLUGGED
        else:
            return None
        return {"name": name, "server_uuid": port["device_id"], "tag": port["id"],
                "status": EVENT_STATUS[current]}

    @upstream("neutron/notifiers/nova.py", "Notifier.send_events")
    def send_events(self, events: list[dict]) -> list[dict] | None:
        """POST the events; log (never raise) what Nova answers."""
        nova = self.urls.get("nova")
        if not nova:
            LOG.warning("No nova endpoint known; not sending %s", events)
            return None
        url = f"{nova}/v2.1/os-server-external-events"
        try:
            response = None
            for attempt in range(2):  # a token nova rejects is refreshed once
                response = self.http.post(url, json={"events": events}, headers={
                    "X-Auth-Token": self.service_token(refresh=attempt > 0)})
                if response.status_code != 401:
                    break
        except Exception:
            LOG.exception("Failed to notify nova on events: %s", events)
            return None
        if response.status_code == 404:
            LOG.debug("Nova returned NotFound for events: %s", events)
            return None
        if response.status_code not in (200, 207):
            LOG.error("Error response returned from nova (%s): %s", response.status_code,
                      response.text[:200])
            return None
        results = response.json().get("events", [])
        for event in results:
            if event.get("code") != 200:
                LOG.warning("Nova event %s returned with failed status", event)
        return results
