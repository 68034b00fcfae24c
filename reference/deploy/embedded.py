"""The embedded cloud: every service in one process, talking as separate services do.

Each service gets what it would have as its own process (see ``wiring.py``): its
own tracer provider, database engine, RPC transport and HTTP client. They meet
only through HTTP on loopback, the message broker and the database, so the
traces are those of a real deployment. Defaults need nothing installed or
running: the in-memory broker, a SQLite file and libvirt's ``test:///default``.
"""

from __future__ import annotations

import logging

from novalab.reference.cinder.db import models as _cinder_models  # noqa: F401 (tables)
from novalab.reference.common.db import Base, Database
from novalab.reference.common.wiring import CloudConfig, Wiring
from novalab.reference.deploy import services
from novalab.reference.deploy.statedir import StateDirLock
from novalab.reference.glance import models as _glance_models  # noqa: F401 (tables)
from novalab.reference.guest.cloud_init import GuestBoots
from novalab.reference.keystone import models as _keystone_models  # noqa: F401 (tables)
from novalab.reference.neutron.db import models as _neutron_models  # noqa: F401 (tables)
from novalab.reference.nova.compute.manager import ComputeManager
from novalab.reference.nova.db import api_models as _nova_api_models  # noqa: F401
from novalab.reference.nova.db import models as _nova_models  # noqa: F401 (tables)
from novalab.tracing.setup import Telemetry

__all__ = ["CloudConfig", "EmbeddedCloud"]

LOG = logging.getLogger(__name__)


def create_schema(db_url: str) -> None:
    """Create every service's tables (idempotent)."""
    db = Database(db_url)
    try:
        Base.metadata.create_all(db.engine)
    finally:
        db.dispose()


class EmbeddedCloud:
    """Start with :meth:`start`, stop with :meth:`stop` (or use ``with``)."""

    def __init__(self, config: CloudConfig | None = None, telemetry: Telemetry | None = None):
        self.telemetry = telemetry or Telemetry(memory=True)
        self.wiring = Wiring(config or CloudConfig(), self.telemetry)
        self.config = self.wiring.config
        self.traced = self.telemetry.enabled
        self.computes: list[ComputeManager] = []
        self.guests: GuestBoots | None = None

    @property
    def urls(self) -> dict[str, str]:
        return self.wiring.urls

    @property
    def identity_url(self) -> str:
        return f"{self.urls['keystone']}/v3"

    def start(self) -> EmbeddedCloud:
        self._lock = StateDirLock(self.config.state_dir, holder="an embedded cloud").acquire()
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        w = self.wiring
        build = services.BUILDERS
        create_schema(self.config.db_url)
        self.keystone = build["keystone"](w)
        if services.runs_in("placement-api", self.config.topology):
            self.placement = build["placement-api"](w)
        self.ceph = build["ceph"](w)
        self.images = build["glance-api"](w)
        self.cirros = self.images.find_by_name("cirros")
        self.volumes = build["cinder-api"](w)
        self.volume_manager = build["cinder-volume"](w)
        if self.config.network:
            self.network = build["neutron-server"](w)
            build["neutron-dhcp-agent"](w)
        if services.runs_in("nova-super-conductor", self.config.topology):
            build["nova-super-conductor"](w)
        build["nova-conductor"](w)
        self.scheduler = build["nova-scheduler"](w)
        self.guests = GuestBoots(w)
        for index in range(1, self.config.computes + 1):
            host = f"compute-{index}"
            self.computes.append(build["nova-compute"](w, host, self.guests))
        self.compute_api = build["nova-api"](w)
        if self.config.network:
            build["nova-api-metadata"](w)
            build["neutron-metadata-proxy"](w)
        services.register_endpoints(self.keystone, self.urls)

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Wait for in-flight builds, so every span of a boot has ended."""
        builds = all(c.wait_for_builds(timeout) for c in self.computes)
        return (self.guests is None or self.guests.wait(timeout)) and builds

    def stop(self) -> None:
        self.wiring.close()
        self.computes.clear()
        if getattr(self, "_lock", None) is not None:
            self._lock.release()

    def __enter__(self) -> EmbeddedCloud:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
