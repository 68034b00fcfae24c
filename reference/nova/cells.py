"""Cells v2: which database an instance lives in (``nova/context.py`` ``target_cell``).

A cloud of the modern topology has an API database and cells. Every
deployment has **cell0**, where instances that never reached a host are
buried with their fault, and at least one real cell (**cell1**) whose
database holds the hosts' instances. ``CellMapping`` rows in the API database
say where each cell's database is; a service that holds the API database
(nova-api, the super conductor, the scheduler) reaches a cell's through
:meth:`CellDatabases.target_cell`.

novalab's API database and cell1 are one database (the same URL); cell0 is
its own, named after it as DevStack names ``nova_cell0`` after ``nova``
(:func:`cell0_url`). Cell1 has a message queue of its own too, a virtual host
on the same broker (:func:`cell_transport_url`): its conductor and compute
hosts talk there, the API, the scheduler and the super conductor on the
top-level one, and only the super conductor and the API reach into the cell's.
"""

from __future__ import annotations

import logging
import threading
import urllib.parse
import uuid
from pathlib import Path

from sqlalchemy.engine import make_url

from novalab.reference.common.db import Database
from novalab.reference.nova.db import api as db_api
from novalab.reference.nova.db import api_database as api_db
from novalab.reference.nova.db.api_database import CELL0_UUID
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)
CELL1_NAME = "cell1"
CELL1_VHOST = "nova_cell1"
# cell1's uuid: upstream draws a random one when it maps the cell; a fixed one here
# lets every process of a deployment map it without asking the others.
CELL1_UUID = str(uuid.uuid5(uuid.NAMESPACE_URL, "novalab:cell1"))


def cell0_url(db_url: str) -> str:
    """Where cell0's database is: ``nova.db`` -> ``nova_cell0.db`` for SQLite, the
    database ``nova`` -> ``nova_cell0`` on the same PostgreSQL or MariaDB server."""
    url = make_url(db_url)
    if url.get_backend_name() == "sqlite":
        if not url.database or url.database == ":memory:":
            raise ValueError("cell0 needs a database of its own: a SQLite file, not memory")
        path = Path(url.database)
        return url.set(database=str(path.with_name(f"{path.stem}_cell0{path.suffix}"))) \
            .render_as_string(hide_password=False)
    return url.set(database=f"{url.database}_cell0").render_as_string(hide_password=False)


def cell_transport_url(transport_url: str) -> str:
    """Where cell1's messages go: the same broker, a virtual host of the cell's own
    (DevStack's ``nova_cell1``), so the cell's ``conductor`` and ``compute`` queues
    are not the super conductor's. The in-memory broker: one named after it."""
    parts = urllib.parse.urlsplit(transport_url)
    if parts.scheme == "memory":
        name = parts.path.strip("/")
        return f"memory:///{name + '_' if name else ''}{CELL1_VHOST}"
    vhost = urllib.parse.unquote(parts.path[1:])
    cell_vhost = f"{vhost}_cell1" if vhost not in ("", "/") else CELL1_VHOST
    return urllib.parse.urlunsplit(parts._replace(path="/" + urllib.parse.quote(cell_vhost,
                                                                               safe="")))


def simple_cell_setup(db: Database, transport_url: str) -> list[dict]:
    """``nova-manage cell_v2 simple_cell_setup``: map cell0 and cell1 if unmapped.

    ``db`` is the API database, which is also cell1's. Idempotent, and safe when
    two processes run it at once (the loser's insert fails on the unique uuid).
    """
    wanted = [{"uuid": CELL0_UUID, "name": "cell0", "transport_url": "none:///",
               "database_connection": cell0_url(db.url)},
              {"uuid": CELL1_UUID, "name": CELL1_NAME,
               "transport_url": cell_transport_url(transport_url),
               "database_connection": db.url}]
    for values in wanted:
        try:
            api_db.cell_mapping_get_by_uuid(db, values["uuid"])
        except api_db.CellMappingNotFound:
            try:
                api_db.cell_mapping_create(db, values)
            except Exception:  # a concurrent setup mapped it first
                api_db.cell_mapping_get_by_uuid(db, values["uuid"])
    return api_db.cell_mapping_get_all(db)


class CellDatabases:
    """One service's handles on the cells' databases, opened on first use."""

    def __init__(self, api: Database, tracer, tracer_provider=None):
        self.api = api
        self.tracer = tracer
        self._tracer_provider = tracer_provider
        self._opened: dict[str, Database] = {api.url: api}
        self._lock = threading.Lock()

    def target_cell(self, cell: dict) -> Database:
        """The database of ``cell`` (a ``cell_mappings`` row)."""
        url = cell["database_connection"]
        with self._lock:
            if url not in self._opened:
                self._opened[url] = Database(url, tracer_provider=self._tracer_provider)
            return self._opened[url]

    def cell0(self) -> tuple[dict, Database]:
        cell = api_db.cell_mapping_get_by_uuid(self.api, CELL0_UUID)
        return cell, self.target_cell(cell)

    def all_cells(self) -> list[tuple[dict, Database]]:
        return [(cell, self.target_cell(cell)) for cell in api_db.cell_mapping_get_all(self.api)
                if not cell["disabled"]]

    @upstream("nova/objects/host_mapping.py", "discover_hosts")
    def discover_hosts(self, context) -> list[str]:
        """Map every compute host of every real cell that has no mapping yet
        (``nova-manage cell_v2 discover_hosts``; the scheduler's periodic
        ``discover_hosts_in_cells_interval`` does the same)."""
        mapped = api_db.host_mappings_get_all(self.api)
        added = []
        for cell, db in self.all_cells():
            if cell["uuid"] == CELL0_UUID:
                continue
            for node in db_api.compute_node_get_all(db):
                if node["host"] in mapped:
                    continue
                try:
                    api_db.host_mapping_create(self.api, node["host"], cell["id"])
                except Exception:  # another scheduler mapped it meanwhile
                    LOG.debug("Host %s was mapped meanwhile", node["host"])
                mapped.add(node["host"])
                added.append(node["host"])
        if added:
            LOG.info("Mapped hosts %s to their cell", added)
        return added

    def dispose(self) -> None:
        for url, db in self._opened.items():
            if url != self.api.url:
                db.dispose()
