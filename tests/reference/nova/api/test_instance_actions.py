"""``/servers/{id}/os-instance-actions`` as a client sees it.

The ``create`` action is keyed by the request id ``POST /servers`` answered with;
the compute host's build is its event. Bodies are checked against the response
schemas of Nova's api-ref (``nova/api/openstack/compute/schemas/instance_actions.py``):
the 2.1 action, with the events as Nova shows them from 2.51 (tracebacks for admins;
below 2.51 only admins see the events at all).
"""

from __future__ import annotations

import re
import time

import jsonschema
import pytest

from novalab.reference.nova.db import api as db_api
from novalab.tracing import attributes as attr

_TIME = {"type": "string",
         "pattern": r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$"}  # Nova's naive UTC
_ACTION = {
    "type": "object",
    "properties": {"action": {"type": "string"}, "instance_uuid": {"type": "string"},
                   "message": {"type": ["null", "string"]},
                   "project_id": {"type": ["null", "string"]},
                   "request_id": {"type": "string"}, "start_time": _TIME,
                   "user_id": {"type": ["null", "string"]}},
    "required": ["action", "instance_uuid", "message", "project_id", "request_id",
                 "start_time", "user_id"],
    "additionalProperties": False,
}
INDEX = {"type": "object", "properties": {"instanceActions": {"type": "array",
                                                              "items": _ACTION}},
         "required": ["instanceActions"], "additionalProperties": False}
_EVENT = {
    "type": "object",
    "properties": {"event": {"type": "string"}, "start_time": _TIME,
                   "finish_time": {"oneOf": [_TIME, {"type": "null"}]},
                   "result": {"type": ["string", "null"]},
                   "traceback": {"type": ["string", "null"]}},
    "required": ["event", "start_time", "finish_time", "result"],
    "additionalProperties": False,
}
SHOW = {"type": "object",
        "properties": {"instanceAction": {
            "type": "object",
            "properties": {**_ACTION["properties"],
                           "events": {"type": "array", "items": _EVENT}},
            "required": _ACTION["required"], "additionalProperties": False}},
        "required": ["instanceAction"], "additionalProperties": False}

REQUEST_ID = re.compile(r"^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def boot(session, cloud, name):
    """POST /servers and wait for ACTIVE or ERROR; returns (request id, server)."""
    response = session.request("POST", f"{session.compute}/servers", json={"server": {
        "name": name, "flavorRef": "42", "imageRef": cloud.cirros["id"]}})
    assert response.status_code == 202, response.text
    server_id = response.json()["server"]["id"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        server = session.request("GET", f"{session.compute}/servers/{server_id}").json()["server"]
        if server["status"] in ("ACTIVE", "ERROR"):
            return response.headers["X-OpenStack-Request-ID"], server
        time.sleep(0.05)
    raise AssertionError(f"{server_id} stayed in BUILD")


V251 = {"OpenStack-API-Version": "compute 2.51"}


def actions_url(session, server_id, request_id=""):
    url = f"{session.compute}/servers/{server_id}/os-instance-actions"
    return f"{url}/{request_id}" if request_id else url


def test_create_is_listed_under_the_request_id_of_post_servers(shared_cloud, login):
    demo = login(shared_cloud)
    request_id, server = boot(demo, shared_cloud, "acted")
    assert REQUEST_ID.match(request_id)
    body = demo.request("GET", actions_url(demo, server["id"])).json()
    jsonschema.validate(body, INDEX)
    (action,) = body["instanceActions"]
    assert action == {**action, "action": "create", "instance_uuid": server["id"],
                      "request_id": request_id, "user_id": server["user_id"],
                      "project_id": demo.project_id, "message": None}


def test_the_build_is_the_create_actions_event_tracebacks_for_admins(shared_cloud, login):
    demo, admin = login(shared_cloud), login(shared_cloud, "admin")
    request_id, server = boot(demo, shared_cloud, "evented")
    at_21 = demo.request("GET", actions_url(demo, server["id"], request_id)).json()
    assert "events" not in at_21["instanceAction"]  # below 2.51: admins only
    own = demo.request("GET", actions_url(demo, server["id"], request_id),
                       headers=V251).json()
    jsonschema.validate(own, SHOW)
    # The event is finished before the instance is saved ACTIVE: no wait needed here.
    (event,) = own["instanceAction"]["events"]
    assert (event["event"], event["result"]) == ("compute__do_build_and_run_instance",
                                                 "Success")
    assert "traceback" not in event  # policy os_compute_api:os-instance-actions:events
    assert event["start_time"] <= event["finish_time"]
    assert own["instanceAction"]["start_time"] <= event["start_time"]
    shown = admin.request("GET", actions_url(admin, server["id"], request_id)).json()
    jsonschema.validate(shown, SHOW)
    (event,) = shown["instanceAction"]["events"]
    assert event["result"] == "Success" and event["traceback"] is None


def test_a_failed_build_is_an_error_event_with_its_traceback(shared_cloud, login, monkeypatch):
    import libvirt

    def broken_define(xml):
        raise libvirt.libvirtError("injected: defineXML refused")

    host = shared_cloud.computes[0].driver._host
    monkeypatch.setattr(host, "write_instance_config", broken_define)
    demo, admin = login(shared_cloud), login(shared_cloud, "admin")
    request_id, server = boot(demo, shared_cloud, "doomed")
    assert server["status"] == "ERROR" and "defineXML refused" in server["fault"]["message"]
    # Seen ERROR, so the event is finished: it closes before the ERROR save.
    own = demo.request("GET", actions_url(demo, server["id"], request_id),
                       headers=V251).json()
    (event,) = own["instanceAction"]["events"]
    assert own["instanceAction"]["message"] == "Error"
    assert event["result"] == "Error" and event["finish_time"] and "traceback" not in event
    action = admin.request("GET", actions_url(admin, server["id"], request_id)).json()
    (event,) = action["instanceAction"]["events"]
    assert "defineXML refused" in event["traceback"]
    assert event["traceback"].startswith("Traceback (most recent call last)")


def test_delete_is_an_action_whose_event_is_the_terminate(shared_cloud, login):
    demo = login(shared_cloud)
    _, server = boot(demo, shared_cloud, "short-lived")
    # While the host deletes, the server (task_state deleting) still lists its actions;
    # pause the compute host's terminate to look at it then.
    compute = shared_cloud.computes[0]
    lock = compute._instance_locks[server["id"]]
    with lock:
        deleted = demo.request("DELETE", f"{demo.compute}/servers/{server['id']}")
        assert deleted.status_code == 204
        delete_id = deleted.headers["X-OpenStack-Request-ID"]
        listed = demo.request("GET", actions_url(demo, server["id"])).json()["instanceActions"]
        assert [(a["action"], a["request_id"]) for a in listed][0] == ("delete", delete_id)
        assert [a["action"] for a in listed] == ["delete", "create"]
        deadline = time.monotonic() + 10
        while True:  # the event starts before the terminate takes the instance's lock
            events = demo.request("GET", actions_url(demo, server["id"], delete_id),
                                  headers=V251).json()["instanceAction"]["events"]
            if events or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        assert [(e["event"], e["result"]) for e in events] == \
            [("compute_terminate_instance", None)]
    deadline = time.monotonic() + 10
    while demo.request("GET", f"{demo.compute}/servers/{server['id']}").status_code != 404:
        assert time.monotonic() < deadline, "the server was not deleted"
        time.sleep(0.05)
    # Gone: at microversion 2.1 a deleted server's actions are not found (2.21 shows them).
    gone = demo.request("GET", actions_url(demo, server["id"]))
    assert gone.status_code == 404 and "itemNotFound" in gone.json()
    kept = demo.request("GET", actions_url(demo, server["id"]),
                        headers={"OpenStack-API-Version": "compute 2.21"})
    assert [a["action"] for a in kept.json()["instanceActions"]] == ["delete", "create"]
    # The rows stay (soft delete): the terminate finished with Success.
    api = shared_cloud.compute_api
    action = db_api.action_get_by_request_id(api.db, server["id"], delete_id)
    deadline = time.monotonic() + 10
    while [e["result"] for e in db_api.action_events_get(api.db, action["id"])] != ["Success"]:
        assert time.monotonic() < deadline, "the terminate event did not finish"
        time.sleep(0.05)


@pytest.mark.parametrize("user", ["demo", "admin"])
def test_unknown_server_and_request_id_are_404_faults(shared_cloud, login, user):
    session = login(shared_cloud, user)
    missing = "6b3f3c8e-3a4b-4f29-9d8e-1c2b3a4d5e6f"
    response = session.request("GET", actions_url(session, missing))
    assert response.status_code == 404
    assert response.json() == {"itemNotFound": {
        "code": 404, "message": f"Instance {missing} could not be found."}}
    _, server = boot(login(shared_cloud), shared_cloud, f"for-{user}")
    response = session.request("GET", actions_url(session, server["id"], "req-unknown"))
    assert response.status_code == 404
    assert response.json() == {"itemNotFound": {"code": 404,
                                                 "message": "Action req-unknown not found"}}


def test_another_projects_server_is_404(shared_cloud, login):
    demo, admin = login(shared_cloud), login(shared_cloud, "admin")
    request_id, server = boot(admin, shared_cloud, "admins-own")
    for url in (actions_url(demo, server["id"]), actions_url(demo, server["id"], request_id)):
        response = demo.request("GET", url)
        assert response.status_code == 404
        assert "itemNotFound" in response.json()


def test_the_create_span_names_the_server_and_the_action(shared_cloud, login):
    """A trace is found by the server's name: ``ServersController.create`` carries it,
    and its SERVER span the request id ``server event list`` shows."""
    demo = login(shared_cloud)
    request_id, server = boot(demo, shared_cloud, "findable")
    spans = shared_cloud.telemetry.finished_spans()
    (create,) = [s for s in spans if s.name == "ServersController.create" and
                 s.attributes.get(attr.NOVA_INSTANCE_UUID) == server["id"]]
    assert create.attributes[attr.NOVA_INSTANCE_DISPLAY_NAME] == "findable"
    assert create.attributes[attr.NOVA_INSTANCE_ACTION] == "create"
    parent = next(s for s in spans if s.context.span_id == create.parent.span_id)
    assert parent.kind.name == "SERVER"
    assert parent.attributes[attr.OPENSTACK_REQUEST_ID] == request_id
    (recorded,) = [s for s in spans if s.name == "API._record_action_start" and
                   s.attributes.get(attr.NOVA_INSTANCE_UUID) == server["id"]]
    assert recorded.attributes[attr.NOVA_INSTANCE_ACTION] == "create"
    (build,) = [s for s in spans if s.name == "ComputeManager._do_build_and_run_instance" and
                s.attributes.get(attr.NOVA_INSTANCE_UUID) == server["id"]]
    assert build.attributes[attr.NOVA_INSTANCE_ACTION_EVENT] == \
        "compute__do_build_and_run_instance"
