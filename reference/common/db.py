"""Database access: one SQLAlchemy URL, any of SQLite, PostgreSQL or MariaDB.

Each service builds its own :class:`Database` (its own engine and connection pool,
as separate OpenStack processes would), traced with the service's own provider so
every SQL span carries the name of the service that ran the query.

The default is a SQLite file. SQLite gets WAL journaling with
``synchronous=NORMAL`` (durable at checkpoints, no fsync per commit) and a busy
timeout, so the embedded cloud's threads can write without "database is locked".
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime

from opentelemetry.instrumentation.sqlalchemy.engine import EngineTracer
from opentelemetry.metrics import NoOpMeter
from sqlalchemy import Engine, MetaData, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker

DEFAULT_URL = "sqlite:///novalab.db"


def utcnow() -> datetime:
    """Naive UTC, as OpenStack stores timestamps."""
    return datetime.now(UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    """Declarative base of every reference service's tables (one metadata, one schema)."""

    metadata = MetaData()


def _sqlite_pragmas(dbapi_connection, _record):
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def create_db_engine(url: str) -> Engine:
    """An engine for ``url`` with the per-backend settings the services need."""
    parsed = make_url(url)
    kwargs: dict = {"future": True}
    if parsed.get_backend_name() == "sqlite":
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
        engine = create_engine(url, **kwargs)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    kwargs.update(pool_pre_ping=True, pool_size=10, max_overflow=20, pool_recycle=3600)
    return create_engine(url, **kwargs)


def instrument_engine(engine: Engine, tracer_provider) -> None:
    """Trace ``engine`` with one service's provider.

    ``SQLAlchemyInstrumentor().instrument(engine=...)`` is a process-wide singleton
    that also patches ``create_engine`` for everyone with the first caller's
    tracer; the instrumentation's own ``EngineTracer`` traces exactly one engine.
    """
    tracer = tracer_provider.get_tracer("opentelemetry.instrumentation.sqlalchemy")
    usage = NoOpMeter("novalab").create_up_down_counter("db.client.connections.usage")
    EngineTracer(tracer, engine, usage)


class Database:
    """A service's handle on the database: an engine and a session factory."""

    def __init__(self, url: str = DEFAULT_URL, *, tracer_provider=None):
        self.url = url
        self.engine = create_db_engine(url)
        if tracer_provider is not None:
            instrument_engine(self.engine, tracer_provider)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @contextlib.contextmanager
    def session(self) -> Iterator[Session]:
        """A transaction: committed when the block ends, rolled back on error."""
        with self._sessions.begin() as session:
            yield session

    def create_schema(self) -> None:
        Base.metadata.create_all(self.engine)

    def dispose(self) -> None:
        self.engine.dispose()


def mask_password(url: str) -> str:
    """``url`` fit for a log line or an error message."""
    return make_url(url).render_as_string(hide_password=True)
