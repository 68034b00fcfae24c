"""Resource classes (``placement/objects/resource_class.py``, ``os-resource-classes``).

The standard classes, in os-resource-classes' order. Upstream keeps them in a
``resource_classes`` table (synced from that library at start-up) beside the
custom ``CUSTOM_*`` classes an admin may add; novalab has only the standard
ones, so a list is enough, and rows name their class directly.
"""

from __future__ import annotations

from novalab.reference.placement import exception

STANDARDS = (
    "VCPU", "MEMORY_MB", "DISK_GB", "PCI_DEVICE", "SRIOV_NET_VF", "NUMA_SOCKET", "NUMA_CORE",
    "NUMA_THREAD", "NUMA_MEMORY_MB", "IPV4_ADDRESS", "VGPU", "VGPU_DISPLAY_HEAD",
    "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC", "PCPU", "MEM_ENCRYPTION_CONTEXT",
    "FPGA", "PGPU", "NET_PACKET_RATE_KILOPACKET_PER_SEC",
    "NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC", "NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC",
)


def get_all() -> list[str]:
    return list(STANDARDS)


def ensure(name: str) -> str:
    """``name`` if it is a resource class, else ``ResourceClassNotFound``."""
    if name not in STANDARDS:
        raise exception.ResourceClassNotFound(name=name)
    return name
