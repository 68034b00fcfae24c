"""Neutron's names for the things that travel: port states, device owners, RPC topics.

Taken from ``neutron_lib.constants`` and ``neutron.common.topics`` so the
messages and rows look as they do in a real deployment.
"""

from __future__ import annotations

from novalab.tracing import attributes as attr

# Port status (neutron_lib.constants.PORT_STATUS_*).
PORT_STATUS_DOWN = "DOWN"
PORT_STATUS_BUILD = "BUILD"
PORT_STATUS_ACTIVE = "ACTIVE"
PORT_STATUS_ERROR = "ERROR"

# Who owns a port.
DEVICE_OWNER_DHCP = "network:dhcp"
DEVICE_OWNER_COMPUTE_PREFIX = "compute:"
# A DHCP port created before any agent claims it (neutron_lib.constants).
DEVICE_ID_RESERVED_DHCP_PORT = "reserved_dhcp_port"

# Port binding (neutron_lib.api.definitions.portbindings).
VIF_TYPE_UNBOUND = "unbound"
VIF_TYPE_BINDING_FAILED = "binding_failed"
VIF_TYPE_BRIDGE = "bridge"
VNIC_NORMAL = "normal"

# Agent types (neutron_lib.constants.AGENT_TYPE_*).
AGENT_TYPE_DHCP = "DHCP agent"
AGENT_TYPE_L2 = "Linux bridge agent"
AGENT_TYPE_METADATA = "Metadata agent"

# RPC topics (neutron/common/topics.py and neutron_lib.agent.topics).
PLUGIN_TOPIC = "q-plugin"
REPORTS_TOPIC = "q-reports-plugin"
DHCP_AGENT_TOPIC = "dhcp_agent"
PORT_UPDATE_TOPIC = "q-agent-notifier-port-update"
PORT_DELETE_TOPIC = "q-agent-notifier-port-delete"
# SecurityGroupAgentRpcApiMixin's topic (upstream a fanout to every L2 agent).
SECURITY_GROUP_UPDATE_TOPIC = "q-agent-notifier-security_group-update"
# oslo.messaging's control_exchange for neutron ("nova" for nova).
EXCHANGE = "neutron"

# The DNS domain dnsmasq gives hosts (neutron's default dns_domain).
DNS_DOMAIN = "openstacklocal"
# Linux interface names are at most 15 characters: "tap" + 11 characters of the port id,
# "brq" + 11 characters of the network id (upstream's NIC_NAME_LEN = 14).
DEVICE_NAME_LEN = 14


def tap_name(port_id: str) -> str:
    return ("tap" + port_id)[:DEVICE_NAME_LEN]


def bridge_name(network_id: str) -> str:
    return ("brq" + network_id)[:DEVICE_NAME_LEN]


# Span attributes live in tracing/attributes.py (neutron.*, novalab.dnsmasq.*); this
# one keeps its old name for tests/reference/neutron.
ATTR_DNSMASQ_HOSTS = attr.NOVALAB_DNSMASQ_HOSTS
