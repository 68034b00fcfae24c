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
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

from opentelemetry import trace
from opentelemetry.instrumentation.sqlalchemy.engine import (
    EngineTracer,
    _get_attributes_from_cursor_or_conn,
    _get_attributes_from_url,
    _get_db_name_from_cursor_or_conn,
)
from opentelemetry.instrumentation.utils import is_instrumentation_enabled
from opentelemetry.metrics import NoOpMeter
from sqlalchemy import Engine, MetaData, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker
from sqlalchemy.sql.ddl import ExecutableDDLElement
from sqlalchemy.sql.dml import UpdateBase
from sqlalchemy.sql.selectable import Alias, Join, Select, TableClause

from novalab.tracing import attributes as attr

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
    # A pool as wide as the servers' below: SQLAlchemy's default for SQLite (5 kept,
    # 10 more opened and closed on demand) made a cloud with many boots in flight
    # open and close connections, three PRAGMAs each, all the time (docs/perf/scale.md).
    kwargs: dict = {"future": True, "pool_size": 10, "max_overflow": 20}
    if parsed.get_backend_name() == "sqlite":
        if parsed.database in (None, "", ":memory:"):  # one connection a thread: no queue
            kwargs = {"future": True}
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
        engine = create_engine(url, **kwargs)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    kwargs.update(pool_pre_ping=True, pool_recycle=3600)
    return create_engine(url, **kwargs)


def instrument_engine(engine: Engine, tracer_provider) -> None:
    """Trace ``engine`` with one service's provider.

    ``SQLAlchemyInstrumentor().instrument(engine=...)`` is a process-wide singleton
    that also patches ``create_engine`` for everyone with the first caller's
    tracer; the instrumentation's own ``EngineTracer`` traces exactly one engine.
    """
    tracer = tracer_provider.get_tracer("opentelemetry.instrumentation.sqlalchemy")
    usage = NoOpMeter("novalab").create_up_down_counter("db.client.connections.usage")
    NamedEngineTracer(tracer, engine, usage)


# -- SQL span names ---------------------------------------------------------------------
#
# The instrumentation names a span "<first word of the SQL> <database>", which for
# SQLite is the file's path ("SELECT /tmp/novalab-x/novalab.db"), and offers no hook
# to name it otherwise. The database conventions name it "{db.operation.name}
# {db.collection.name}" ("INSERT instances"). SQLAlchemy compiled the statement, so
# it knows the operation and the table without reading the SQL text:
# ``NamedEngineTracer`` (below) starts the span with that name and the two
# attributes. ``db.namespace`` (the database) is the instrumentation's already.


def _tables(from_clause) -> list[str] | None:
    """The tables a FROM item reads, in order; None for an anonymous one (a subquery)."""
    if isinstance(from_clause, Join):
        left, right = _tables(from_clause.left), _tables(from_clause.right)
        return None if left is None or right is None else left + right
    if isinstance(from_clause, Alias) and isinstance(from_clause.element, TableClause):
        from_clause = from_clause.element  # aliased(Model): still that table
    if isinstance(from_clause, TableClause):
        return [from_clause.fullname]
    return None


def sql_target(compiled_statement, statement: str) -> tuple[str, list[str]]:
    """(operation, tables) of a statement, from what SQLAlchemy compiled.

    ``tables`` is empty when they are unknown: raw SQL (``PRAGMA``, ``text()``),
    whose operation is the first word of the SQL, as the instrumentation takes it.
    """
    if isinstance(compiled_statement, UpdateBase):  # INSERT, UPDATE, DELETE
        return (compiled_statement.__visit_name__.upper(),
                _tables(compiled_statement.table) or [])
    if isinstance(compiled_statement, Select):
        tables: list[str] = []
        for from_clause in compiled_statement.get_final_froms():
            found = _tables(from_clause)
            if found is None:
                return "SELECT", []
            tables += [t for t in found if t not in tables]
        return "SELECT", tables
    operation = (statement.split(None, 1) or [""])[0]
    if isinstance(compiled_statement, ExecutableDDLElement):  # CREATE TABLE instances ...
        return operation, _tables(getattr(compiled_statement, "element", None)) or []
    return operation, []


# The SQL text decides the operation and the tables, and a service sends the same few
# hundred statements again and again; reading them from an ORM statement costs a
# compile-state analysis (get_final_froms) each time, about a third of a traced boot's
# CPU. So the answer is kept per SQL text, in a bounded dict (emptied when full).
_TARGETS: dict[str, tuple[str, tuple[str, ...]]] = {}
_TARGETS_MAX = 4096


def cached_sql_target(compiled_statement, statement: str) -> tuple[str, tuple[str, ...]]:
    """:func:`sql_target`, computed once per distinct SQL text."""
    found = _TARGETS.get(statement)
    if found is None:
        operation, tables = sql_target(compiled_statement, statement)
        if len(_TARGETS) >= _TARGETS_MAX:
            _TARGETS.clear()
        found = _TARGETS[statement] = (operation, tuple(tables))
    return found


def sql_span_name(operation: str, tables: tuple[str, ...]) -> tuple[str, dict]:
    """A SQL span's name and the attributes that say what it ran on."""
    if not operation:
        return "", {}
    if len(tables) == 1:
        return f"{operation} {tables[0]}", {attr.DB_OPERATION_NAME: operation,
                                            attr.DB_COLLECTION_NAME: tables[0]}
    if tables:
        # A join: the conventions set no collection name for several tables, and
        # name the span by the query summary, "SELECT keystone_roles keystone_assignments".
        summary = " ".join([operation, *tables])
        return summary, {attr.DB_OPERATION_NAME: operation, attr.DB_QUERY_SUMMARY: summary}
    return operation, {attr.DB_OPERATION_NAME: operation}


class _Recorder(dict):
    """Takes the attributes the instrumentation sets on a span, into a dict."""

    def set_attribute(self, key, value) -> None:
        self[key] = value


class NamedEngineTracer(EngineTracer):
    """The instrumentation's ``EngineTracer``, starting each SQL span already named.

    The instrumentation starts a span named "<first word> <database>" and then
    sets its attributes one by one, each a locked write in the SDK; it offers no
    hook to name the span as it starts. This subclass
    starts the span once, with its final name and every attribute, which it works
    out once per SQL text (the instrumentation's own attribute code, then ours):
    a service sends the same few hundred statements again and again. Ending the
    span, errors and the pool stay the instrumentation's. The attributes the
    instrumentation reads from a cursor (a PostgreSQL URL without a host) are the
    first connection's, and ``sqlcommenter``, which novalab never enables, is not
    supported.
    """

    _MAX = 4096

    def __init__(self, tracer, engine, usage):
        self._span_args: dict[str, tuple[str, dict]] = {}
        super().__init__(tracer, engine, usage)

    def _before_cur_exec(self, conn, cursor, statement, params, context, _executemany):
        if not is_instrumentation_enabled():
            return statement, params
        found = self._span_args.get(statement)
        if found is None:
            found = self._work_out(conn, cursor, statement, context)
        name, attributes = found
        context._otel_span = self.tracer.start_span(name, kind=trace.SpanKind.CLIENT,
                                                    attributes=attributes)
        return statement, params

    def _work_out(self, conn, cursor, statement, context) -> tuple[str, dict]:
        """The span's name and attributes for ``statement``, as the instrumentation
        would set them and then renamed by what SQLAlchemy compiled."""
        attrs, found = _get_attributes_from_url(conn.engine.url, self._sem_conv_opt_in_mode_db,
                                                self._sem_conv_opt_in_mode_http)
        if not found:
            attrs = _get_attributes_from_cursor_or_conn(
                self.vendor, conn, cursor, attrs, self._sem_conv_opt_in_mode_db,
                self._sem_conv_opt_in_mode_http)
        db_name = _get_db_name_from_cursor_or_conn(self.vendor, conn, cursor)
        attributes = _Recorder()
        self._set_db_client_span_attributes(attributes, statement, db_name, attrs)
        compiled = getattr(context, "compiled", None)
        operation, tables = cached_sql_target(getattr(compiled, "statement", None), statement)
        name, ours = sql_span_name(operation, tables)
        attributes.update(ours)
        found = (name or self._operation_name(db_name, statement), dict(attributes))
        if len(self._span_args) >= self._MAX:
            self._span_args.clear()
        self._span_args[statement] = found
        return found


# An IN list stays far below every backend's limit on bound parameters (SQLite's is
# 32,766 since 3.32, older builds 999).
IN_CHUNK = 500


def in_chunks(ids: Sequence[str], size: int = IN_CHUNK) -> Iterator[Sequence[str]]:
    """``ids`` in slices short enough for one ``IN (...)`` each."""
    for start in range(0, len(ids), size):
        yield ids[start:start + size]


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


# What each backend says when it cannot grow: SQLite's SQLITE_FULL ("database or disk
# is full"), PostgreSQL's disk_full (SQLSTATE 53100), MariaDB's ER_DISK_FULL and
# ER_RECORD_FILE_FULL ("The table is full").
SQLITE_FULL = 13
POSTGRES_DISK_FULL = "53100"
MARIADB_FULL = (1021, 1114)


def is_storage_full(exc: BaseException) -> bool:
    """Did ``exc`` (a SQLAlchemy or driver error) fail because the database cannot grow?"""
    orig = getattr(exc, "orig", None) or exc
    if (getattr(orig, "sqlite_errorcode", 0) or 0) & 0xFF == SQLITE_FULL:
        return True
    if POSTGRES_DISK_FULL in (getattr(orig, "sqlstate", None), getattr(orig, "pgcode", None)):
        return True
    args = getattr(orig, "args", ())
    if args and args[0] in MARIADB_FULL:
        return True
    text = str(orig)
    return "database or disk is full" in text or "No space left on device" in text


def mask_password(url: str) -> str:
    """``url`` fit for a log line or an error message."""
    return make_url(url).render_as_string(hide_password=True)
