"""The server's RPC endpoints on ``q-plugin``: what the DHCP and L2 agents call.

DHCP agent (``neutron/api/rpc/handlers/dhcp_rpc.py``): ``get_active_networks_info``
and ``get_network_info`` to build dnsmasq's files, ``dhcp_ready_on_ports`` to lift
the ports' DHCP provisioning blocks. L2 agent (``neutron/plugins/ml2/rpc.py``):
``get_device_details`` to learn how to wire a port (it also moves the port to
``BUILD``), ``update_device_up`` to lift the L2 block, ``update_device_down``;
and (``neutron/api/rpc/handlers/securitygroups_rpc.py``)
``security_group_info_for_devices``, the rules the agent's firewall applies.

Agents are trusted: the callbacks act with an admin context, as upstream's do.
"""

from __future__ import annotations

import logging

from novalab.reference.common.context import RequestContext, get_admin_context
from novalab.reference.neutron import constants
from novalab.reference.neutron import exceptions as n_exc
from novalab.reference.neutron.db.provisioning_blocks import DHCP_ENTITY, L2_AGENT_ENTITY
from novalab.reference.neutron.server.plugin import Ml2Plugin
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)

DHCP_RPC = "neutron/api/rpc/handlers/dhcp_rpc.py"
ML2_RPC = "neutron/plugins/ml2/rpc.py"


class DhcpRpcCallback:
    def __init__(self, plugin: Ml2Plugin):
        self.plugin = plugin
        self.tracer = plugin.tracer

    def _network_info(self, network: dict) -> dict:
        admin = get_admin_context()
        info = dict(network)
        info["subnets"] = self.plugin.get_subnets(admin, {"network_id": [network["id"]]})
        info["ports"] = self.plugin.get_ports(admin, {"network_id": [network["id"]]})
        return info

    @upstream(DHCP_RPC, "DhcpRpcCallback.get_active_networks_info")
    def get_active_networks_info(self, context: RequestContext, host: str) -> list[dict]:
        """Every network with a DHCP-enabled subnet (all agents host all networks)."""
        admin = get_admin_context()
        dhcp_networks = {s["network_id"] for s in self.plugin.get_subnets(
            admin, {"enable_dhcp": ["true"]})}
        return [self._network_info(n) for n in self.plugin.get_networks(admin)
                if n["id"] in dhcp_networks and n["admin_state_up"]]

    @upstream(DHCP_RPC, "DhcpRpcCallback.get_network_info")
    def get_network_info(self, context: RequestContext, network_id: str,
                         host: str | None = None) -> dict | None:
        try:
            network = self.plugin.get_network(get_admin_context(), network_id)
        except n_exc.NetworkNotFound:
            LOG.debug("Network %s requested by DHCP agent on %s not found", network_id, host)
            return None
        return self._network_info(network)

    @upstream(DHCP_RPC, "DhcpRpcCallback.dhcp_ready_on_ports")
    def dhcp_ready_on_ports(self, context: RequestContext, port_ids: list[str]) -> None:
        for port_id in port_ids:
            self.plugin.blocks.provisioning_complete(port_id, DHCP_ENTITY)


class RpcCallbacks:
    def __init__(self, plugin: Ml2Plugin):
        self.plugin = plugin
        self.tracer = plugin.tracer

    @upstream(ML2_RPC, "RpcCallbacks.get_device_details")
    def get_device_details(self, context: RequestContext, device: str,
                           agent_id: str | None = None, host: str | None = None) -> dict:
        """How to wire ``device`` (a port id) on ``host``; moves a DOWN port to BUILD."""
        admin = get_admin_context()
        try:
            port = self.plugin.get_port(admin, device)
        except n_exc.PortNotFound:
            LOG.debug("Device %s requested by agent %s not found in database", device, agent_id)
            return {"device": device}
        if port["binding:vif_type"] != constants.VIF_TYPE_BRIDGE:
            return {"device": device}  # not bound: nothing to wire
        if port["device_owner"].startswith(constants.DEVICE_OWNER_COMPUTE_PREFIX) and \
                port["binding:host_id"] != host:
            return {"device": device, "no_active_binding": True}
        network = self.plugin.get_network(admin, port["network_id"])
        if port["status"] == constants.PORT_STATUS_DOWN and port["admin_state_up"]:
            self.plugin.update_port_status(admin, port["id"], constants.PORT_STATUS_BUILD)
        return {"device": device, "network_id": port["network_id"], "port_id": port["id"],
                "mac_address": port["mac_address"], "admin_state_up": port["admin_state_up"],
                "network_type": network["provider:network_type"],
                "segmentation_id": network["provider:segmentation_id"],
                "physical_network": network["provider:physical_network"],
                "mtu": network["mtu"], "fixed_ips": port["fixed_ips"],
                "device_owner": port["device_owner"], "device_id": port["device_id"]}

    @upstream(ML2_RPC, "RpcCallbacks.update_device_up")
    def update_device_up(self, context: RequestContext, device: str,
                         agent_id: str | None = None, host: str | None = None) -> None:
        """The agent wired ``device``: lift the port's L2 block."""
        try:
            port = self.plugin.get_port(get_admin_context(), device)
        except n_exc.PortNotFound:
            LOG.debug("Port %s not found, will not notify nova.", device)
            return
        if host and port["binding:host_id"] != host:
            LOG.debug("Device %s not bound to the agent host %s", device, host)
            return
        self.plugin.blocks.provisioning_complete(port["id"], L2_AGENT_ENTITY)

    @upstream(ML2_RPC, "RpcCallbacks.update_device_down")
    def update_device_down(self, context: RequestContext, device: str,
                           agent_id: str | None = None, host: str | None = None) -> dict:
        try:
            port = self.plugin.get_port(get_admin_context(), device)
        except n_exc.PortNotFound:
            return {"device": device, "exists": False}
        if not host or port["binding:host_id"] == host:
            self.plugin.update_port_status(get_admin_context(), device,
                                           constants.PORT_STATUS_DOWN)
        return {"device": device, "exists": True}


class SecurityGroupServerRpcCallback:
    """The L2 agent's question about its ports' security groups (on ``q-plugin``)."""

    def __init__(self, plugin: Ml2Plugin):
        self.plugin = plugin
        self.tracer = plugin.tracer

    @upstream("neutron/api/rpc/handlers/securitygroups_rpc.py",
              "SecurityGroupServerRpcCallback.security_group_info_for_devices")
    def security_group_info_for_devices(self, context: RequestContext,
                                        devices: list[str]) -> dict:
        """Each device's port, its groups' rules, and the members' addresses of each group
        a rule names as its remote: what ``prepare_port_filter`` needs."""
        return self.plugin.security_group_info_for_ports(devices)
