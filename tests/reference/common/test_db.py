"""SQL spans are named by operation and table, as the database conventions say.

The instrumentation alone names them "<first word> <database>", and for SQLite the
database is a file path ("SELECT /tmp/novalab-x/novalab.db"): what a learner
would read in every flow check. ``instrument_engine`` renames them from what
SQLAlchemy compiled ("INSERT instances").
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from opentelemetry.trace import SpanKind
from sqlalchemy.engine import make_url
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from novalab.reference.common.db import Database
from novalab.reference.deploy.boot import BootRequest, boot
from novalab.tracing import attributes as attr
from novalab.tracing.setup import Telemetry


class _Base(DeclarativeBase):
    """A metadata of the test's own: the services' schema stays out of it."""


class Thing(_Base):
    __tablename__ = "things"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(40))


class Tag(_Base):
    __tablename__ = "tags"
    id: Mapped[int] = mapped_column(primary_key=True)
    thing_id: Mapped[int] = mapped_column(sa.ForeignKey("things.id"))


def _traced(url: str) -> tuple[Database, Telemetry]:
    telemetry = Telemetry(memory=True, otlp=False)
    db = Database(url, tracer_provider=telemetry.provider("test-db"))
    _Base.metadata.create_all(db.engine)
    telemetry.clear()
    return db, telemetry


def _sql_spans(telemetry: Telemetry) -> list:
    return [s for s in telemetry.finished_spans() if attr.DB_SYSTEM_NAME in s.attributes]


def _crud(db: Database) -> None:
    """One INSERT, SELECT, UPDATE and DELETE, through the ORM as the services do."""
    with db.session() as session:
        session.add(Thing(id=1, name="one"))
    with db.session() as session:
        session.scalars(sa.select(Thing).where(Thing.id == 1)).one()
        session.execute(sa.update(Thing).where(Thing.id == 1).values(name="uno"))
        session.execute(sa.delete(Thing).where(Thing.id == 1))


def _check_crud(telemetry: Telemetry, database: str) -> None:
    spans = _sql_spans(telemetry)
    assert [s.name for s in spans] == ["INSERT things", "SELECT things", "UPDATE things",
                                       "DELETE things"]
    for span, operation in zip(spans, ("INSERT", "SELECT", "UPDATE", "DELETE"), strict=True):
        assert span.kind is SpanKind.CLIENT
        assert span.attributes[attr.DB_OPERATION_NAME] == operation
        assert span.attributes[attr.DB_COLLECTION_NAME] == "things"
        assert span.attributes[attr.DB_NAMESPACE] == database  # the database is still said
        assert span.attributes[attr.DB_QUERY_TEXT].startswith(operation)  # the instrumentation's
        assert span.attributes[attr.DB_SYSTEM_NAME] in ("sqlite", "postgresql")
        assert attr.DB_QUERY_SUMMARY not in span.attributes


def test_sqlite_spans_named_by_operation_and_table(tmp_path):
    path = str(tmp_path / "novalab.db")
    db, telemetry = _traced(f"sqlite:///{path}")
    try:
        _crud(db)
        _check_crud(telemetry, path)
    finally:
        db.dispose()
        telemetry.shutdown()


def test_join_is_named_by_its_tables_without_a_collection(tmp_path):
    """Several tables: no ``db.collection.name``; the span is named by the query summary."""
    db, telemetry = _traced(f"sqlite:///{tmp_path / 'novalab.db'}")
    try:
        with db.session() as session:
            session.execute(sa.select(Thing.name).join(Tag, Tag.thing_id == Thing.id)).all()
            session.execute(sa.select(sa.select(Thing).subquery())).all()
        join, anonymous = _sql_spans(telemetry)
        assert join.name == "SELECT things tags"
        assert join.attributes[attr.DB_QUERY_SUMMARY] == "SELECT things tags"
        assert join.attributes[attr.DB_OPERATION_NAME] == "SELECT"
        assert attr.DB_COLLECTION_NAME not in join.attributes
        # A SELECT from a subquery reads an anonymous table: the operation alone.
        assert anonymous.name == "SELECT"
        assert attr.DB_COLLECTION_NAME not in anonymous.attributes
    finally:
        db.dispose()
        telemetry.shutdown()


def test_raw_sql_is_named_by_its_operation(tmp_path):
    """No compiled statement (``PRAGMA``): the operation, and no table guessed from text."""
    path = str(tmp_path / "novalab.db")
    db, telemetry = _traced(f"sqlite:///{path}")
    try:
        with db.engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA table_info(things)").all()
        (span,) = _sql_spans(telemetry)
        assert span.name == "PRAGMA"
        assert span.attributes[attr.DB_OPERATION_NAME] == "PRAGMA"
        assert attr.DB_COLLECTION_NAME not in span.attributes
    finally:
        db.dispose()
        telemetry.shutdown()


@pytest.mark.postgresql
def test_postgresql_spans_named_by_operation_and_table(postgres_url):
    db, telemetry = _traced(postgres_url)
    try:
        _crud(db)
        _check_crud(telemetry, make_url(postgres_url).database)
    finally:
        db.dispose()
        telemetry.shutdown()


def test_boot_sql_spans_do_not_name_the_database_file(cloud):
    result = boot(cloud, BootRequest(name="vm-sql-names"))
    assert result.active, result.server
    sql = [s for s in result.spans if attr.DB_SYSTEM_NAME in s.attributes]
    path = make_url(cloud.config.db_url).database
    assert sql and not [s.name for s in sql if path in s.name]
    names = {s.name for s in sql}
    assert {"INSERT keystone_tokens", "INSERT instances", "SELECT compute_nodes",
            "UPDATE instances"} <= names
    assert {s.attributes[attr.DB_NAMESPACE] for s in sql} == {path}


def test_a_statements_target_is_worked_out_once_per_sql_text(monkeypatch):
    """The same SQL text names its span from the cache; another text is worked out."""
    from novalab.reference.common import db as db_module

    calls = []

    def counting(compiled, statement):
        calls.append(statement)
        return "SELECT", ["things"]

    monkeypatch.setattr(db_module, "_TARGETS", {})
    monkeypatch.setattr(db_module, "sql_target", counting)
    first = db_module.cached_sql_target(None, "SELECT things.id FROM things")
    again = db_module.cached_sql_target(None, "SELECT things.id FROM things")
    other = db_module.cached_sql_target(None, "SELECT things.name FROM things")
    assert first == again == other == ("SELECT", ("things",))
    assert calls == ["SELECT things.id FROM things", "SELECT things.name FROM things"]


def test_a_statements_span_is_worked_out_once_and_started_whole(tmp_path, monkeypatch):
    """The same SQL text again starts its span from the engine's cache, already named and
    with every attribute (nothing set after the start), under the caller's span."""
    from novalab.reference.common import db as db_module

    worked_out = []
    original = db_module.NamedEngineTracer._work_out

    def counting(self, conn, cursor, statement, context):
        worked_out.append(statement)
        return original(self, conn, cursor, statement, context)

    monkeypatch.setattr(db_module.NamedEngineTracer, "_work_out", counting)
    db, telemetry = _traced(f"sqlite:///{tmp_path / 'novalab.db'}")
    worked_out.clear()
    try:
        with telemetry.tracer("test-db").start_as_current_span("caller") as caller:
            with db.session() as session:
                for _ in range(3):
                    session.scalars(sa.select(Thing).where(Thing.id == 1)).all()
        spans = _sql_spans(telemetry)
        assert [s.name for s in spans] == ["SELECT things"] * 3
        assert len(worked_out) == 1
        assert {s.parent.span_id for s in spans} == {caller.get_span_context().span_id}
        assert len({s.context.span_id for s in spans}) == 3
    finally:
        db.dispose()
        telemetry.shutdown()
