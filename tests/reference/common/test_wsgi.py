"""The WSGI plumbing every service shares."""

from __future__ import annotations

import socket

import pytest
from flask import Flask

from novalab.reference.common.wsgi import ServerThread


def test_a_taken_port_is_an_error_that_names_the_service_not_an_exit():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match=rf"nova-api: cannot listen on 127.0.0.1:{port}"):
            ServerThread(Flask("x"), "127.0.0.1", port, name="nova-api")


def _full_sqlite(path) -> tuple:
    """A SQLite database whose every connection may not grow it (``max_page_count``),
    filled to the last page: SQLITE_FULL, as on a full disk. The switch lifts it."""
    from sqlalchemy import event, text

    from novalab.reference.common.db import Database

    db = Database(f"sqlite:///{path}")
    with db.engine.begin() as conn:
        conn.execute(text("CREATE TABLE rows (payload BLOB)"))
    full = {"on": True}

    @event.listens_for(db.engine, "connect")
    def _limit(dbapi_connection, _record):
        if full["on"]:
            pages = dbapi_connection.execute("PRAGMA page_count").fetchone()[0]
            dbapi_connection.execute(f"PRAGMA max_page_count = {pages}")

    db.engine.dispose()
    return db, full


def test_a_full_database_is_a_503_that_recovers(tmp_path):
    """Issue 21, finding 14: SQLite's "database or disk is full" was every API's 500."""
    from sqlalchemy import text

    from novalab.reference.common.wsgi import install_common_handlers, keystone_fault

    db, full = _full_sqlite(tmp_path / "full.db")
    app = Flask("x")
    install_common_handlers(app, fault=keystone_fault)

    @app.post("/rows")
    def write():
        with db.engine.begin() as conn:
            conn.execute(text("INSERT INTO rows VALUES (:p)"), {"p": b"x" * 65536})
        return "", 201

    client = app.test_client()
    refused = client.post("/rows")
    assert refused.status_code == 503
    assert refused.json["error"]["title"] == "Service Unavailable"
    assert "disk is full" in refused.json["error"]["message"]
    full["on"] = False
    db.engine.dispose()  # connections made from now on may grow the file
    assert client.post("/rows").status_code == 201
    db.dispose()
