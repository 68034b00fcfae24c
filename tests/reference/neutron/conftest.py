"""A networking cloud for the neutron tests: keystone, neutron and its agents, metadata.

Nova itself is not started: a small Flask app stands in for nova-api's
``os-server-external-events`` (recording what neutron posts) — a test double of
Nova, which these tests only need as the receiver of neutron's notifications.
"""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from flask import Flask, jsonify, request

from novalab.reference.common.db import Base, Database
from novalab.reference.common.wiring import CloudConfig, Wiring
from novalab.reference.deploy import seed, services
from novalab.reference.glance import models as _glance_models  # noqa: F401 (tables)
from novalab.reference.keystone import models as _keystone_models  # noqa: F401 (tables)
from novalab.reference.neutron import service
from novalab.reference.nova import service as nova_service
from novalab.reference.nova.db import models as _nova_models  # noqa: F401 (tables)
from novalab.tracing.setup import Telemetry

COMPUTE_HOST = "compute-1"


class NovaEventsStub:
    """Records ``POST /v2.1/os-server-external-events`` and answers as Nova does (200)."""

    def __init__(self):
        self.events: list[dict] = []
        self.tokens: list[str] = []
        self.arrived = threading.Condition()
        self.app = Flask("nova-events-stub")

        @self.app.post("/v2.1/os-server-external-events")
        def events():
            body = request.get_json()
            with self.arrived:
                self.events.extend(body["events"])
                self.tokens.append(request.headers.get("X-Auth-Token", ""))
                self.arrived.notify_all()
            return jsonify({"events": [dict(e, code=200) for e in body["events"]]})

    def wait_for(self, predicate, timeout: float = 30.0) -> list[dict]:
        deadline = time.monotonic() + timeout
        with self.arrived:
            while not [e for e in self.events if predicate(e)]:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"no matching event; got {self.events}")
                self.arrived.wait(remaining)
            return [e for e in self.events if predicate(e)]


class NetworkingCloud:
    def __init__(self, tmp_path, monkeypatch):
        # The lead adds "neutron" to the seeded service users; until then, add it here.
        monkeypatch.setitem(seed.USERS, "neutron", {"project": "service", "roles": ["service"]})
        # A second ordinary project, to check isolation (DevStack's alt_demo).
        monkeypatch.setitem(seed.USERS, "alt_demo", {"project": "alt_demo",
                                                     "roles": ["member", "reader"]})
        self.telemetry = Telemetry(memory=True, otlp=False)
        self.w = Wiring(CloudConfig(state_dir=tmp_path / "cloud", report_interval=0),
                        self.telemetry)
        db = Database(self.w.config.db_url)
        Base.metadata.create_all(db.engine)
        db.dispose()
        self.http = httpx.Client(timeout=30)
        self._guests = []

    def start(self) -> NetworkingCloud:
        w = self.w
        self.keystone = services.BUILDERS["keystone"](w)
        self.nova = NovaEventsStub()
        w.serve(self.nova.app, "nova-events-stub", "nova")
        self.core = services.BUILDERS["neutron-server"](w)  # with its seeded networks
        self.dhcp = service.neutron_dhcp_agent(w)
        self.l2 = service.neutron_l2_agent(w, COMPUTE_HOST)
        nova_service.nova_api_metadata(w)
        self.proxy = service.neutron_metadata_proxy(w)
        self.neutron = w.urls["neutron"] + "/v2.0"
        return self

    def token(self, user: str = "demo", project: str | None = None) -> str:
        body = {"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": user, "domain": {"id": "default"},
            "password": self.w.config.credentials.password_for(user)}}},
            "scope": {"project": {"name": project or user, "domain": {"id": "default"}}}}}
        response = self.http.post(f"{self.w.urls['keystone']}/v3/auth/tokens", json=body)
        assert response.status_code == 201, response.text
        return response.headers["X-Subject-Token"]

    def request(self, method: str, path: str, token: str, **kwargs) -> httpx.Response:
        headers = {"X-Auth-Token": token, **kwargs.pop("headers", {})}
        return self.http.request(method, f"{self.neutron}{path}", headers=headers, **kwargs)

    def spans(self, trace_id: int | None = None):
        self.telemetry.force_flush()
        return self.telemetry.finished_spans(trace_id)

    def wait(self, predicate, timeout: float = 30.0, what: str = "condition"):
        """Poll ``predicate`` until it returns something truthy (agents work asynchronously)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            result = predicate()
            if result:
                return result
            time.sleep(0.02)
        raise AssertionError(f"timed out waiting for {what}")

    def start_guest(self, port_id: str) -> None:
        """A guest whose interface is this port's tap, as nova-compute would start it.

        The L2 agent wires a port (and so it goes ACTIVE) only once its tap
        exists on the host; on the test hypervisor the tap is the domain's
        interface target.
        """
        import libvirt

        conn = libvirt.open("test:///default")
        name = f"guest-{port_id[:8]}"
        xml = (f"<domain type='test'><name>{name}</name><memory>65536</memory>"
               "<vcpu>1</vcpu><os><type arch='i686'>hvm</type></os><devices>"
               "<interface type='bridge'><source bridge='brq-test'/>"
               f"<target dev='{('tap' + port_id)[:14]}'/></interface></devices></domain>")
        conn.defineXML(xml).create()
        self._guests.append((conn, name))

    def stop(self) -> None:
        for conn, name in self._guests:
            domain = conn.lookupByName(name)
            domain.destroy()
            domain.undefine()
            conn.close()
        self.w.close()
        self.http.close()
        self.telemetry.shutdown()


@pytest.fixture
def netcloud(tmp_path, monkeypatch):
    cloud = NetworkingCloud(tmp_path, monkeypatch).start()
    yield cloud
    cloud.stop()
