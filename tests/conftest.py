"""Fixtures shared by the whole suite: embedded clouds and the loopback services.

Tests that need RabbitMQ, PostgreSQL or MariaDB skip with the reason when the
service is not reachable, except under ``NOVALAB_REQUIRE_SERVICES=1`` (set by
``.ci/run``), where a missing service is a failure: CI must exercise them.
"""

from __future__ import annotations

import os
import socket
import subprocess
import uuid

import pytest
import sqlalchemy

from novalab.reference.deploy.embedded import CloudConfig, EmbeddedCloud
from novalab.tracing.setup import Telemetry

AMQP_URL = os.environ.get("NOVALAB_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
POSTGRES_ADMIN_URL = os.environ.get("NOVALAB_POSTGRES_URL",
                                    "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
MARIADB_ADMIN_URL = os.environ.get("NOVALAB_MARIADB_URL", "mysql+pymysql://root@127.0.0.1:3306/")


def unavailable(reason: str):
    if os.environ.get("NOVALAB_REQUIRE_SERVICES") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def _rabbitmqctl(*args) -> bool:
    try:
        return subprocess.run(["rabbitmqctl", *args], capture_output=True,
                              timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture
def amqp_url():
    """A RabbitMQ URL on a virtual host of this test's own, when rabbitmqctl allows.

    Clouds on one broker share queue names (``scheduler``, ``compute.<host>``): as
    in real deployments, a virtual host per cloud keeps them apart, so another
    cloud running on this machine cannot take this test's messages.
    """
    if not _port_open("127.0.0.1", 5672):
        unavailable("RabbitMQ is not listening on 127.0.0.1:5672 "
                    "(start it with `rabbitmq-server -detached`)")
    if "NOVALAB_AMQP_URL" in os.environ:
        yield AMQP_URL
        return
    vhost = f"novalab-test-{uuid.uuid4().hex[:8]}"
    if not (_rabbitmqctl("add_vhost", vhost) and
            _rabbitmqctl("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*")):
        yield AMQP_URL  # no rabbitmqctl here: share the default virtual host
        return
    yield f"{AMQP_URL.rstrip('/')}/{vhost}"
    _rabbitmqctl("delete_vhost", vhost)


def _scratch_database(admin_url: str, name: str, dialect_url) -> str:
    engine = sqlalchemy.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(sqlalchemy.text(f"CREATE DATABASE {name}"))
    finally:
        engine.dispose()
    return dialect_url(name)


def _drop_database(admin_url: str, name: str) -> None:
    engine = sqlalchemy.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    force = " WITH (FORCE)" if engine.dialect.name == "postgresql" else ""
    try:
        with engine.connect() as conn:
            conn.execute(sqlalchemy.text(f"DROP DATABASE IF EXISTS {name}{force}"))
    finally:
        engine.dispose()


@pytest.fixture
def postgres_url():
    if not _port_open("127.0.0.1", 5432):
        unavailable("PostgreSQL is not listening on 127.0.0.1:5432")
    name = f"novalab_test_{uuid.uuid4().hex[:10]}"
    base = POSTGRES_ADMIN_URL.rsplit("/", 1)[0]
    url = _scratch_database(POSTGRES_ADMIN_URL, name, lambda n: f"{base}/{n}")
    yield url
    _drop_database(POSTGRES_ADMIN_URL, name)


@pytest.fixture
def mariadb_url():
    if not _port_open("127.0.0.1", 3306):
        unavailable("MariaDB is not listening on 127.0.0.1:3306")
    name = f"novalab_test_{uuid.uuid4().hex[:10]}"
    base = MARIADB_ADMIN_URL.rstrip("/")
    url = _scratch_database(MARIADB_ADMIN_URL, name, lambda n: f"{base}/{n}")
    yield url
    _drop_database(MARIADB_ADMIN_URL, name)


def make_cloud(tmp_path, **config) -> EmbeddedCloud:
    telemetry = Telemetry(memory=True, otlp=False)
    return EmbeddedCloud(CloudConfig(state_dir=tmp_path / "cloud", **config), telemetry)


@pytest.fixture
def cloud(tmp_path):
    """An embedded cloud on the memory transport and SQLite, one compute host."""
    with make_cloud(tmp_path) as running:
        yield running
    running.telemetry.shutdown()


@pytest.fixture(scope="module")
def shared_cloud(tmp_path_factory):
    """One embedded cloud for a module's read-mostly API tests (faster)."""
    with make_cloud(tmp_path_factory.mktemp("shared")) as running:
        yield running
    running.telemetry.shutdown()


@pytest.fixture
def cloud_factory(tmp_path):
    """Build embedded clouds with a given config; all are stopped after the test."""
    clouds = []

    def factory(**config) -> EmbeddedCloud:
        running = make_cloud(tmp_path / f"cloud{len(clouds)}", **config).start()
        clouds.append(running)
        return running

    yield factory
    for running in clouds:
        running.stop()
        running.telemetry.shutdown()


class Session:
    """A user's authenticated view of a cloud: token, project and endpoints."""

    def __init__(self, cloud: EmbeddedCloud, username: str, project: str):
        import httpx

        from novalab.reference.deploy.client import CloudClient

        self.http = httpx.Client(timeout=30)
        self.client = CloudClient(cloud.identity_url, self.http)
        self.client.authenticate(username, cloud.config.password, project)
        self.token = self.client.token
        self.project_id = self.client.project_id
        self.compute = self.client.endpoint("compute")
        self.image = self.client.endpoint("image")

    def request(self, method: str, url: str, **kwargs):
        headers = {"X-Auth-Token": self.token, **kwargs.pop("headers", {})}
        return self.http.request(method, url, headers=headers, **kwargs)

    def close(self):
        self.http.close()


@pytest.fixture
def login():
    """``login(cloud, "demo")`` -> Session; closed after the test."""
    sessions = []

    def factory(cloud, username="demo", project=None) -> Session:
        session = Session(cloud, username, project or username)
        sessions.append(session)
        return session

    yield factory
    for session in sessions:
        session.close()
