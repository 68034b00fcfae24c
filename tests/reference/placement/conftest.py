"""A placement cloud for tests: keystone and placement-api on one :class:`Wiring`.

Keystone is built by its deployment builder (so it is seeded with the users,
``placement`` among them), placement by its own; the test registers the
``placement`` catalog entry a deployment would. ``PlacementSession`` talks to
placement with one user's token, at a microversion of the test's choosing.
"""

from __future__ import annotations

import httpx
import pytest

from novalab.reference.common.wiring import CloudConfig, Wiring
from novalab.reference.deploy import services
from novalab.reference.deploy.embedded import create_schema
from novalab.reference.placement import service as placement_service
from novalab.tracing.setup import Telemetry


class PlacementSession:
    def __init__(self, env: PlacementEnv, user: str, project: str):
        body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": user, "domain": {"id": "default"},
            "password": env.w.config.credentials.password_for(user)}}},
            "scope": {"project": {"name": project, "domain": {"id": "default"}}}}}
        response = env.http.post(f"{env.w.urls['keystone']}/v3/auth/tokens", json=body)
        assert response.status_code == 201, response.text
        token = response.json()["token"]
        self.env = env
        self.token = response.headers["X-Subject-Token"]
        self.project_id = token["project"]["id"]
        self.user_id = token["user"]["id"]
        (entry,) = [s for s in token["catalog"] if s["type"] == "placement"]
        self.url = entry["endpoints"][0]["url"]

    def request(self, method: str, path: str, version: str | None = "1.29", **kwargs):
        headers = {"X-Auth-Token": self.token, **kwargs.pop("headers", {})}
        if version:
            headers["OpenStack-API-Version"] = f"placement {version}"
        return self.env.http.request(method, f"{self.url}{path}", headers=headers, **kwargs)

    def ok(self, method: str, path: str, status: int = 200, **kwargs):
        response = self.request(method, path, **kwargs)
        assert response.status_code == status, response.text
        return response.json() if response.content else None

    def provider(self, name: str, inventories: dict | None = None, **fields) -> dict:
        """A new provider, with ``inventories`` ({class: {total, ...}}) set on it."""
        created = self.ok("POST", "/resource_providers", json={"name": name, **fields})
        if inventories:
            self.ok("PUT", f"/resource_providers/{created['uuid']}/inventories",
                    json={"resource_provider_generation": created["generation"],
                          "inventories": inventories})
        return self.ok("GET", f"/resource_providers/{created['uuid']}")


class PlacementEnv:
    def __init__(self, state_dir):
        self.telemetry = Telemetry(memory=True, otlp=False)
        self.w = Wiring(CloudConfig(state_dir=state_dir), self.telemetry)
        self.http = httpx.Client(timeout=30)
        try:
            create_schema(self.w.config.db_url)
            self.keystone = services.BUILDERS["keystone"](self.w)
            self.providers = placement_service.placement(self.w)
            services.register_endpoints(self.keystone, self.w.urls)
            self.keystone.register_endpoint("placement", "placement", self.w.urls["placement"])
        except BaseException:
            self.close()
            raise

    def login(self, user: str, project: str | None = None) -> PlacementSession:
        return PlacementSession(self, user, project or user)

    def close(self) -> None:
        self.http.close()
        self.w.close()
        self.telemetry.shutdown()


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    running = PlacementEnv(tmp_path_factory.mktemp("placement"))
    yield running
    running.close()


@pytest.fixture(scope="module")
def admin(env):
    return env.login("admin")


@pytest.fixture(scope="module")
def nova(env):
    """The service user nova-scheduler and nova-compute call placement as."""
    return env.login("nova", "service")


@pytest.fixture(scope="module")
def demo(env):
    return env.login("demo")
