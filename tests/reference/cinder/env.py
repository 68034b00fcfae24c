"""A block-storage cloud for tests: keystone, glance, a Ceph-like cluster and cinder.

Each service is built by its own builder on one :class:`Wiring` (its own tracer
provider, database engine, RPC transport, HTTP client), as the embedded cloud
wires them, and the catalog gets the ``volumev3`` endpoint a deployment adds.
Loaded by path from the conftests of ``tests/reference/cinder`` and
``tests/reference/nova/volume``.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
from opentelemetry import trace

from novalab.reference.ceph import service as ceph_service
from novalab.reference.ceph.rados import Rados
from novalab.reference.cinder import service as cinder_service
from novalab.reference.cinder.db import models as _cinder_models  # noqa: F401 (tables)
from novalab.reference.common.context import RequestContext
from novalab.reference.common.wiring import CloudConfig, Wiring
from novalab.reference.deploy import services
from novalab.reference.deploy.embedded import create_schema
from novalab.tracing.http import http_client
from novalab.tracing.setup import Telemetry


class Session:
    """A user's token and project, and requests to cinder with them."""

    def __init__(self, env: CinderEnv, user: str, project: str | None = None):
        body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": user, "domain": {"id": "default"},
            "password": env.w.config.credentials.password_for(user)}}},
            "scope": {"project": {"name": project or user, "domain": {"id": "default"}}}}}
        response = env.http.post(f"{env.w.urls['keystone']}/v3/auth/tokens", json=body)
        assert response.status_code == 201, response.text
        token = response.json()["token"]
        self.env = env
        self.token = response.headers["X-Subject-Token"]
        self.project_id = token["project"]["id"]
        self.user_id = token["user"]["id"]
        self.roles = [r["name"] for r in token["roles"]]
        (volume,) = [s for s in token["catalog"] if s["type"] == "volumev3"]
        self.volume = volume["endpoints"][0]["url"]      # .../v3/<project_id>

    def context(self) -> RequestContext:
        return RequestContext(user_id=self.user_id, project_id=self.project_id,
                              roles=self.roles, auth_token=self.token)

    def request(self, method: str, path: str, version: str | None = None, **kwargs):
        headers = {"X-Auth-Token": self.token, **kwargs.pop("headers", {})}
        if version:
            headers["OpenStack-API-Version"] = f"volume {version}"
        url = path if path.startswith("http") else f"{self.volume}{path}"
        return self.env.http.request(method, url, headers=headers, **kwargs)

    def create_volume(self, **volume):
        response = self.request("POST", "/volumes", json={"volume": {"size": 1, **volume}})
        assert response.status_code == 202, response.text
        return response.json()["volume"]

    def wait_volume(self, volume_id: str, statuses=("available", "error"),
                    timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            volume = self.request("GET", f"/volumes/{volume_id}").json()["volume"]
            if volume["status"] in statuses:
                return volume
            time.sleep(0.02)
        raise AssertionError(f"volume {volume_id} did not reach {statuses}")

    def wait_gone(self, volume_id: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            response = self.request("GET", f"/volumes/{volume_id}")
            if response.status_code == 404:
                return
            assert response.json()["volume"]["status"] == "deleting"
            time.sleep(0.02)
        raise AssertionError(f"volume {volume_id} was not deleted")


class CinderEnv:
    def __init__(self, state_dir: Path):
        self.telemetry = Telemetry(memory=True, otlp=False)
        self.w = Wiring(CloudConfig(state_dir=state_dir), self.telemetry)
        self.http = httpx.Client(timeout=30)
        self.rados = None
        try:
            create_schema(self.w.config.db_url)
            self.keystone = services.BUILDERS["keystone"](self.w)
            self.cluster = ceph_service.start_cluster(self.w, osds=3, rgw=False)
            self.images = services.BUILDERS["glance-api"](self.w)
            self.cirros = self.images.find_by_name("cirros")
            self.volume_api = cinder_service.cinder_api(self.w)
            self.manager = cinder_service.cinder_volume(self.w)
            services.register_endpoints(self.keystone, self.w.urls)
            self.keystone.register_endpoint("volumev3", "cinderv3",
                                            f"{self.w.urls['cinder']}/v3/$(project_id)s")
            self.rados = Rados(self.w.urls["ceph-mon"], self.w.tracer("test-client"),
                               auth=ceph_service.cluster_key(self.w)).connect()
        except BaseException:
            self.close()
            raise

    @property
    def cinder(self) -> str:
        return self.w.urls["cinder"]

    def login(self, user: str = "demo", project: str | None = None) -> Session:
        return Session(self, user, project)

    def ioctx(self):
        return self.rados.open_ioctx("volumes")

    def traced_client(self):
        """An HTTP client whose requests start traces (the test plays a traced client of
        the deployment's owner: it signs its context, so the services join its trace)."""
        return http_client(self.w.provider("test-client"), trace_key=self.w.trace_key)

    def tracer(self) -> trace.Tracer:
        return self.w.tracer("test-client")

    def wait_for_spans(self, trace_id: int, predicate, timeout: float = 10.0) -> list:
        """The trace's spans once ``predicate(spans)`` holds (a service may end its span
        just after the client has its answer)."""
        deadline = time.monotonic() + timeout
        while True:
            spans = self.telemetry.finished_spans(trace_id)
            if predicate(spans) or time.monotonic() > deadline:
                return spans
            time.sleep(0.02)

    def close(self) -> None:
        if self.rados is not None:
            self.rados.shutdown()
        self.http.close()
        self.w.close()
        self.telemetry.shutdown()


def service_name(span) -> str:
    return span.resource.attributes["service.name"]
