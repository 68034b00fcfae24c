"""The L2 agent's security group half (``neutron/agent/securitygroups_rpc.py``).

``SecurityGroupAgentRpc`` asks the server ``security_group_info_for_devices``
for the ports it wires and hands the answer to its firewall driver
(``linux/iptables_firewall.py``, a stand-in that computes the chains without
writing them). When a group's rules change (``security_groups_rule_updated``)
or a group's members do (``security_groups_member_updated``, which changes the
remote-group ipsets), the server tells the agent and it refreshes the filters of
the ports concerned.
"""

from __future__ import annotations

import logging
import threading

from novalab.reference.common.context import get_admin_context
from novalab.reference.neutron.agent.linux.iptables_firewall import IptablesFirewallDriver
from novalab.reference.neutron.agent.rpc import SecurityGroupServerRpcApi
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)

SG_RPC = "neutron/agent/securitygroups_rpc.py"


class SecurityGroupAgentRpc:
    def __init__(self, plugin_rpc: SecurityGroupServerRpcApi, firewall: IptablesFirewallDriver,
                 tracer):
        self.plugin_rpc = plugin_rpc
        self.firewall = firewall
        self.tracer = tracer
        self._lock = threading.Lock()  # upstream's _port_filter_lock

    @upstream(SG_RPC, "SecurityGroupAgentRpc.prepare_devices_filter")
    def prepare_devices_filter(self, device_ids: list[str]) -> None:
        if device_ids:
            LOG.info("Preparing filters for devices %s", device_ids)
            self._apply_port_filter(device_ids)

    @upstream(SG_RPC, "SecurityGroupAgentRpc.refresh_firewall")
    def refresh_firewall(self, device_ids: list[str] | None = None) -> None:
        device_ids = list(device_ids or self.firewall.ports)
        if device_ids:
            self._apply_port_filter(device_ids, update_filter=True)

    def _apply_port_filter(self, device_ids: list[str], update_filter: bool = False) -> None:
        with self._lock:
            info = self.plugin_rpc.security_group_info_for_devices(get_admin_context(),
                                                                   list(device_ids))
            for sg_id, rules in info["security_groups"].items():
                self.firewall.update_security_group_rules(sg_id, rules)
            for sg_id, members in info["sg_member_ips"].items():
                self.firewall.update_security_group_members(sg_id, members)
            self.firewall.sg_stateful.update(info.get("sg_stateful", {}))
            for device in info["devices"].values():
                if update_filter:
                    self.firewall.update_port_filter(device)
                else:
                    self.firewall.prepare_port_filter(device)

    @upstream(SG_RPC, "SecurityGroupAgentRpc.remove_devices_filter")
    def remove_devices_filter(self, device_ids: list[str]) -> None:
        with self._lock:
            for device_id in device_ids:
                port = self.firewall.ports.get(device_id)
                if port:
                    self.firewall.remove_port_filter(port)

    @upstream(SG_RPC, "SecurityGroupAgentRpc.security_groups_rule_updated")
    def security_groups_rule_updated(self, security_groups: list[str]) -> None:
        self._security_group_updated(security_groups, remote=False)

    @upstream(SG_RPC, "SecurityGroupAgentRpc.security_groups_member_updated")
    def security_groups_member_updated(self, security_groups: list[str]) -> None:
        self._security_group_updated(security_groups, remote=True)

    def _security_group_updated(self, security_groups: list[str], remote: bool) -> None:
        """Refresh the ports in one of ``security_groups`` (a rule change), or whose rules
        name one of them as remote group (a member change)."""
        changed = set(security_groups)
        devices = []
        for device, port in list(self.firewall.ports.items()):
            groups = port.get("security_groups", [])
            if remote:
                groups = {r.get("remote_group_id") for sg in groups
                          for r in self.firewall.sg_rules.get(sg, [])}
            if changed & set(groups):
                devices.append(device)
        if devices:
            self.refresh_firewall(devices)
