"""Builders for the Ceph daemons (``ceph(w)`` starts the whole cluster).

Each takes a :class:`Wiring`, starts one daemon traced as its own service and
registers its stop with ``w.on_stop`` (last started, first stopped, so OSDs can
still tell the monitor they are going). State lives under
``<state_dir>/ceph``; ports come from ``w.config.ports`` (``"ceph-mon"``,
``"ceph-rgw"``, ``"ceph-osd.<id>"``; 0 or absent picks a free one).

``w.urls["ceph-mon"]`` is the monitor's ``127.0.0.1:<port>`` (msgr, not HTTP) and
``w.urls["ceph-rgw"]`` the gateway's ``http://127.0.0.1:<port>``; the gateway
also registers itself in the cluster map's services, so a client holding only
the monitor's address can find it (``Rados.service_urls("rgw")``).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field

from novalab.reference.ceph import auth
from novalab.reference.ceph import rgw as rgw_api
from novalab.reference.ceph.auth import CephX
from novalab.reference.ceph.mon import Monitor
from novalab.reference.ceph.osd import OSD
from novalab.reference.ceph.rados import Rados
from novalab.reference.common.wiring import Wiring


def cluster_key(w: Wiring, create: bool = False) -> CephX:
    """The deployment's cephx key: the monitor's first start makes it (auth.py); every
    other daemon and client reads it, and a host without it is told which file to copy."""
    return auth.of(w.config.state_dir, create=create)


def _data_dir(w: Wiring):
    path = w.config.state_dir / "ceph"
    path.mkdir(parents=True, exist_ok=True)
    return path


def ceph_mon(w: Wiring) -> Monitor:
    mon = Monitor(_data_dir(w), w.tracer("ceph-mon"), host=w.config.bind_host,
                  port=w.config.ports.get("ceph-mon", 0), auth=cluster_key(w, create=True)).start()
    w.urls["ceph-mon"] = mon.address
    w.on_stop(mon.stop)
    return mon


def ceph_osd(w: Wiring, osd_id: int) -> OSD:
    """OSD ``osd_id``, on its own host (``host.name`` = ``osd.<id>``) as on a storage node."""
    osd = OSD(osd_id, _data_dir(w), w.urls["ceph-mon"],
              w.tracer("ceph-osd", host=f"osd.{osd_id}"), host=w.config.bind_host,
              port=w.config.ports.get(f"ceph-osd.{osd_id}", 0),
              reserve=w.config.disk_reserve, auth=cluster_key(w)).start()
    w.on_stop(osd.stop)
    return osd


def ceph_rgw(w: Wiring) -> rgw_api.Gateway:
    """The gateway; needs keystone running (it validates tokens as user ``swift``)."""
    service = "ceph-rgw"
    rados = Rados(w.urls["ceph-mon"], w.tracer(service), auth=cluster_key(w)).connect()
    w.on_stop(rados.shutdown)
    gateway = rgw_api.Gateway(rados, w.tracer(service)).start()
    gateway.faults = w.faults  # image-checksum
    app = rgw_api.create_app(gateway, w.auth(service, "swift"),
                             tracer_provider=w.provider(service))
    url = w.serve(app, service, "ceph-rgw")
    name = f"rgw.{socket.gethostname()}"
    rados.mon.service_register("rgw", name, url)
    rados.refresh_map()
    w.on_stop(lambda: rados.mon.service_unregister("rgw", name))
    return gateway


@dataclass
class CephCluster:
    mon: Monitor
    osds: list[OSD] = field(default_factory=list)
    rgw: rgw_api.Gateway | None = None


def start_cluster(w: Wiring, osds: int = 3, rgw: bool = True) -> CephCluster:
    """A monitor, ``osds`` OSDs (``osd.0`` …) and, unless ``rgw=False``, the gateway.

    All OSDs boot before any data is written: there is no backfill to move data
    onto an OSD added later (see ``docs/ceph.md``).
    """
    cluster = CephCluster(mon=ceph_mon(w))
    for osd_id in range(osds):
        cluster.osds.append(ceph_osd(w, osd_id))
    if rgw:
        cluster.rgw = ceph_rgw(w)
    return cluster


def ceph(w: Wiring, osds: int = 3) -> CephCluster:
    """The storage cluster a cloud runs: a monitor, ``osds`` OSDs and the gateway."""
    return start_cluster(w, osds=osds)
