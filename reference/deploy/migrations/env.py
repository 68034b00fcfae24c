"""Alembic's entry point: run the revisions against one database URL.

The URL comes from the configuration (``novalab db sync`` sets it), else from
``-x db=URL`` or ``NOVALAB_DB_URL`` when Alembic is run by hand with
``alembic.ini``. The target metadata is ``Base.metadata`` with every service's
models imported, so ``alembic revision --autogenerate`` sees every table.
"""

from __future__ import annotations

import os
from logging.config import fileConfig

from alembic import context

from novalab.reference.common.db import create_db_engine
from novalab.reference.deploy.migrations import import_models

config = context.config
if config.config_file_name is not None and not config.attributes.get("novalab_quiet"):
    fileConfig(config.config_file_name)

target_metadata = import_models()


def _url() -> str:
    url = context.get_x_argument(as_dictionary=True).get("db") or \
        config.get_main_option("sqlalchemy.url") or os.environ.get("NOVALAB_DB_URL")
    if not url:
        raise SystemExit("no database URL: pass -x db=URL or set NOVALAB_DB_URL")
    return url


def run_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    engine = create_db_engine(_url())
    try:
        with engine.connect() as connection:
            context.configure(connection=connection, target_metadata=target_metadata,
                              compare_type=True, render_as_batch=connection.dialect.name ==
                              "sqlite")
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
