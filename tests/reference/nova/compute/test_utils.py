"""``EventReporter`` and ``@wrap_instance_event``: what nova-compute sends the conductor."""

from __future__ import annotations

import pytest

from novalab.reference.common.context import RequestContext
from novalab.reference.nova.compute.utils import EventReporter, wrap_instance_event


class RecordingConductor:
    """Stands in for ConductorAPI: keeps the (method, values) it would have sent."""

    def __init__(self):
        self.sent = []

    def action_event_start(self, context, values):
        self.sent.append(("action_event_start", values))

    def action_event_finish(self, context, values):
        self.sent.append(("action_event_finish", values))


@pytest.fixture
def context():
    return RequestContext(user_id="u", project_id="p", request_id="req-1")


def test_success_is_reported_under_the_request_id(context):
    conductor = RecordingConductor()
    with EventReporter(context, conductor, "compute_x", "compute-1", "uuid-a", "uuid-b"):
        pass
    assert [m for m, _ in conductor.sent] == ["action_event_start"] * 2 + \
        ["action_event_finish"] * 2
    start, finish = conductor.sent[0][1], conductor.sent[2][1]
    assert (start["event"], start["instance_uuid"], start["request_id"], start["host"]) == \
        ("compute_x", "uuid-a", "req-1", "compute-1")
    assert finish["result"] == "Success" and "traceback" not in finish


def test_an_exception_is_reported_as_error_and_raised_again(context):
    conductor = RecordingConductor()
    with pytest.raises(RuntimeError), \
            EventReporter(context, conductor, "compute_x", "compute-1", "uuid-a"):
        raise RuntimeError("the hypervisor said no")
    finish = conductor.sent[-1][1]
    assert finish["result"] == "Error" and finish["details"] == "the hypervisor said no"
    assert "RuntimeError: the hypervisor said no" in finish["traceback"]
    assert finish["traceback"].startswith("Traceback (most recent call last)")


def test_wrap_instance_event_names_the_event_after_the_method(context):
    class Manager:
        host = "compute-7"

        def __init__(self):
            self.conductor_api = RecordingConductor()

        @wrap_instance_event(prefix="compute")
        def terminate_instance(self, context, instance, force=False):
            return instance["uuid"], force

    manager = Manager()
    assert manager.terminate_instance(context, instance={"uuid": "uuid-a"}, force=True) == \
        ("uuid-a", True)
    assert manager.terminate_instance(context, {"uuid": "uuid-b"}) == ("uuid-b", False)
    starts = [v for m, v in manager.conductor_api.sent if m == "action_event_start"]
    assert [(v["event"], v["instance_uuid"], v["host"]) for v in starts] == [
        ("compute_terminate_instance", "uuid-a", "compute-7"),
        ("compute_terminate_instance", "uuid-b", "compute-7")]
