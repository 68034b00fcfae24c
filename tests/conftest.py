"""Fixtures shared by the whole suite: embedded clouds and the loopback services.

Tests that need RabbitMQ, PostgreSQL or MariaDB skip with the reason when the
service is not reachable, except under ``NOVALAB_REQUIRE_SERVICES=1`` (set by
``.ci/run``), where a missing service is a failure: CI must exercise them
(``loopback.py`` holds the helpers, importable by test modules too).
"""

from __future__ import annotations

import json
import math
import os
import sys
import uuid
from pathlib import Path

import loopback
import private_services
import pytest
from chromium import browser  # noqa: F401 - the headless Chromium fixture, for every module

from novalab.labs import units
from novalab.reference.deploy.embedded import CloudConfig, EmbeddedCloud
from novalab.tracing.setup import Telemetry

# The suite composes the product as the command line does: every process that starts
# a cloud knows novalab's own units (labs/units.py).
units.install()

# What the lab course costs the suite, printed at the end of every run that ran it.
# test_course.py fills its TIMINGS; under pytest-xdist that is in a worker, which hands
# them to the controller at the end of its session (workeroutput).
LAB_TIMINGS = pytest.StashKey[dict]()


def course_timings() -> dict[str, dict[str, float]]:
    """The labs this process ran: ``{lab: {part: seconds}}``."""
    course = next((m for name, m in sys.modules.items()
                   if name.endswith("test_course") and hasattr(m, "TIMINGS")), None)
    return dict(getattr(course, "TIMINGS", None) or {})


def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["lab_timings"] = course_timings()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """An xdist worker is done: keep the lab timings it ran."""
    node.config.stash.setdefault(LAB_TIMINGS, {}).update(
        node.workeroutput.get("lab_timings", {}))


def pytest_terminal_summary(terminalreporter, config):
    timings = config.stash.get(LAB_TIMINGS, None) or course_timings()
    if not timings:
        return
    total = sum(sum(t.values()) for t in timings.values())
    terminalreporter.section("the lab course")
    terminalreporter.write_line(f"{len(timings)} labs in {total:.1f} s")
    for name, parts in sorted(timings.items()):
        terminalreporter.write_line(f"  {name}: {sum(parts.values()):.1f} s ("
                                    + ", ".join(f"{k} {v:.1f} s" for k, v in parts.items())
                                    + ")")


# Seconds each module took in the last measured run (scripts/test_durations.py writes it).
MODULE_SECONDS = Path(__file__).resolve().parents[1] / "docs" / "perf" / "test-durations.json"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Run the slowest modules first, each module's tests in pytest's own order.

    `make test` hands whole modules to pytest-xdist's workers (``--dist loadfile``) in
    this order: longest first, the tail is short modules filling in (LPT scheduling),
    not a nine-minute module that starts last. A module not yet measured counts as
    slowest, so a new heavy module never starts last either.
    """
    try:
        seconds = json.loads(MODULE_SECONDS.read_text())["modules"]
    except (OSError, ValueError, KeyError):
        return
    position: dict[str, int] = {}
    for item in items:
        position.setdefault(item.nodeid.split("::", 1)[0], len(position))
    order = {module: (-seconds.get(module, math.inf), index)
             for module, index in position.items()}
    items.sort(key=lambda item: order[item.nodeid.split("::", 1)[0]])


@pytest.fixture(autouse=True, scope="session")
def own_deployment_registry(tmp_path_factory):
    """The clouds tests start register their trace stores here, never in the user's
    ``~/.local/state/novalab`` (subprocesses inherit the variable)."""
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("xdg-state"))
    os.environ.pop("NOVALAB_STATE_DIR", None)
    yield


@pytest.fixture
def standard_ports():
    """The standard ports for this test alone (``private_services.own_standard_ports``)."""
    with private_services.own_standard_ports("this test"):
        yield


@pytest.fixture
def amqp_url():
    """A RabbitMQ URL on a virtual host of this test's own (see ``loopback.own_vhost``)."""
    loopback.require_rabbitmq()
    if "NOVALAB_AMQP_URL" in os.environ:
        yield loopback.AMQP_URL
        return
    with loopback.own_vhost(f"novalab-test-{uuid.uuid4().hex[:8]}") as url:
        yield url


@pytest.fixture
def postgres_url():
    with loopback.scratch_database("postgres", f"novalab_test_{uuid.uuid4().hex[:10]}") as url:
        yield url


@pytest.fixture
def mariadb_url():
    with loopback.scratch_database("mariadb", f"novalab_test_{uuid.uuid4().hex[:10]}") as url:
        yield url


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
        self.client.authenticate(username, cloud.config.credentials.password_for(username), project)
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
