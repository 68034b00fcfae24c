"""cinder's service builders: cinder-api and one cinder-volume backend.

``cinder_api(w)`` serves the Block Storage API under the port key ``"cinder"``;
it needs keystone and glance running (``w.urls["keystone"]``, ``["glance"]``).
``cinder_volume(w, host)`` runs one backend, ``<host>@ceph``, on the Ceph-like
cluster whose monitor is ``w.urls["ceph-mon"]``. Neither registers anything
in keystone's catalog: deployment does (``volumev3`` and ``block-storage``,
``{cinder}/v3/$(project_id)s``).
"""

from __future__ import annotations

from novalab.reference.ceph import auth as ceph_auth
from novalab.reference.cinder.api.app import create_app
from novalab.reference.cinder.db import models as _models  # noqa: F401 (tables)
from novalab.reference.cinder.image.glance import GlanceImageService
from novalab.reference.cinder.volume.api import API
from novalab.reference.cinder.volume.drivers.rbd import RBDDriver
from novalab.reference.cinder.volume.manager import VolumeManager
from novalab.reference.cinder.volume.rpcapi import TOPIC, VolumeAPI
from novalab.reference.common.wiring import Wiring

BACKEND = "ceph"          # cinder.conf [ceph] volume_backend_name, as DevStack names it
POOL = "volumes"


def cinder_api(w: Wiring) -> API:
    service = "cinder-api"
    tracer = w.tracer(service)
    db = w.database(service)
    volume_api = API(db, GlanceImageService(w.urls["glance"], w.http(service), tracer),
                     VolumeAPI(w.transport(), tracer), tracer)
    w.serve(create_app(db, volume_api, w.auth(service, "cinder"), tracer,
                       tracer_provider=w.provider(service)), service, "cinder")
    return volume_api


def cinder_volume(w: Wiring, host: str = "cinder-volume-1") -> VolumeManager:
    """One backend: the RBD driver on pool ``volumes``, serving ``cinder-volume.<host>@ceph``."""
    service = "cinder-volume"
    tracer = w.tracer(service, host)
    driver = RBDDriver(w.urls["ceph-mon"], tracer, pool=POOL, backend_name=BACKEND,
                       auth=ceph_auth.of(w.config.state_dir))
    manager = VolumeManager(f"{host}@{BACKEND}", driver, w.database(service),
                            GlanceImageService(w.urls["glance"], w.http(service, host), tracer),
                            tracer)
    manager.faults = w.faults  # volume-error
    manager.init_host()
    w.rpc_server(TOPIC, manager.host, [manager], tracer)
    return manager
