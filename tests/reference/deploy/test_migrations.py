"""The Alembic revisions build exactly the schema the models describe, on every backend.

If this fails after a model change, the change needs a new revision in
``reference/deploy/migrations/versions`` (``alembic revision --autogenerate``,
see docs/deployment.md): a deployed database is upgraded, never recreated.
"""

from __future__ import annotations

import pytest
import sqlalchemy
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from click.testing import CliRunner

from novalab.reference.common.db import create_db_engine
from novalab.reference.deploy import migrations


@pytest.fixture(params=["sqlite", "postgres", "mariadb"])
def db_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'novalab.db'}"
    return request.getfixturevalue(f"{request.param}_url")


def _differences(url: str) -> list:
    metadata = migrations.import_models()
    engine = create_db_engine(url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            return compare_metadata(context, metadata)
    finally:
        engine.dispose()


def test_upgrade_from_empty_gives_the_models(db_url):
    before, after = migrations.upgrade(db_url)
    assert (before, after) == (None, migrations.head())
    assert _differences(db_url) == []


def test_upgrade_is_idempotent_and_downgrade_empties(db_url):
    migrations.upgrade(db_url)
    assert migrations.upgrade(db_url) == (migrations.head(), migrations.head())
    from alembic import command

    command.downgrade(migrations.config(db_url), "base")
    engine = create_db_engine(db_url)
    try:
        tables = set(sqlalchemy.inspect(engine).get_table_names())
    finally:
        engine.dispose()
    assert tables <= {"alembic_version"}
    assert migrations.current(db_url) is None


def test_every_models_module_is_known():
    """Tables defined anywhere under novalab.reference are in the compared metadata."""
    metadata = migrations.import_models()
    assert {"keystone_tokens", "glance_images", "instances", "services"} <= set(metadata.tables)


def test_db_sync_command(tmp_path):
    from novalab.reference.deploy.commands import db

    url = f"sqlite:///{tmp_path / 'sync.db'}"
    result = CliRunner().invoke(db, ["sync", "--db", url])
    assert result.exit_code == 0, result.output
    assert migrations.head() in result.output
    assert migrations.current(url) == migrations.head()
    again = CliRunner().invoke(db, ["sync", "--db", url])
    assert again.exit_code == 0 and "already at" in again.output


def test_tables_without_a_revision_are_named(tmp_path):
    """What `novalab up` refuses to start on: models whose tables no revision makes."""
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    assert {"instances", "keystone_tokens"} <= set(migrations.unmigrated_tables(url))
    migrations.upgrade(url)
    metadata = migrations.import_models()
    created = set(sqlalchemy.inspect(create_db_engine(url)).get_table_names())
    assert set(migrations.unmigrated_tables(url)) == set(metadata.tables) - created
