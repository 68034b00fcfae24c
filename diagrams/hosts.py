"""Which host each service of a trace ran on, for diagrams of a cloud spread over hosts.

Every span's resource names its host (``host.name``) and, for services started
with ``novalab service --advertise-address``, the address other hosts reach it
at (``host.ip``). One machine's cloud (embedded, or ``novalab up`` on loopback)
has one address, and its diagrams stay as they were; a trace whose resources
carry two or more addresses crossed real (or namespaced) hosts, and the
diagrams say where each participant ran (docs/multihost.md).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from novalab.tracing import attributes as attr


def addresses(spans: Iterable) -> dict[str, tuple[str, ...]]:
    """host.name -> its host.ip addresses, over the spans' resources."""
    found: dict[str, set[str]] = defaultdict(set)
    for span in spans:
        ips = span.resource.get(attr.HOST_IP)
        if span.host and ips:
            found[span.host].update([ips] if isinstance(ips, str) else ips)
    return {host: tuple(sorted(ips)) for host, ips in found.items()}


def crosses_hosts(spans: Iterable) -> bool:
    """Do the spans come from two or more addresses (hosts that are really apart)?"""
    return len({ip for ips in addresses(spans).values() for ip in ips}) > 1


def by_service(spans: Iterable) -> dict[str, tuple[str, ...]]:
    """service.name -> the hosts its spans ran on; empty unless the spans cross hosts."""
    spans = list(spans)
    if not crosses_hosts(spans):
        return {}
    found: dict[str, set[str]] = defaultdict(set)
    for span in spans:
        if span.host:
            found[span.service].add(span.host)
    return {service: tuple(sorted(hosts)) for service, hosts in found.items()}


def label(hosts: Iterable[str]) -> str:
    """``@ compute-1, compute-2``: how a participant's hosts are written under its name."""
    hosts = list(hosts)
    return f"@ {', '.join(hosts)}" if hosts else ""
