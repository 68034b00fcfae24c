"""The loopback services the tests use (RabbitMQ, PostgreSQL, MariaDB), in one place.

Importable from any test module (``pythonpath = ["tests"]`` in pyproject), unlike
a conftest. A missing service skips the test with the reason, except under
``NOVALAB_REQUIRE_SERVICES=1`` (set by ``.ci/run``), where it fails: CI must
exercise them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import urllib.parse
from collections.abc import Callable, Iterator

import pytest
import sqlalchemy

AMQP_URL = os.environ.get("NOVALAB_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
ADMIN_URLS = {
    "postgres": os.environ.get("NOVALAB_POSTGRES_URL",
                               "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"),
    "mariadb": os.environ.get("NOVALAB_MARIADB_URL", "mysql+pymysql://root@127.0.0.1:3306/"),
}
DB_PORTS = {"postgres": 5432, "mariadb": 3306}


def unavailable(reason: str):
    """Skip, or fail when CI requires the loopback services."""
    if os.environ.get("NOVALAB_REQUIRE_SERVICES") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def require_rabbitmq() -> None:
    if not port_open(5672):
        unavailable("RabbitMQ is not listening on 127.0.0.1:5672 "
                    "(start it with `rabbitmq-server -detached`)")


def rabbitmqctl(*args: str) -> bool:
    if shutil.which("rabbitmqctl") is None:
        return False
    try:
        return subprocess.run(["rabbitmqctl", "-q", *args], capture_output=True,
                              timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@contextlib.contextmanager
def own_vhost(name: str, amqp_url: str = AMQP_URL) -> Iterator[str]:
    """A RabbitMQ URL on a virtual host of the caller's own, deleted afterwards.

    Clouds on one broker share queue names (``scheduler``, ``compute.<host>``): as
    in real deployments, a virtual host per cloud keeps them apart, so another
    cloud on this machine cannot take the test's messages. Without rabbitmqctl
    (or the rights to use it), the broker's default virtual host is shared.
    """
    user = urllib.parse.urlsplit(amqp_url).username or "guest"
    if not (rabbitmqctl("add_vhost", name) and
            rabbitmqctl("set_permissions", "-p", name, user, ".*", ".*", ".*")):
        yield amqp_url
        return
    try:
        yield f"{amqp_url.rstrip('/')}/{name}"
    finally:
        rabbitmqctl("delete_vhost", name)
        rabbitmqctl("delete_vhost", f"{name}_cell1")  # a modern cloud's cell1, if one ran


def require_database(backend: str) -> str:
    """The admin URL of ``backend`` ("postgres" or "mariadb") once its port answers."""
    if not port_open(DB_PORTS[backend]):
        unavailable(f"{backend} is not listening on 127.0.0.1:{DB_PORTS[backend]}")
    return ADMIN_URLS[backend]


def database_url(admin_url: str, name: str) -> str:
    """The URL of database ``name`` on the server of ``admin_url``."""
    url = sqlalchemy.engine.make_url(admin_url).set(database=name)
    return url.render_as_string(hide_password=False)


def _autocommit(admin_url: str, statement: str) -> None:
    engine = sqlalchemy.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(sqlalchemy.text(statement))
    finally:
        engine.dispose()


def create_database(admin_url: str, name: str) -> str:
    _autocommit(admin_url, f"CREATE DATABASE {name}")
    return database_url(admin_url, name)


def drop_database(admin_url: str, name: str) -> None:
    force = " WITH (FORCE)" if admin_url.startswith("postgresql") else ""
    _autocommit(admin_url, f"DROP DATABASE IF EXISTS {name}{force}")


@contextlib.contextmanager
def scratch_database(backend: str, name: str,
                     create: Callable[[str, str], str] | None = create_database
                     ) -> Iterator[str]:
    """A database of the caller's own on ``backend``, dropped afterwards.

    ``create=None`` only names it (for code under test that creates it itself).
    """
    admin = require_database(backend)
    url = create(admin, name) if create else database_url(admin, name)
    try:
        yield url
    finally:
        drop_database(admin, name)
