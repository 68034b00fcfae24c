"""nova's service builders: api, conductor, scheduler, compute and api-metadata.

Each builds one service on a :class:`~novalab.reference.common.wiring.Wiring`
and starts it, as upstream's ``nova/service.py`` ``Service.start`` does for the
RPC services (a manager, its RPC server on a topic, a periodic report) and
``wsgi`` for the APIs. They need keystone and glance running; ``nova_compute``
also the conductor, and Neutron, Cinder and Ceph when the cloud has them
(it looks at ``w.urls``). The embedded cloud calls them in one process;
``novalab service NAME`` calls one (``reference/deploy/services.py``).
"""

from __future__ import annotations

from collections.abc import Callable

from novalab.reference.ceph import auth as ceph_auth
from novalab.reference.ceph.rados import Rados
from novalab.reference.common.context import get_admin_context
from novalab.reference.common.wiring import CONTROLLER, Wiring
from novalab.reference.nova import cells
from novalab.reference.nova.api import metadata as nova_metadata
from novalab.reference.nova.api.app import create_app as create_nova_app
from novalab.reference.nova.cells import CellDatabases
from novalab.reference.nova.compute.api import API as ComputeAPI
from novalab.reference.nova.compute.manager import ComputeManager
from novalab.reference.nova.compute.rpcapi import ComputeAPI as ComputeRPCAPI
from novalab.reference.nova.compute.shelve import shelved_offload_time
from novalab.reference.nova.conductor.manager import ComputeTaskManager, ConductorManager
from novalab.reference.nova.conductor.rpcapi import ComputeTaskAPI, ConductorAPI
from novalab.reference.nova.image.glance import GlanceImageServiceV2
from novalab.reference.nova.network.neutron import API as NeutronAPI
from novalab.reference.nova.scheduler import conf as scheduler_conf
from novalab.reference.nova.scheduler.client.report import SchedulerReportClient
from novalab.reference.nova.scheduler.manager import SchedulerManager
from novalab.reference.nova.scheduler.rpcapi import SchedulerAPI
from novalab.reference.nova.servicegroup import Heartbeat
from novalab.reference.nova.virt.images import ImageFetcher
from novalab.reference.nova.virt.libvirt.driver import LibvirtDriver
from novalab.reference.nova.virt.libvirt.qemu_standin import QemuRbdStandIn
from novalab.reference.nova.volume.cinder import API as CinderAPI


def nova_api(w: Wiring) -> ComputeAPI:
    """The compute API on port key ``nova`` (its flavors come from the deployment)."""
    service = "nova-api"
    db = w.database(service)
    tracer = w.tracer(service)
    transport = w.transport()
    http = w.http(service)
    volume_api = CinderAPI(w.urls["cinder"], http, tracer) if "cinder" in w.urls else None
    auth = w.auth(service, "nova")
    # Deleting a shelve-offloaded server frees its ports here: no host has it.
    network_api = NeutronAPI(w.urls["neutron"], http, tracer,
                             admin_token=auth.service_token) if "neutron" in w.urls else None
    cells, placement_client = _modern_parts(w, service, db, http, tracer, auth)
    compute_api = ComputeAPI(
        db, GlanceImageServiceV2(w.urls["glance"], http, tracer),
        SchedulerAPI(transport, tracer),
        ComputeRPCAPI(w.transport(cell_transport_url(w)), tracer), tracer,
        volume_api=volume_api, compute_task_api=ComputeTaskAPI(transport, tracer),
        network_api=network_api, cells=cells, placement_client=placement_client)
    w.serve(create_nova_app(db, compute_api, auth, tracer,
                            tracer_provider=w.provider(service)), service, "nova")
    return compute_api


def _modern_parts(w: Wiring, service: str, db, http, tracer, auth=None):
    """(cells, placement client) of a service that holds the API database, in the
    modern topology; (None, None) in the classic one, which has neither."""
    if w.config.topology != "modern":
        return None, None
    auth = auth or w.auth(service, "nova")
    cells = CellDatabases(db, tracer, w.provider(service))
    w.on_stop(cells.dispose)
    return cells, SchedulerReportClient(w.urls["placement"], http, tracer, auth.service_token)


def cell_transport_url(w: Wiring) -> str | None:
    """The broker of cell1 in the modern topology (None: the cloud's own)."""
    if w.config.topology != "modern":
        return None
    return cells.cell_transport_url(w.config.transport_url)


def _compute_task_manager(w: Wiring, service: str, host: str) -> ComputeTaskManager:
    """The tasks that need the scheduler before a host can act: unshelve, and in
    the modern topology ``schedule_and_build_instances``. The scheduler is on the
    top-level broker; compute hosts on their cell's."""
    tracer = w.tracer(service)
    db = w.database(service)
    http = w.http(service)
    cell_db_handles, report_client = _modern_parts(w, service, db, http, tracer)
    return ComputeTaskManager(
        db, GlanceImageServiceV2(w.urls["glance"], http, tracer),
        SchedulerAPI(w.transport(), tracer, uses_placement=report_client is not None),
        ComputeRPCAPI(w.transport(cell_transport_url(w)), tracer), tracer, host,
        cells=cell_db_handles, report_client=report_client)


def nova_conductor(w: Wiring, host: str = CONTROLLER) -> ConductorManager:
    """The only nova service besides api and scheduler with a database handle.

    In the classic topology two endpoints on one topic, as upstream: the database
    work compute hosts ask for, and the tasks that need the scheduler first
    (unshelve). In the modern topology this is cell1's conductor, on cell1's
    broker, doing only the database work; the tasks are the super conductor's.
    """
    service = "nova-conductor"
    tracer = w.tracer(service)
    manager = ConductorManager(w.database(service), tracer)
    if w.config.topology == "modern":
        w.rpc_server("conductor", host, [manager], tracer, transport_url=cell_transport_url(w))
    else:
        w.rpc_server("conductor", host, [manager, _compute_task_manager(w, service, host)],
                     tracer)
    _report_state(w, manager.db, host, "nova-conductor", "conductor")
    return manager


def _report_state(w: Wiring, db, host: str, binary: str, topic: str) -> None:
    """The service's row and heartbeat (``Service.start``: ``service_ref``, then the
    servicegroup's periodic ``report_state``), for the services that write it themselves."""
    heartbeat = Heartbeat(db, host, binary, topic, w.config.report_interval).start()
    w.on_stop(heartbeat.stop)


def nova_super_conductor(w: Wiring, host: str = CONTROLLER) -> ComputeTaskManager:
    """The modern topology's super conductor (DevStack's ``n-super-cond``): the
    ``conductor`` topic on the top-level broker, holding the API database and
    reaching every cell's. It creates instances in cells; it serves no compute
    host (they cannot reach this broker)."""
    service = "nova-super-conductor"
    tasks = _compute_task_manager(w, service, host)
    w.rpc_server("conductor", host, [tasks], tasks.tracer)
    return tasks


def nova_scheduler(w: Wiring, host: str = CONTROLLER) -> SchedulerManager:
    """The scheduler, configured by STATE_DIR/nova.conf (written with the defaults if
    missing, for the learner to edit; read again whenever it changes)."""
    service = "nova-scheduler"
    tracer = w.tracer(service)
    db = w.database(service)
    scheduler_conf.write_default(scheduler_conf.conf_path(w.config.state_dir))
    _cells, placement_client = _modern_parts(w, service, db, w.http(service), tracer)
    manager = SchedulerManager(db, ComputeRPCAPI(w.transport(cell_transport_url(w)), tracer),
                               tracer,
                               state_dir=w.config.state_dir,
                               placement_client=placement_client)
    w.rpc_server("scheduler", host, [manager], tracer)
    _report_state(w, db, host, "nova-scheduler", "scheduler")
    return manager


def nova_compute(w: Wiring, host: str,
                 on_guest_running: Callable | None = None) -> ComputeManager:
    """nova-compute on ``host``: its own hypervisor connection, heartbeat and RPC queue.

    ``on_guest_running`` is what stands in for the guest on libvirt's test hypervisor
    (the guest's cloud-init, ``reference/guest``), called when a domain runs. A whole
    compute host (nova-compute, its L2 agent, its guests) is ``deploy.services.compute_host``.
    """
    service = "nova-compute"
    tracer = w.tracer(service, host)
    instances_path = w.config.state_dir / "instances" / host
    instances_path.mkdir(parents=True, exist_ok=True)
    http = w.http(service, host)
    image_api = GlanceImageServiceV2(w.urls["glance"], http, tracer)
    rados = None
    if "ceph-mon" in w.urls:
        rados = Rados(w.urls["ceph-mon"], tracer, auth=ceph_auth.of(w.config.state_dir)).connect()
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
        if rados is not None:
            driver._host.on_domain_start = QemuRbdStandIn.on_host(w, host)
        if on_guest_running is not None:
            driver.on_guest_running = on_guest_running
    network_api = None
    if "neutron" in w.urls:
        network_api = NeutronAPI(w.urls["neutron"], http, tracer,
                                 admin_token=service_auth.service_token)
    volume_api = CinderAPI(w.urls["cinder"], http, tracer) if "cinder" in w.urls else None
    reportclient = None
    if "placement" in w.urls:  # the modern topology: the node is a resource provider
        reportclient = SchedulerReportClient(w.urls["placement"], http, tracer,
                                             service_auth.service_token)
    cell_broker = cell_transport_url(w)  # a compute host talks to its cell's conductor only
    manager = ComputeManager(host, driver, ConductorAPI(w.transport(cell_broker), tracer),
                             tracer,
                             report_interval=w.config.report_interval,
                             network_api=network_api, volume_api=volume_api,
                             faults=w.faults, reportclient=reportclient)
    manager.image_api = image_api
    manager.shelved_offload_time = shelved_offload_time(
        scheduler_conf.conf_path(w.config.state_dir))
    w.rpc_server("compute", host, [manager], tracer, transport_url=cell_broker)
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


def nova_api_metadata(w: Wiring) -> str:
    """nova-api-metadata on port key ``metadata``, with its own database handle."""
    service = "nova-api-metadata"
    tracer = w.tracer(service)
    network_api = None
    if "neutron" in w.urls:
        network_api = NeutronAPI(w.urls["neutron"], w.http(service), tracer,
                                 admin_token=w.auth(service, "nova").service_token)
    return w.serve(nova_metadata.create_app(w.database(service), network_api, tracer,
                                            w.metadata_secret,
                                            tracer_provider=w.provider(service)),
                   service, "metadata")
