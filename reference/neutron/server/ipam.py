"""IP address and MAC management: the next free address of a subnet's pools.

Upstream's pluggable IPAM (``neutron/ipam/drivers/neutrondb_ipam``) keeps
availability ranges in tables of its own; here the allocations table is the
truth and the next free address is found by walking the allocation pools.
Two ports racing for the same address meet the allocations table's primary
key, and the loser retries (upstream retries on ``DBDuplicateEntry`` too).
"""

from __future__ import annotations

import ipaddress
import random

from novalab.reference.neutron import exceptions as n_exc

# OpenStack's base MAC: every port MAC is fa:16:3e:xx:xx:xx (neutron's base_mac).
BASE_MAC = "fa:16:3e:00:00:00"


def generate_mac(rng: random.Random | None = None) -> str:
    rng = rng or random.SystemRandom()
    prefix = BASE_MAC.split(":")[:3]
    return ":".join(prefix + [f"{rng.randrange(256):02x}" for _ in range(3)])


def default_gateway(cidr: str) -> str:
    """The first host address (``neutron`` picks ``.1`` unless told otherwise)."""
    return str(next(ipaddress.ip_network(cidr).hosts()))


def default_pools(cidr: str, gateway_ip: str | None) -> list[dict]:
    """Every host address except the gateway, as start/end ranges.

    Computed from the range's ends, never by listing its addresses: a /8 has
    16 million of them (listing them grew the process by gigabytes).
    """
    network = ipaddress.ip_network(cidr)
    if network.num_addresses < 4:
        raise ValueError(f"{cidr} has no room for hosts")
    first, last = int(network.network_address) + 1, int(network.broadcast_address) - 1
    ranges = [(first, last)]
    if gateway_ip:
        gateway = int(ipaddress.ip_address(gateway_ip))
        if first <= gateway <= last:
            ranges = [(a, b) for a, b in ((first, gateway - 1), (gateway + 1, last)) if a <= b]
    return [{"start": str(ipaddress.ip_address(a)), "end": str(ipaddress.ip_address(b))}
            for a, b in ranges]


def validate_subnet(cidr: str, gateway_ip: str | None, pools: list[dict]) -> str:
    """The normalised CIDR; BadRequest when the subnet does not hold together."""
    try:
        network = ipaddress.ip_network(cidr, strict=True)
    except ValueError as exc:
        raise n_exc.InvalidInput(error_message=f"'{cidr}' is not a valid IP subnet") from exc
    if network.version != 4:
        raise n_exc.InvalidInput(error_message="only IPv4 subnets are supported by novalab")
    if network.num_addresses < 4:
        raise n_exc.InvalidInput(error_message=f"subnet {cidr} is too small")
    if gateway_ip is not None and not in_subnet(gateway_ip, str(network)):
        raise n_exc.InvalidInput(
            error_message=f"Gateway IP {gateway_ip} is not in subnet {cidr}")
    for pool in pools:
        if not (in_subnet(pool.get("start", ""), str(network))
                and in_subnet(pool.get("end", ""), str(network))):
            raise n_exc.InvalidInput(
                error_message=f"The allocation pool {pool} spans beyond the subnet {cidr}")
        if _ip(pool["start"]) > _ip(pool["end"]):
            raise n_exc.InvalidInput(error_message=f"Invalid allocation pool {pool}")
        if gateway_ip and _ip(pool["start"]) <= _ip(gateway_ip) <= _ip(pool["end"]):
            raise n_exc.InvalidInput(
                error_message=f"Gateway ip {gateway_ip} conflicts with allocation pool {pool}")
    return str(network)


def in_subnet(address: str, cidr: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    network = ipaddress.ip_network(cidr)
    return ip in network and ip not in (network.network_address, network.broadcast_address)


def in_pools(address: str, pools: list[dict]) -> bool:
    ip = _ip(address)
    return any(_ip(p["start"]) <= ip <= _ip(p["end"]) for p in pools)


def next_free(pools: list[dict], allocated: set[str]) -> str | None:
    """The lowest pool address not in ``allocated``.

    novalab hands addresses out in order, so a learner can predict them; upstream
    picks at random among the first free ones, which makes races rarer.
    """
    taken = {_ip(a) for a in allocated}
    for pool in pools:
        for value in range(_ip(pool["start"]), _ip(pool["end"]) + 1):
            if value not in taken:
                return str(ipaddress.ip_address(value))
    return None


def _ip(address: str) -> int:
    return int(ipaddress.ip_address(address))
