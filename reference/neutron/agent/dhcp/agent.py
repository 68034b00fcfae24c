"""neutron-dhcp-agent (``neutron/agent/dhcp/agent.py``): ports in, dnsmasq reloaded, ready out.

The server casts ``port_create_end`` / ``port_update_end`` / ``port_delete_end``
(and network/subnet events) to ``dhcp_agent.<host>``. For each, the agent updates
its cache of the network, has the driver rewrite dnsmasq's files and reload it,
then tells the server which ports are now served: ``dhcp_ready_on_ports``, an
RPC *call* on ``q-plugin`` that lifts the ports' DHCP provisioning blocks.

Upstream collects ready ports in a set and sends them from a loop every
second; novalab sends them right after the reload, from the RPC handler, so the
reply belongs to the trace of the port change that caused it. Upstream also
claims its DHCP port and runs dnsmasq in a namespace on a tap device; here the
seeded port is used as is and dnsmasq listens on loopback (see ``linux/dhcp.py``).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from novalab.reference.common.context import RequestContext, get_admin_context
from novalab.reference.neutron import constants
from novalab.reference.neutron.agent.linux.dhcp import Dnsmasq
from novalab.reference.neutron.agent.rpc import plugin_client
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)

AGENT = "neutron/agent/dhcp/agent.py"


class DhcpPluginApi:
    """The agent's calls to the server's ``q-plugin`` endpoints."""

    def __init__(self, transport, tracer, host: str):
        self.client = plugin_client(transport, tracer)
        self.tracer = tracer
        self.host = host

    @upstream(AGENT, "DhcpPluginApi.get_active_networks_info")
    def get_active_networks_info(self) -> list[dict]:
        return self.client.call(get_admin_context(), "get_active_networks_info",
                                host=self.host)

    @upstream(AGENT, "DhcpPluginApi.get_network_info")
    def get_network_info(self, network_id: str) -> dict | None:
        return self.client.call(get_admin_context(), "get_network_info",
                                network_id=network_id, host=self.host)

    @upstream(AGENT, "DhcpPluginApi.dhcp_ready_on_ports")
    def dhcp_ready_on_ports(self, port_ids: list[str]) -> None:
        return self.client.call(get_admin_context(), "dhcp_ready_on_ports", port_ids=port_ids)


def _has_dhcp(network: dict) -> bool:
    return network.get("admin_state_up", True) and any(
        s["enable_dhcp"] for s in network.get("subnets", []))


class DhcpAgent:
    """The RPC endpoint on ``dhcp_agent.<host>``; one :class:`Dnsmasq` per network."""

    def __init__(self, host: str, confs_dir: str | Path, plugin_rpc: DhcpPluginApi, tracer):
        self.host = host
        self.confs_dir = Path(confs_dir)
        self.plugin_rpc = plugin_rpc
        self.tracer = tracer
        self.cache: dict[str, Dnsmasq] = {}
        # Upstream locks per network; one lock keeps file writes and reloads in order.
        self._lock = threading.RLock()

    # Start-up and teardown ---------------------------------------------------------------

    @upstream(AGENT, "DhcpAgent.sync_state")
    def sync_state(self) -> None:
        """Serve every network the server says has DHCP on."""
        for network in self.plugin_rpc.get_active_networks_info():
            self.configure_dhcp_for_network(network)

    def stop(self) -> None:
        """Stop every dnsmasq this agent started (upstream leaves them running)."""
        with self._lock:
            for driver in self.cache.values():
                driver.disable()
            self.cache.clear()

    # Helpers -----------------------------------------------------------------------------

    @upstream(AGENT, "DhcpAgent.configure_dhcp_for_network")
    def configure_dhcp_for_network(self, network: dict) -> None:
        if not _has_dhcp(network):
            return
        with self._lock:
            driver = self.cache.get(network["id"])
            if driver is None:
                driver = Dnsmasq(network, self.confs_dir, self.tracer)
                self.cache[network["id"]] = driver
            driver.network = network
            self.call_driver("enable", driver)

    @upstream(AGENT, "DhcpAgent.refresh_dhcp_helper")
    def refresh_dhcp_helper(self, network_id: str) -> None:
        """Fetch the network from the server and make dnsmasq match it."""
        network = self.plugin_rpc.get_network_info(network_id)
        if network is None or not _has_dhcp(network):
            self.disable_dhcp_helper(network_id)
            return
        with self._lock:
            if network_id in self.cache:
                self.cache[network_id].network = network
                self.call_driver("reload_allocations", self.cache[network_id])
            else:
                self.configure_dhcp_for_network(network)

    @upstream(AGENT, "DhcpAgent.disable_dhcp_helper")
    def disable_dhcp_helper(self, network_id: str) -> None:
        with self._lock:
            driver = self.cache.pop(network_id, None)
            if driver is not None:
                self.call_driver("disable", driver)

    @upstream(AGENT, "DhcpAgent.call_driver")
    def call_driver(self, action: str, driver: Dnsmasq) -> bool:
        try:
            getattr(driver, action)()
            return True
        except Exception:
            # Upstream schedules a resync; the port's DHCP block stays, so the port
            # stays DOWN and the failure is visible rather than papered over.
            LOG.exception("Unable to %s dhcp for %s.", action, driver.network["id"])
            return False

    # RPC endpoints (casts from the server) -----------------------------------------------

    @upstream(AGENT, "DhcpAgent.port_create_end")
    def port_create_end(self, context: RequestContext, payload: dict) -> None:
        self._port_changed(payload["port"])

    @upstream(AGENT, "DhcpAgent.port_update_end")
    def port_update_end(self, context: RequestContext, payload: dict) -> None:
        self._port_changed(payload["port"])

    def _port_changed(self, port: dict) -> None:
        with self._lock:
            driver = self.cache.get(port["network_id"])
            if driver is None:  # a network we do not serve yet: learn it whole
                self.refresh_dhcp_helper(port["network_id"])
                done = port["network_id"] in self.cache
            else:
                ports = [p for p in driver.network["ports"] if p["id"] != port["id"]]
                driver.network = dict(driver.network, ports=[*ports, port])
                done = self.call_driver("reload_allocations", driver)
        if done:
            self.plugin_rpc.dhcp_ready_on_ports([port["id"]])

    @upstream(AGENT, "DhcpAgent.port_delete_end")
    def port_delete_end(self, context: RequestContext, payload: dict) -> None:
        with self._lock:
            driver = self.cache.get(payload["network_id"])
            if driver is None:
                return
            ports = [p for p in driver.network["ports"] if p["id"] != payload["port_id"]]
            driver.network = dict(driver.network, ports=ports)
            self.call_driver("reload_allocations", driver)

    def network_create_end(self, context: RequestContext, payload: dict) -> None:
        self.refresh_dhcp_helper(payload["network"]["id"])

    def network_delete_end(self, context: RequestContext, payload: dict) -> None:
        self.disable_dhcp_helper(payload["network_id"])

    def subnet_create_end(self, context: RequestContext, payload: dict) -> None:
        self.refresh_dhcp_helper(payload["subnet"]["network_id"])

    subnet_update_end = subnet_create_end

    def subnet_delete_end(self, context: RequestContext, payload: dict) -> None:
        self.refresh_dhcp_helper(payload["network_id"])


def agent_state(host: str) -> dict:
    return {"binary": "neutron-dhcp-agent", "host": host, "topic": constants.DHCP_AGENT_TOPIC,
            "agent_type": constants.AGENT_TYPE_DHCP,
            "configurations": {"dhcp_driver": "neutron.agent.linux.dhcp.Dnsmasq"}}
