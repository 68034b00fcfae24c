"""cells.py: where cell0 lives, the cell setup, and host discovery."""

from __future__ import annotations

import pytest

from novalab.reference.common.db import Base, Database
from novalab.reference.nova.cells import (
    CELL1_UUID,
    CellDatabases,
    cell0_url,
    cell_transport_url,
    simple_cell_setup,
)
from novalab.reference.nova.db import api as db_api
from novalab.reference.nova.db import api_database as api_db
from novalab.reference.nova.db.api_database import CELL0_UUID


@pytest.mark.parametrize(("main", "cell0"), [
    ("sqlite:////tmp/x/novalab.db", "sqlite:////tmp/x/novalab_cell0.db"),
    ("postgresql+psycopg://u:p%40ss@127.0.0.1:5432/nova",
     "postgresql+psycopg://u:p%40ss@127.0.0.1:5432/nova_cell0"),
    ("mysql+pymysql://u:p@localhost/nova?charset=utf8mb4",
     "mysql+pymysql://u:p@localhost/nova_cell0?charset=utf8mb4"),
])
def test_cell0_is_named_after_the_main_database(main, cell0):
    assert cell0_url(main) == cell0


def test_an_in_memory_database_has_no_room_for_cell0():
    with pytest.raises(ValueError, match="SQLite file"):
        cell0_url("sqlite://")


@pytest.fixture
def api(tmp_path):
    db = Database(f"sqlite:///{tmp_path}/nova.db")
    Base.metadata.create_all(db.engine)
    yield db
    db.dispose()


def test_simple_cell_setup_maps_cell0_and_cell1_once(api):
    first = simple_cell_setup(api, "memory://")
    again = simple_cell_setup(api, "memory://")
    assert [(c["uuid"], c["name"]) for c in again] == [(CELL0_UUID, "cell0"),
                                                       (CELL1_UUID, "cell1")]
    assert first == again
    assert again[0]["database_connection"] == cell0_url(api.url)
    assert again[1]["database_connection"] == api.url


def test_discover_hosts_maps_new_compute_hosts_to_cell1_only_once(api, tmp_path):
    simple_cell_setup(api, "memory://")
    Base.metadata.create_all(Database(cell0_url(api.url)).engine)
    for host in ("compute-1", "compute-2"):
        db_api.compute_node_create_or_update(api, {
            "host": host, "hypervisor_hostname": host, "vcpus": 2, "memory_mb": 2048,
            "local_gb": 10, "vcpus_used": 0, "memory_mb_used": 0, "local_gb_used": 0,
            "hypervisor_type": "test", "hypervisor_version": 1, "cpu_info": "{}",
            "supported_instances": []})
    from opentelemetry import trace

    cells = CellDatabases(api, trace.get_tracer("test"))
    try:
        assert sorted(cells.discover_hosts(None)) == ["compute-1", "compute-2"]
        assert cells.discover_hosts(None) == []
        mapping = api_db.host_mapping_get_by_host(api, "compute-2")
        assert mapping["cell_mapping"]["uuid"] == CELL1_UUID
        with pytest.raises(api_db.HostMappingNotFound):
            api_db.host_mapping_get_by_host(api, "compute-9")
    finally:
        cells.dispose()


@pytest.mark.parametrize(("top", "cell1"), [
    ("memory:///abc", "memory:///abc_nova_cell1"),
    ("memory://", "memory:///nova_cell1"),
    ("amqp://guest:guest@127.0.0.1:5672/", "amqp://guest:guest@127.0.0.1:5672/nova_cell1"),
    ("amqp://guest:guest@127.0.0.1:5672", "amqp://guest:guest@127.0.0.1:5672/nova_cell1"),
    ("rabbit://g:g@h/%2F", "rabbit://g:g@h/nova_cell1"),
    ("amqp://g:g@h:1/novalab-test-1", "amqp://g:g@h:1/novalab-test-1_cell1"),
])
def test_cell1_has_a_virtual_host_of_its_own(top, cell1):
    """The cell's conductor and compute queues must not be the super conductor's."""
    assert cell_transport_url(top) == cell1


def test_cell1_is_mapped_to_its_own_broker(api):
    cells = {c["name"]: c for c in simple_cell_setup(api, "memory:///x")}
    assert cells["cell1"]["transport_url"] == "memory:///x_nova_cell1"
    assert cells["cell0"]["transport_url"] == "none:///"
