"""A project's own network, as DevStack makes ``private`` for its demo project.

DevStack runs ``openstack network create --project demo private`` and a subnet
on it: the network belongs to demo and is not shared, so no other project can
put ports on it, and no other project can take its addresses. Each network
here is flat, with one subnet (gateway its first address, DHCP on) and the
network's DHCP port (``network:dhcp``, the pool's next address). Upstream the
DHCP agent creates that port when it first serves the network, owned by the
network's project; here the seed reserves it (``device_id=reserved_dhcp_port``,
a state upstream also knows), so the address the guests get their leases from
is fixed before any agent runs.

Which project gets which network and range is the deployment's choice
(``reference/deploy/seed.py``); the ranges must not overlap, as upstream's
do not when guests of different projects share one host's bridges.
"""

from __future__ import annotations

import ipaddress

from novalab.reference.common.context import RequestContext
from novalab.reference.neutron import constants
from novalab.reference.neutron.server.plugin import Ml2Plugin


def seed_project_network(core: Ml2Plugin, project_id: str, name: str, cidr: str) -> dict:
    """Network ``name`` of ``project_id`` with subnet ``<name>-subnet`` on ``cidr`` and
    its DHCP port, created once (idempotent): its network, subnet and DHCP port."""
    admin = RequestContext(is_admin=True, roles=["admin"])
    found = core.get_networks(admin, {"name": [name], "project_id": [project_id]})
    if found:
        network = found[0]
        subnet = core.get_subnets(admin, {"network_id": [network["id"]]})[0]
    else:
        network = core.create_network(admin, {"name": name, "project_id": project_id,
                                              "shared": False})
        gateway = next(ipaddress.ip_network(cidr).hosts())
        subnet = core.create_subnet(admin, {
            "name": f"{name}-subnet", "network_id": network["id"], "cidr": cidr,
            "gateway_ip": str(gateway), "enable_dhcp": True, "ip_version": 4})
    dhcp = core.get_ports(admin, {"network_id": [network["id"]],
                                  "device_owner": [constants.DEVICE_OWNER_DHCP]})
    if not dhcp:
        dhcp = [core.create_port(admin, {
            "network_id": network["id"], "project_id": project_id,
            "device_owner": constants.DEVICE_OWNER_DHCP,
            "device_id": constants.DEVICE_ID_RESERVED_DHCP_PORT,
            "fixed_ips": [{"subnet_id": subnet["id"]}]})]
    return {"network": core.get_network(admin, network["id"]), "subnet": subnet,
            "dhcp_port": dhcp[0]}
