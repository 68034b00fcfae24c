"""Instance actions and their events in the database (``nova/db/main/api.py``'s ``action_*``)."""

from __future__ import annotations

import pytest

from novalab.reference.common.db import Database, utcnow
from novalab.reference.nova import exception as nova_exception
from novalab.reference.nova.db import api as db_api

UUID = "11111111-2222-3333-4444-555555555555"


@pytest.fixture
def db(tmp_path):
    database = Database(f"sqlite:///{tmp_path / 'n.db'}")
    database.create_schema()
    db_api.instance_create(database, {
        "uuid": UUID, "display_name": "x", "project_id": "p", "user_id": "u",
        "flavor_id": "42", "flavor_name": "m1.nano", "memory_mb": 64, "vcpus": 1,
        "root_gb": 1, "vm_state": "building", "task_state": "scheduling"})
    yield database
    database.dispose()


def start(db, request_id, action="create"):
    return db_api.action_start(db, {"action": action, "instance_uuid": UUID,
                                    "request_id": request_id, "user_id": "u",
                                    "project_id": "p", "start_time": utcnow()})


def test_actions_are_listed_newest_first_and_found_by_request_id(db):
    start(db, "req-1")
    start(db, "req-2", "delete")
    assert [a["action"] for a in db_api.actions_get(db, UUID)] == ["delete", "create"]
    found = db_api.action_get_by_request_id(db, UUID, "req-1")
    assert (found["action"], found["user_id"], found["message"]) == ("create", "u", None)
    assert db_api.action_get_by_request_id(db, UUID, "req-9") is None
    assert db_api.actions_get(db, "00000000-0000-0000-0000-000000000000") == []


def test_an_event_starts_and_finishes_under_its_action(db):
    action = start(db, "req-1")
    # Times cross RPC as ISO strings: the database layer turns them back.
    db_api.action_event_start(db, {"event": "compute__do_build_and_run_instance",
                                   "instance_uuid": UUID, "request_id": "req-1",
                                   "start_time": utcnow().isoformat(), "host": "compute-1"})
    (event,) = db_api.action_events_get(db, action["id"])
    assert (event["result"], event["finish_time"], event["host"]) == (None, None, "compute-1")
    db_api.action_event_finish(db, {"event": "compute__do_build_and_run_instance",
                                    "instance_uuid": UUID, "request_id": "req-1",
                                    "finish_time": utcnow().isoformat(), "result": "Success"})
    (event,) = db_api.action_events_get(db, action["id"])
    assert event["result"] == "Success" and event["finish_time"] >= event["start_time"]
    assert db_api.action_get_by_request_id(db, UUID, "req-1")["message"] is None


def test_an_error_event_marks_its_action(db):
    action = start(db, "req-1")
    values = {"event": "compute_terminate_instance", "instance_uuid": UUID,
              "request_id": "req-1"}
    db_api.action_event_start(db, dict(values, start_time=utcnow()))
    db_api.action_event_finish(db, dict(values, finish_time=utcnow(), result="Error",
                                        traceback="Traceback ...", details="boom"))
    (event,) = db_api.action_events_get(db, action["id"])
    assert (event["result"], event["traceback"], event["details"]) == \
        ("Error", "Traceback ...", "boom")
    assert db_api.action_get_by_request_id(db, UUID, "req-1")["message"] == "Error"


def test_events_need_their_action_and_their_start(db):
    values = {"event": "compute_x", "instance_uuid": UUID, "request_id": "req-none"}
    with pytest.raises(nova_exception.InstanceActionNotFound) as raised:
        db_api.action_event_start(db, dict(values, start_time=utcnow()))
    assert raised.value.code == 404
    assert "Action for request_id req-none on instance" in str(raised.value)
    start(db, "req-1")
    with pytest.raises(nova_exception.InstanceActionEventNotFound):
        db_api.action_event_finish(db, dict(values, request_id="req-1", result="Success",
                                            finish_time=utcnow()))
