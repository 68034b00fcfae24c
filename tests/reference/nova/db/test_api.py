"""The instance compare-and-swap that keeps racing services honest."""

from __future__ import annotations

import pytest

from novalab.reference.common import exception
from novalab.reference.common.db import Database
from novalab.reference.nova.db import api as db_api


@pytest.fixture
def db(tmp_path):
    database = Database(f"sqlite:///{tmp_path / 'n.db'}")
    database.create_schema()
    yield database
    database.dispose()


def make_instance(db, **values):
    base = {"uuid": "11111111-2222-3333-4444-555555555555", "display_name": "x",
            "project_id": "p", "user_id": "u", "flavor_id": "42", "flavor_name": "m1.nano",
            "memory_mb": 64, "vcpus": 1, "root_gb": 1, "vm_state": "building",
            "task_state": "scheduling"}
    return db_api.instance_create(db, {**base, **values})


def test_update_with_expected_task_state(db):
    inst = make_instance(db)
    assert inst["name"] == f"instance-{inst['id']:08x}"
    new = db_api.instance_update(db, inst["uuid"], {"task_state": None},
                                 expected_task_state=["scheduling", None])
    assert new["task_state"] is None
    with pytest.raises(exception.UnexpectedTaskStateError) as raised:
        db_api.instance_update(db, inst["uuid"], {"task_state": "spawning"},
                               expected_task_state="networking")
    assert "Actual: None" in str(raised.value)
    assert db_api.instance_get_by_uuid(db, inst["uuid"])["task_state"] is None



def test_each_state_save_is_an_instance_save_event_on_the_current_span(db):
    """What was written (None as "None") and what the save expected; a save that loses
    its compare-and-swap, or writes no state, records nothing."""
    from novalab.tracing.setup import Telemetry

    inst = make_instance(db, vm_state="active", task_state=None, power_state=1)
    telemetry = Telemetry(memory=True, otlp=False)
    with telemetry.tracer("nova-conductor").start_as_current_span("instance_update"):
        db_api.instance_update(db, inst["uuid"], {"task_state": "powering-off"},
                               expected_task_state=[None])
        db_api.instance_update(db, inst["uuid"], {"vm_state": "stopped", "power_state": 4,
                                                  "task_state": None},
                               expected_task_state="powering-off")
        with pytest.raises(exception.UnexpectedTaskStateError):
            db_api.instance_update(db, inst["uuid"], {"task_state": "pausing"},
                                   expected_task_state="powering-on")
        db_api.instance_update(db, inst["uuid"], {"display_name": "y"})
        db_api.instance_update(db, inst["uuid"], {"vm_state": "error"})
    (span,) = telemetry.finished_spans()
    assert [e.name for e in span.events] == ["Instance.save"] * 3
    assert [dict(e.attributes) for e in span.events] == [
        {"nova.instance.task_state": "powering-off",
         "nova.instance.expected_task_state": ("None",)},
        {"nova.instance.vm_state": "stopped", "nova.instance.power_state": 4,
         "nova.instance.task_state": "None",
         "nova.instance.expected_task_state": ("powering-off",)},
        {"nova.instance.vm_state": "error"}]

def test_datetimes_from_rpc_strings(db):
    inst = make_instance(db)
    new = db_api.instance_update(db, inst["uuid"], {"launched_at": "2026-11-22T01:02:03.456789"})
    assert new["launched_at"].microsecond == 456789


def test_update_of_a_deleted_instance_is_not_found(db):
    inst = make_instance(db)
    db_api.instance_destroy(db, inst["uuid"])
    with pytest.raises(exception.InstanceNotFound):
        db_api.instance_update(db, inst["uuid"], {"task_state": None},
                               expected_task_state="scheduling")


def test_soft_delete_hides_and_host_usage(db):
    a = make_instance(db, host="h1")
    make_instance(db, uuid="99999999-2222-3333-4444-555555555555", host="h1", memory_mb=128)
    assert db_api.host_usage(db)["h1"] == {"instances": 2, "memory_mb": 192, "vcpus": 2,
                                           "disk_gb": 2}
    db_api.instance_destroy(db, a["uuid"])
    with pytest.raises(exception.InstanceNotFound):
        db_api.instance_get_by_uuid(db, a["uuid"])
    assert db_api.instance_get_by_uuid(db, a["uuid"], read_deleted="yes")["deleted"] == a["id"]
    assert db_api.host_usage(db)["h1"]["instances"] == 1


def test_a_service_that_starts_again_is_up_at_once(db):
    """Its row is found again with a fresh last_seen_up, so the scheduler does not wait
    for the first heartbeat of a service restarted after a long stop."""
    from datetime import timedelta

    from novalab.reference.common.db import utcnow
    from novalab.reference.nova.db.models import Service
    from novalab.reference.nova.scheduler.host_manager import service_is_up

    first = db_api.service_create_or_get(db, "compute-1", "nova-compute", "compute")
    with db.session() as session:
        session.get(Service, first["id"]).last_seen_up = utcnow() - timedelta(hours=20)
    assert not service_is_up(db_api.service_get_all(db, "nova-compute")[0])
    again = db_api.service_create_or_get(db, "compute-1", "nova-compute", "compute")
    assert again["id"] == first["id"] and service_is_up(again)
