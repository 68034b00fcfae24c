"""One function per service: build it from a :class:`Wiring` and start it.

The embedded cloud calls them all in one process, in dependency order;
``novalab service NAME`` (one process per service) calls one. Each returns the
object a caller may want to reach (the keystone managers, the image registry,
a compute manager).
"""

from __future__ import annotations

import socket

from novalab.reference.ceph.rados import Rados
from novalab.reference.ceph.service import start_cluster
from novalab.reference.common.context import get_admin_context
from novalab.reference.deploy import seed
from novalab.reference.deploy.guest import GuestBoots
from novalab.reference.deploy.wiring import Wiring
from novalab.reference.glance import api as glance_api
from novalab.reference.glance.core import ImageRepo
from novalab.reference.glance.store import FileStore, RgwStore
from novalab.reference.keystone import api as keystone_api
from novalab.reference.keystone.core import Keystone
from novalab.reference.nova.api.app import create_app as create_nova_app
from novalab.reference.nova.compute.api import API as ComputeAPI
from novalab.reference.nova.compute.manager import ComputeManager
from novalab.reference.nova.compute.rpcapi import ComputeAPI as ComputeRPCAPI
from novalab.reference.nova.conductor.manager import ConductorManager
from novalab.reference.nova.conductor.rpcapi import ConductorAPI
from novalab.reference.nova.image.glance import GlanceImageServiceV2
from novalab.reference.nova.network.neutron import API as NeutronAPI
from novalab.reference.nova.scheduler import conf as scheduler_conf
from novalab.reference.nova.scheduler.manager import SchedulerManager
from novalab.reference.nova.scheduler.rpcapi import SchedulerAPI
from novalab.reference.nova.virt.images import ImageFetcher
from novalab.reference.nova.virt.libvirt.driver import LibvirtDriver
from novalab.reference.nova.virt.libvirt.qemu_standin import QemuRbdStandIn
from novalab.reference.nova.volume.cinder import API as CinderAPI

CONTROLLER = socket.gethostname()


def ceph(w: Wiring, osds: int = 3):
    """The storage cluster: a monitor, ``osds`` OSDs and an object gateway."""
    cluster = start_cluster(w, osds=osds)
    if cluster.rgw is not None:
        cluster.rgw.faults = w.faults  # image-checksum
    return cluster


def keystone(w: Wiring) -> Keystone:
    core = Keystone(w.database("keystone"), w.tracer("keystone"))
    seed.seed_keystone(core, w.config.password)
    w.serve(keystone_api.create_app(core, tracer_provider=w.provider("keystone")),
            "keystone", "keystone")
    return core


def glance_api_service(w: Wiring) -> ImageRepo:
    """Glance, storing image bytes in the Ceph object gateway when one runs."""
    auth = w.auth("glance-api", "glance")
    if "ceph-rgw" in w.urls:
        store = RgwStore(w.urls["ceph-rgw"], w.http("glance-api"), auth.service_token)
    else:
        store = FileStore(w.config.state_dir / "glance" / "images")
    images = ImageRepo(w.database("glance-api"), w.tracer("glance-api"), store)
    seed.seed_images(images)
    w.serve(glance_api.create_app(images, auth, tracer_provider=w.provider("glance-api")),
            "glance-api", "glance")
    return images


def nova_conductor(w: Wiring, host: str = CONTROLLER) -> ConductorManager:
    """The only nova service besides api and scheduler with a database handle."""
    tracer = w.tracer("nova-conductor")
    manager = ConductorManager(w.database("nova-conductor"), tracer)
    w.rpc_server("conductor", host, [manager], tracer)
    return manager


def nova_scheduler(w: Wiring, host: str = CONTROLLER) -> SchedulerManager:
    """The scheduler, configured by STATE_DIR/nova.conf (written with the defaults if
    missing, for the learner to edit; read again whenever it changes)."""
    tracer = w.tracer("nova-scheduler")
    scheduler_conf.write_default(scheduler_conf.conf_path(w.config.state_dir))
    manager = SchedulerManager(w.database("nova-scheduler"),
                               ComputeRPCAPI(w.transport(), tracer), tracer,
                               state_dir=w.config.state_dir)
    w.rpc_server("scheduler", host, [manager], tracer)
    return manager


def nova_compute(w: Wiring, host: str, guests: GuestBoots | None = None) -> ComputeManager:
    """A compute host: its own hypervisor connection, heartbeat and RPC queue.

    With Neutron deployed, the host's L2 agent starts here too, in the same
    process: on a real host the two are separate processes sharing the host's
    kernel and libvirtd, but libvirt's test hypervisor exists once per process,
    so only an agent in nova-compute's process can see the guests' taps.
    """
    service = "nova-compute"
    tracer = w.tracer(service, host)
    instances_path = w.config.state_dir / "instances" / host
    instances_path.mkdir(parents=True, exist_ok=True)
    http = w.http(service, host)
    image_api = GlanceImageServiceV2(w.urls["glance"], http, tracer)
    rados = None
    if "ceph-mon" in w.urls:
        rados = Rados(w.urls["ceph-mon"], tracer).connect()
        w.on_stop(rados.shutdown)
    # nova's own service credentials, for the object gateway (the image container
    # belongs to the service project, not to the user who boots).
    service_auth = w.auth(service, "nova", host)
    fetcher = ImageFetcher(image_api, tracer, rados=rados, http=http,
                           service_token=service_auth.service_token)
    driver = LibvirtDriver(uri=w.config.libvirt_uri, tracer=tracer,
                           instances_path=str(instances_path), image_fetcher=fetcher,
                           vif_plugging_timeout=w.config.vif_plugging_timeout)
    if w.config.libvirt_uri.startswith("test://"):
        # The test hypervisor runs no QEMU and no guest: novalab's stand-ins do
        # their part (QEMU opening rbd disks, the guest asking for metadata).
        if guests is None and "neutron" in w.urls:
            guests = GuestBoots(w)  # a compute host of its own process (`novalab up`)
        if rados is not None:
            driver._host.on_domain_start = QemuRbdStandIn(tracer)
        if guests is not None:
            driver.on_guest_running = guests
    network_api = None
    if "neutron" in w.urls:
        network_api = NeutronAPI(w.urls["neutron"], http, tracer,
                                 admin_token=service_auth.service_token)
    volume_api = CinderAPI(w.urls["cinder"], http, tracer) if "cinder" in w.urls else None
    manager = ComputeManager(host, driver, ConductorAPI(w.transport(), tracer), tracer,
                             report_interval=w.config.report_interval,
                             network_api=network_api, volume_api=volume_api,
                             faults=w.faults)
    if "neutron" in w.urls:
        neutron_l2_agent(w, host)
    w.rpc_server("compute", host, [manager], tracer)
    manager.init_host()
    manager.start_heartbeat()
    # Stop callbacks run last-registered first: drain the builds in flight
    # (manager.stop), then remove what they defined on the test hypervisor.
    if w.config.libvirt_uri.startswith("test:///"):
        w.on_stop(lambda: _remove_test_guests(manager))
    w.on_stop(manager.stop)
    return manager


def _remove_test_guests(compute: ComputeManager) -> None:
    """Destroy a host's guests on libvirt's in-process test hypervisor.

    ``test:///default`` is one hypervisor per *process*: a second cloud started
    in the same process (tests, benchmarks) would otherwise find the first
    cloud's ``instance-00000001`` still defined. A real hypervisor's guests are
    left alone (this runs for ``test://`` URIs only).
    """
    context = get_admin_context()
    for uuid in list(compute.driver.defined_here):  # no RPC: the broker may be gone
        compute.driver.destroy(context, {"uuid": uuid})


def nova_api(w: Wiring) -> ComputeAPI:
    db = w.database("nova-api")
    seed.seed_flavors(db)
    tracer = w.tracer("nova-api")
    transport = w.transport()
    http = w.http("nova-api")
    volume_api = CinderAPI(w.urls["cinder"], http, tracer) if "cinder" in w.urls else None
    compute_api = ComputeAPI(
        db, GlanceImageServiceV2(w.urls["glance"], http, tracer),
        SchedulerAPI(transport, tracer), ComputeRPCAPI(transport, tracer), tracer,
        volume_api=volume_api)
    w.serve(create_nova_app(db, compute_api, w.auth("nova-api", "nova"), tracer,
                            tracer_provider=w.provider("nova-api")), "nova-api", "nova")
    return compute_api


def cinder_api(w: Wiring):
    from novalab.reference.cinder import service as cinder

    return cinder.cinder_api(w)


def cinder_volume(w: Wiring, host: str = "cinder-volume-1"):
    from novalab.reference.cinder import service as cinder

    manager = cinder.cinder_volume(w, host)
    manager.faults = w.faults  # volume-error
    return manager


def neutron_server(w: Wiring):
    from novalab.reference.neutron import service as neutron

    core = neutron.neutron_server(w)
    core.faults = w.faults  # port-binding, vif-plugged-timeout
    return core


def neutron_dhcp_agent(w: Wiring, host: str = CONTROLLER):
    from novalab.reference.neutron import service as neutron

    return neutron.neutron_dhcp_agent(w, host)


def neutron_l2_agent(w: Wiring, host: str):
    from novalab.reference.neutron import service as neutron

    return neutron.neutron_l2_agent(w, host)


def neutron_metadata_proxy(w: Wiring):
    from novalab.reference.neutron import service as neutron

    return neutron.neutron_metadata_proxy(w)


def nova_api_metadata(w: Wiring):
    from novalab.reference.neutron import service as neutron

    return neutron.nova_api_metadata(w)


# Every service ``novalab service NAME`` can start, in the order a whole cloud starts
# them (each may need the URLs of those before it). Compute hosts take a host name
# (and carry their L2 agent, see nova_compute).
BUILDERS = {
    "keystone": keystone,
    "ceph": ceph,
    "glance-api": glance_api_service,
    "cinder-api": cinder_api,
    "cinder-volume": cinder_volume,
    "neutron-server": neutron_server,
    "neutron-dhcp-agent": neutron_dhcp_agent,
    "nova-conductor": nova_conductor,
    "nova-scheduler": nova_scheduler,
    "nova-compute": nova_compute,
    "nova-api": nova_api,
    "nova-api-metadata": nova_api_metadata,
    "neutron-metadata-proxy": neutron_metadata_proxy,
}


def register_endpoints(core: Keystone, urls: dict[str, str]) -> None:
    """Put every running API in keystone's catalog (what deployment tools do)."""
    catalog = {"keystone": ("identity", "keystone", "{}/v3"),
               "ceph-rgw": ("object-store", "swift", "{}/swift/v1"),
               "neutron": ("network", "neutron", "{}"),
               "nova": ("compute", "nova", "{}/v2.1"),
               "glance": ("image", "glance", "{}")}
    for key, (service_type, name, template) in catalog.items():
        if key in urls:
            core.register_endpoint(service_type, name, template.format(urls[key]))
    if "cinder" in urls:  # both names clients look for: volumev3 and block-storage
        for service_type in ("volumev3", "block-storage"):
            core.register_endpoint(service_type, "cinderv3",
                                   f"{urls['cinder']}/v3/$(project_id)s")
