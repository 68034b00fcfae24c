"""A real little Ceph cluster per module: a monitor, three OSDs, rgw and keystone.

Every daemon is its own traced service of one in-memory :class:`Telemetry`, wired
as ``reference/ceph/service.py`` wires them. rgw validates tokens as the service
user ``swift``, which the seed may not have yet: it is added for these tests.
"""

from __future__ import annotations

import time

import httpx
import pytest

from novalab.reference.ceph import service
from novalab.reference.ceph.rados import Rados
from novalab.reference.common.wiring import CloudConfig, Wiring
from novalab.reference.deploy import seed
from novalab.reference.deploy import services as deploy_services
from novalab.reference.deploy.embedded import create_schema
from novalab.tracing.setup import Telemetry


class CephEnv:
    def __init__(self, state_dir, osds: int = 3, rgw: bool = True):
        self.telemetry = Telemetry(memory=True, otlp=False)
        self.w = Wiring(CloudConfig(state_dir=state_dir), self.telemetry)
        try:
            if rgw:
                create_schema(self.w.config.db_url)
                with pytest.MonkeyPatch.context() as patch:
                    patch.setitem(seed.USERS, "swift", {"project": "service",
                                                        "roles": ["service"]})
                    deploy_services.BUILDERS["keystone"](self.w)
            self.cluster = service.start_cluster(self.w, osds=osds, rgw=rgw)
            self.key = service.cluster_key(self.w)  # the keyring the monitor made
            self.rados = Rados(self.w.urls["ceph-mon"], self.w.tracer("novalab-client"),
                               auth=self.key).connect()
        except BaseException:
            self.close()
            raise
        self.http = httpx.Client(timeout=30)

    @property
    def data_dir(self):
        return self.w.config.state_dir / "ceph"

    def token(self, user: str = "demo", project: str | None = None) -> str:
        body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": user, "domain": {"id": "default"},
            "password": self.w.config.credentials.password_for(user)}}},
            "scope": {"project": {"name": project or user, "domain": {"id": "default"}}}}}
        response = self.http.post(f"{self.w.urls['keystone']}/v3/auth/tokens", json=body)
        assert response.status_code == 201, response.text
        return response.headers["X-Subject-Token"]

    def wait_for_spans(self, trace_id: int, predicate, timeout: float = 10.0):
        """The trace's spans once ``predicate(spans)`` holds (a server may end its span
        just after the client has the response)."""
        deadline = time.monotonic() + timeout
        while True:
            spans = self.telemetry.finished_spans(trace_id)
            if predicate(spans) or time.monotonic() > deadline:
                return spans
            time.sleep(0.02)

    def close(self):
        if getattr(self, "rados", None) is not None:
            self.rados.shutdown()
        if getattr(self, "http", None) is not None:
            self.http.close()
        self.w.close()
        self.telemetry.shutdown()


@pytest.fixture(scope="module")
def ceph(tmp_path_factory):
    env = CephEnv(tmp_path_factory.mktemp("ceph"))
    yield env
    env.close()


@pytest.fixture
def fresh_ceph(tmp_path):
    """A cluster of its own (no rgw) for tests that stop and restart daemons."""
    env = CephEnv(tmp_path / "cloud", rgw=False)
    yield env
    env.close()
