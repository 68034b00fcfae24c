"""Waiting for external events: prepared before the action, bounded, failure-aware."""

from __future__ import annotations

import threading

import pytest

from novalab.reference.common import exception
from novalab.reference.nova.compute.instance_events import ComputeVirtAPI, InstanceEvents
from novalab.tracing.setup import Telemetry

INSTANCE = {"uuid": "4f1c7c1e-0000-4000-8000-000000000001"}


@pytest.fixture
def virtapi():
    return ComputeVirtAPI(InstanceEvents(), Telemetry(memory=True, otlp=False).tracer("c"))


def test_event_delivered_during_the_action_is_not_lost(virtapi):
    with virtapi.wait_for_instance_event(INSTANCE, [("network-vif-plugged", "p1")], deadline=5):
        # Neutron answers while the domain is still being created.
        assert virtapi.deliver(INSTANCE["uuid"], "network-vif-plugged", "p1", "completed")


def test_event_from_another_thread_wakes_the_waiter(virtapi):
    timer = threading.Timer(0.05, virtapi.deliver,
                            (INSTANCE["uuid"], "network-vif-plugged", "p1", "completed"))
    with virtapi.wait_for_instance_event(INSTANCE, [("network-vif-plugged", "p1")], deadline=5):
        timer.start()
    timer.join()


def test_missing_event_times_out(virtapi):
    with pytest.raises(exception.VirtualInterfaceCreateException, match="timed out"):
        with virtapi.wait_for_instance_event(INSTANCE, [("network-vif-plugged", "p1")],
                                             deadline=0.05):
            pass


def test_failed_event_fails_the_wait(virtapi):
    with pytest.raises(exception.VirtualInterfaceCreateException, match="failed"):
        with virtapi.wait_for_instance_event(INSTANCE, [("network-vif-plugged", "p1")],
                                             deadline=5):
            virtapi.deliver(INSTANCE["uuid"], "network-vif-plugged", "p1", "failed")


def test_unexpected_event_is_reported_not_kept(virtapi):
    assert not virtapi.deliver(INSTANCE["uuid"], "network-vif-plugged", "p9", "completed")


def test_a_delete_wakes_a_waiting_build_as_deleted_not_failed(virtapi):
    timer = threading.Timer(0.05, virtapi.events.cancel_events_for_instance, (INSTANCE["uuid"],))
    with pytest.raises(exception.UnexpectedDeletingTaskStateError):
        with virtapi.wait_for_instance_event(INSTANCE, [("network-vif-plugged", "p1")],
                                             deadline=30):
            timer.start()
    timer.join()


def test_a_build_deleted_before_it_waits_does_not_wait(virtapi):
    virtapi.events.cancel_events_for_instance(INSTANCE["uuid"])
    with pytest.raises(exception.UnexpectedDeletingTaskStateError):
        with virtapi.wait_for_instance_event(INSTANCE, [("network-vif-plugged", "p1")],
                                             deadline=30):
            pass
    virtapi.events.forget_instance(INSTANCE["uuid"])  # the instance is gone
    with pytest.raises(exception.VirtualInterfaceCreateException, match="timed out"):
        with virtapi.wait_for_instance_event(INSTANCE, [("network-vif-plugged", "p1")],
                                             deadline=0.05):
            pass


def test_stopping_fails_every_wait(virtapi):
    timer = threading.Timer(0.05, virtapi.events.cancel_all_events)
    with pytest.raises(exception.VirtualInterfaceCreateException, match="failed"):
        with virtapi.wait_for_instance_event(INSTANCE, [("network-vif-plugged", "p1")],
                                             deadline=30):
            timer.start()
    timer.join()
