"""Which services a cloud runs, in what order, and what the deployment adds to them.

The services are built by their projects (``reference/<project>/service.py``, on
the :class:`~novalab.reference.common.wiring.Wiring` seam); this module only
registers them under the names ``novalab service NAME`` takes, in the order a
whole cloud starts them, and adds what a deployment tool adds: the first users
and projects (``keystone-manage bootstrap`` and DevStack's), the first image and
flavors, and the catalog. The embedded cloud calls every builder in one process;
``novalab up`` runs each in a process of its own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from novalab.reference.ceph.service import ceph
from novalab.reference.cinder.service import cinder_api, cinder_volume
from novalab.reference.common.wiring import CONTROLLER, Wiring
from novalab.reference.deploy import own_units, seed
from novalab.reference.glance.service import glance_api_service
from novalab.reference.guest.cloud_init import GuestBoots
from novalab.reference.keystone.core import Keystone
from novalab.reference.keystone.service import keystone
from novalab.reference.neutron.service import (
    neutron_dhcp_agent,
    neutron_l2_agent,
    neutron_metadata_proxy,
    neutron_server,
)
from novalab.reference.nova.compute.manager import ComputeManager
from novalab.reference.nova.service import (
    nova_api,
    nova_api_metadata,
    nova_compute,
    nova_conductor,
    nova_scheduler,
    nova_super_conductor,
)
from novalab.reference.placement.service import placement

__all__ = ["BUILDERS", "CONTROLLER", "register_endpoints", "neutron_l2_agent", "runs_in"]

# Services only today's Nova has (the classic flow runs without them).
MODERN_ONLY = frozenset({"placement-api", "nova-super-conductor"})


def runs_in(name: str, topology: str) -> bool:
    """Does service ``name`` run in a cloud of ``topology`` ("classic" or "modern")?"""
    return topology == "modern" or name not in MODERN_ONLY


def _seeded(builder: Callable, seed_it: Callable[[Wiring, object], None]) -> Callable:
    """``builder``, then the deployment's first data, before anyone else can ask."""
    @functools.wraps(builder)  # keeps the signature: `up` reads the host parameter
    def build(w: Wiring, *args, **kwargs):
        built = builder(w, *args, **kwargs)
        seed_it(w, built)
        return built

    return build


def compute_host(w: Wiring, host: str, guests: GuestBoots | None = None) -> ComputeManager:
    """A compute host as DevStack lays one out: nova-compute and, with Neutron, the
    host's L2 agent, in one process here. On a real host the two are separate
    processes sharing the host's kernel and libvirtd, but libvirt's test hypervisor
    exists once per process, so only an agent in nova-compute's process sees the
    guests' taps. On that hypervisor ``guests`` stand in for the guests' cloud-init
    (one per cloud; a compute host of its own process, under `up`, makes its own).
    """
    if "neutron" in w.urls:
        neutron_l2_agent(w, host)
        if guests is None and w.config.libvirt_uri.startswith("test://"):
            guests = GuestBoots(w)
    return nova_compute(w, host, on_guest_running=guests)


# Every service ``novalab service NAME`` can start, in the order a whole cloud starts
# them (each may need the URLs of those before it). Compute hosts take a host name
# (and carry their L2 agent, see compute_host).
BUILDERS = {
    "keystone": _seeded(keystone, lambda w, core: seed.seed_keystone(core, w.config.credentials)),
    "placement-api": placement,
    "ceph": ceph,
    "glance-api": _seeded(glance_api_service, lambda w, images: seed.seed_images(images)),
    "cinder-api": cinder_api,
    "cinder-volume": cinder_volume,
    "neutron-server": _seeded(neutron_server, lambda w, core: seed.seed_networks(core)),
    "neutron-dhcp-agent": neutron_dhcp_agent,
    "nova-super-conductor": _seeded(nova_super_conductor, seed.seed_cells),
    "nova-conductor": nova_conductor,
    "nova-scheduler": nova_scheduler,
    "nova-compute": _seeded(compute_host, seed.discover_hosts),
    "nova-api": _seeded(nova_api, lambda w, compute_api: seed.seed_flavors(compute_api.db)),
    "nova-api-metadata": nova_api_metadata,
    "neutron-metadata-proxy": neutron_metadata_proxy,
}


def all_builders() -> dict[str, Callable]:
    """Every unit's builder in start order: OpenStack's services, then novalab's own
    (the lab service), which the command line hands in (``own_units.py``)."""
    return {**BUILDERS, **own_units.BUILDERS}


def register_endpoints(core: Keystone, urls: dict[str, str]) -> None:
    """Put every running API in keystone's catalog (what deployment tools do)."""
    catalog = {"keystone": ("identity", "keystone", "{}/v3"),
               "ceph-rgw": ("object-store", "swift", "{}/swift/v1"),
               "neutron": ("network", "neutron", "{}"),
               "nova": ("compute", "nova", "{}/v2.1"),
               "glance": ("image", "glance", "{}"),
               "placement": ("placement", "placement", "{}"),
               "labs": ("lab", "novalab-labs", "{}/v1"),
               # novalab's trace page: not OpenStack's, but found as its APIs are
               "web": ("trace", "novalab-web", "{}")}
    for key, (service_type, name, template) in catalog.items():
        if key in urls:
            core.register_endpoint(service_type, name, template.format(urls[key]))
    if "cinder" in urls:  # both names clients look for: volumev3 and block-storage
        for service_type in ("volumev3", "block-storage"):
            core.register_endpoint(service_type, "cinderv3",
                                   f"{urls['cinder']}/v3/$(project_id)s")
