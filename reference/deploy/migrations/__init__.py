"""The database schema under Alembic: ``novalab db sync`` and ``novalab up`` run it.

Every table of every service lives in one database, described by
``novalab.reference.common.db.Base.metadata``. A real deployment must be able to
*upgrade* a database that already holds data, so the schema is built by the
revisions in ``versions/`` (one per change), never by ``create_all``; the
embedded cloud keeps ``create_all`` because its database is throwaway and fast
to make. ``tests/reference/deploy/test_migrations.py`` checks that upgrading an
empty database gives exactly ``Base.metadata``: a model change without a
revision fails that test.

Nova keeps one migration tree per database (``nova/db/main/migrations``) and
runs it with ``nova-manage db sync``; this is the same idea for the whole cast.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import MetaData

HERE = Path(__file__).resolve().parent


def import_models() -> MetaData:
    """Import every module that defines tables and return the one shared metadata.

    Two nets, so a new service's tables are never missed: every ``models``
    module under ``novalab.reference``, and the service registry (which imports
    everything a running service uses).
    """
    import novalab.reference as reference

    for info in pkgutil.walk_packages(reference.__path__, "novalab.reference."):
        if info.name.rsplit(".", 1)[-1] == "models":
            importlib.import_module(info.name)
    importlib.import_module("novalab.reference.deploy.services")
    from novalab.reference.common.db import Base

    return Base.metadata


def config(db_url: str) -> Config:
    """An Alembic configuration for ``db_url``, without reading alembic.ini."""
    cfg = Config()
    cfg.set_main_option("script_location", str(HERE))
    # ConfigParser interpolation: a literal '%' in a password must be doubled.
    cfg.set_main_option("sqlalchemy.url", db_url.replace("%", "%%"))
    cfg.attributes["novalab_quiet"] = True
    return cfg


def head() -> str:
    return ScriptDirectory.from_config(config("sqlite://")).get_current_head()


def current(db_url: str) -> str | None:
    """The revision ``db_url`` is at (None for an empty database)."""
    from novalab.reference.common.db import create_db_engine

    engine = create_db_engine(db_url)
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    finally:
        engine.dispose()


def upgrade(db_url: str, revision: str = "head") -> tuple[str | None, str]:
    """Bring ``db_url`` to ``revision``; returns (revision before, revision after)."""
    before = current(db_url)
    command.upgrade(config(db_url), revision)
    return before, current(db_url)


def unmigrated_tables(db_url: str) -> list[str]:
    """Tables the models define but no revision created (a model added without a revision)."""
    from alembic.autogenerate import compare_metadata

    from novalab.reference.common.db import create_db_engine

    metadata = import_models()
    engine = create_db_engine(db_url)
    try:
        with engine.connect() as connection:
            diffs = compare_metadata(MigrationContext.configure(connection), metadata)
    finally:
        engine.dispose()
    return sorted(d[1].name for d in diffs if isinstance(d, tuple) and d[0] == "add_table")
