"""Before any service starts: is the broker there, does the database exist?

``novalab up`` runs these first so a missing RabbitMQ or database is one clear
message (what was tried, how to start it) rather than seven services failing in
seven log files. A database server that is reachable but lacks the database
gets it created, as DevStack does (``CREATE DATABASE nova``), and says so.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pika
import pika.exceptions
import sqlalchemy
from sqlalchemy.engine import make_url

from novalab.reference.common.db import mask_password
from novalab.reference.rpc.transport import mask_url

COMPOSE_HINT = "or, with Docker: `docker compose -f deploy/compose.yaml up -d {service}`"


class PreflightError(Exception):
    """Something the deployment needs is not there; the message says what to do."""


def _postgres_start_hint() -> str:
    versions = sorted(p.name for p in Path("/etc/postgresql").glob("*")) or ["<version>"]
    return (f"`pg_ctlcluster --skip-systemctl-redirect {versions[-1]} main start` "
            "(or `systemctl start postgresql`)")


MARIADB_START = ("`start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd` "
                 "(or `systemctl start mariadb`)")


def check_broker(url: str, timeout: float = 5.0) -> None:
    """Open (and close) one AMQP connection to ``url``."""
    if not url.startswith(("amqp://", "amqps://", "rabbit://")):
        raise PreflightError(f"the transport must be a RabbitMQ URL (amqp://...), not {url!r}: "
                             "every service is its own process, so an in-memory broker "
                             "cannot join them")
    params = pika.URLParameters("amqp://" + url.split("://", 1)[1])
    params.connection_attempts = 1
    params.socket_timeout = timeout
    params.blocked_connection_timeout = timeout
    try:
        pika.BlockingConnection(params).close()
    except (pika.exceptions.ProbableAuthenticationError, pika.exceptions.AuthenticationError,
            pika.exceptions.ProbableAccessDeniedError) as exc:
        raise PreflightError(
            f"RabbitMQ at {params.host}:{params.port} refused {mask_url(url)}: "
            f"{type(exc).__name__}. Check the user, password and vhost.") from exc
    except (pika.exceptions.AMQPError, OSError) as exc:
        raise PreflightError(
            f"RabbitMQ is not reachable: tried {mask_url(url)} "
            f"({type(exc).__name__}: {exc or 'connection failed'}). Start it with "
            f"`rabbitmq-server -detached` (or `systemctl start rabbitmq-server`), "
            + COMPOSE_HINT.format(service="rabbitmq") + ".") from exc


def _admin_url(url: sqlalchemy.URL) -> sqlalchemy.URL:
    """The same server, connected to a database that always exists."""
    return sqlalchemy.URL.create(
        url.drivername, url.username, url.password, url.host, url.port,
        "postgres" if url.get_backend_name() == "postgresql" else None, url.query)


def _start_hint(backend: str) -> str:
    if backend == "postgresql":
        return _postgres_start_hint() + ", " + COMPOSE_HINT.format(service="postgres")
    if backend in ("mysql", "mariadb"):
        return MARIADB_START
    return "start the database server"


def ensure_database(db_url: str) -> str | None:
    """Make sure ``db_url``'s database exists; returns its name when it was created."""
    url = make_url(db_url)
    backend = url.get_backend_name()
    if backend == "sqlite":
        if url.database:
            Path(url.database).parent.mkdir(parents=True, exist_ok=True)
        return None
    name = url.database
    if not name or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,62}", name):
        raise PreflightError(f"database name {name!r} in {mask_password(db_url)}: use letters, "
                             "digits and underscores")
    engine = sqlalchemy.create_engine(_admin_url(url), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            if backend == "postgresql":
                exists = conn.execute(sqlalchemy.text(
                    "SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}).first()
                create = f'CREATE DATABASE "{name}"'
            else:
                exists = conn.execute(sqlalchemy.text(
                    "SELECT 1 FROM information_schema.schemata WHERE schema_name = :n"),
                    {"n": name}).first()
                create = f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4"
            if exists:
                return None
            conn.execute(sqlalchemy.text(create))
            return name
    except sqlalchemy.exc.OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise PreflightError(
            f"the {backend} server is not reachable: tried "
            f"{mask_password(_admin_url(url).render_as_string(hide_password=False))} "
            f"({reason}). Start it with {_start_hint(backend)}.") from exc
    except sqlalchemy.exc.DBAPIError as exc:
        raise PreflightError(f"cannot create database {name!r} on {backend}: {exc.orig}") from exc
    finally:
        engine.dispose()


def ensure_vhost(url: str) -> str | None:
    """Make sure the virtual host of AMQP ``url`` exists (DevStack's
    ``rabbitmqctl add_vhost nova_cell1``); returns its name when it was created.

    Creating one needs ``rabbitmqctl`` on this machine with the rights to use it
    (root or the rabbitmq user); otherwise the error says what to run.
    """
    if not url.startswith(("amqp://", "amqps://", "rabbit://")):
        return None
    try:
        check_broker(url)
        return None
    except PreflightError as missing:
        params = pika.URLParameters("amqp://" + url.split("://", 1)[1])
        vhost, user = params.virtual_host, params.credentials.username
        commands = [["add_vhost", vhost], ["set_permissions", "-p", vhost, user, ".*", ".*", ".*"]]
        if shutil.which("rabbitmqctl") is None or not all(
                _rabbitmqctl(args) for args in commands):
            raise PreflightError(
                f"RabbitMQ has no virtual host {vhost!r} for this cloud's cell (or refused "
                f"{user!r} on it): run `rabbitmqctl add_vhost {vhost}` and `rabbitmqctl "
                f"set_permissions -p {vhost} {user} '.*' '.*' '.*'` ({missing})") from missing
        check_broker(url)
        return vhost


def _rabbitmqctl(args: list[str]) -> bool:
    try:
        done = subprocess.run(["rabbitmqctl", "-q", *args], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 or b"already exists" in done.stderr
