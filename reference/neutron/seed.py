"""The network a fresh cloud starts with: DevStack's ``private``, shared by every project.

``private`` (flat) with ``private-subnet`` 10.0.0.0/24, gateway 10.0.0.1 and DHCP
on, plus the network's DHCP port (``network:dhcp``, the pool's first address).
Upstream the DHCP agent creates that port when it first serves the network;
here the seed reserves it (``device_id=reserved_dhcp_port``, a state upstream
also knows), so the address the guests get their leases from is fixed before
any agent runs.
"""

from __future__ import annotations

from novalab.reference.common.context import RequestContext
from novalab.reference.neutron import constants
from novalab.reference.neutron.server.plugin import Ml2Plugin

NETWORK = {"name": "private", "shared": True}
SUBNET = {"name": "private-subnet", "cidr": "10.0.0.0/24", "gateway_ip": "10.0.0.1",
          "enable_dhcp": True, "ip_version": 4}


def seed_networks(core: Ml2Plugin, project_id: str | None = None) -> dict:
    """Create ``private`` once (idempotent); return its network, subnet and DHCP port."""
    admin = RequestContext(is_admin=True, roles=["admin"], project_id=project_id)
    found = core.get_networks(admin, {"name": [NETWORK["name"]]})
    if found:
        network = found[0]
        subnet = core.get_subnets(admin, {"network_id": [network["id"]]})[0]
    else:
        network = core.create_network(admin, dict(NETWORK))
        subnet = core.create_subnet(admin, dict(SUBNET, network_id=network["id"]))
    dhcp = core.get_ports(admin, {"network_id": [network["id"]],
                                  "device_owner": [constants.DEVICE_OWNER_DHCP]})
    if not dhcp:
        dhcp = [core.create_port(admin, {
            "network_id": network["id"], "device_owner": constants.DEVICE_OWNER_DHCP,
            "device_id": constants.DEVICE_ID_RESERVED_DHCP_PORT,
            "fixed_ips": [{"subnet_id": subnet["id"]}]})]
    return {"network": core.get_network(admin, network["id"]), "subnet": subnet,
            "dhcp_port": dhcp[0]}
