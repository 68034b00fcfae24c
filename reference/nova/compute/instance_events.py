"""External events a build waits for (``nova/compute/manager.py`` InstanceEvents, VirtAPI).

Nova starts a guest paused and waits for Neutron to say its ports are wired
(``network-vif-plugged``) before letting it run. The driver calls
``virtapi.wait_for_instance_event(...)`` around the domain's creation: the
waiters are prepared *before* the action that triggers the events, so an event
arriving while the action is still running is not lost. Neutron sends the event
to nova-api (``POST /os-server-external-events``), which casts
``external_instance_event`` to the instance's host, where it wakes the waiter.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time

from opentelemetry import trace

from novalab.reference.common import exception
from novalab.tracing import attributes as attr
from novalab.tracing.spans import code_attributes

LOG = logging.getLogger(__name__)
CANCELLED = "cancelled"  # a waiter's status when its instance is deleted
_MANAGER = "nova/compute/manager.py"


class _Waiter:
    def __init__(self, name: str, tag: str | None):
        self.name = name
        self.tag = tag
        self.status: str | None = None
        self._done = threading.Event()

    def set(self, status: str) -> None:
        self.status = status
        self._done.set()

    def wait(self, timeout: float) -> bool:
        return self._done.wait(timeout)


class InstanceEvents:
    """The waiters of each instance, keyed by ``name-tag`` as Nova keys them."""

    def __init__(self):
        self._lock = threading.Lock()
        self._events: dict[str, dict[str, _Waiter]] = {}
        self._deleting: set[str] = set()

    @staticmethod
    def key(name: str, tag: str | None) -> str:
        return f"{name}-{tag}" if tag else name

    def prepare_for_instance_event(self, instance_uuid: str, name: str,
                                   tag: str | None) -> _Waiter:
        waiter = _Waiter(name, tag)
        with self._lock:
            if instance_uuid in self._deleting:
                waiter.set(CANCELLED)  # deleted before its build came to wait
            else:
                self._events.setdefault(instance_uuid, {})[self.key(name, tag)] = waiter
        return waiter

    def pop_instance_event(self, instance_uuid: str, name: str, tag: str | None):
        with self._lock:
            return self._events.get(instance_uuid, {}).pop(self.key(name, tag), None)

    def clear_events_for_instance(self, instance_uuid: str) -> None:
        with self._lock:
            self._events.pop(instance_uuid, None)

    def cancel_events_for_instance(self, instance_uuid: str) -> int:
        """The instance is being deleted: wake its waiters now, and any it prepares later.

        Upstream's delete queues behind the build's instance lock, so a build
        whose event never comes holds the delete for the whole
        ``vif_plugging_timeout``. novalab wakes the waiters as upstream's
        ``cancel_all_events`` does at shutdown, for this one instance
        (docs/decisions.md). Returns how many waiters were woken.
        """
        with self._lock:
            self._deleting.add(instance_uuid)
            waiters = self._events.pop(instance_uuid, {})
        for waiter in waiters.values():
            waiter.set(CANCELLED)
        return len(waiters)

    def forget_instance(self, instance_uuid: str) -> None:
        """The instance is gone: nothing more to cancel for it."""
        with self._lock:
            self._deleting.discard(instance_uuid)

    def cancel_all_events(self) -> int:
        """The service is stopping: every waiter wakes with a failed event (as upstream)."""
        with self._lock:
            waiters = [w for events in self._events.values() for w in events.values()]
            self._events.clear()
        for waiter in waiters:
            waiter.set("failed")
        return len(waiters)


class ComputeVirtAPI:
    """What a virt driver may ask of its compute manager (``ComputeVirtAPI``)."""

    def __init__(self, events: InstanceEvents, tracer):
        self.events = events
        self.tracer = tracer

    @contextlib.contextmanager
    def wait_for_instance_event(self, instance: dict, event_names: list[tuple[str, str]],
                                deadline: float = 300, error_callback=None):
        """Prepare waiters, run the block, then wait for every event (bounded)."""
        waiters = [self.events.prepare_for_instance_event(instance["uuid"], name, tag)
                   for name, tag in event_names]
        try:
            yield
            if not waiters:
                return
            with self.tracer.start_as_current_span(
                    "ComputeVirtAPI.wait_for_instance_event",
                    attributes=code_attributes(_MANAGER, "ComputeVirtAPI.wait_for_instance_event")
            ) as span:
                span.set_attribute(attr.NOVA_EVENTS, [f"{w.name}-{w.tag}" for w in waiters])
                end = time.monotonic() + deadline
                for waiter in waiters:
                    if not waiter.wait(max(0.0, end - time.monotonic())):
                        if error_callback:
                            error_callback(waiter.name, instance)
                        raise exception.VirtualInterfaceCreateException(
                            reason=f"timed out after {deadline:.0f} s waiting for "
                                   f"{waiter.name} ({waiter.tag})")
                    if waiter.status == CANCELLED:
                        span.add_event("wait cancelled: the instance is being deleted",
                                       {attr.NOVA_EVENT: waiter.name,
                                        attr.NOVA_EVENT_TAG: waiter.tag or ""})
                        raise exception.UnexpectedDeletingTaskStateError(
                            instance_uuid=instance["uuid"], expected="spawning",
                            actual="deleting")
                    span.add_event("event received", {attr.NOVA_EVENT: waiter.name,
                                                      attr.NOVA_EVENT_TAG: waiter.tag or "",
                                                      attr.NOVA_EVENT_STATUS: waiter.status})
                    if waiter.status == "failed":
                        raise exception.VirtualInterfaceCreateException(
                            reason=f"{waiter.name} for port {waiter.tag} failed")
        finally:
            self.events.clear_events_for_instance(instance["uuid"])

    def deliver(self, instance_uuid: str, name: str, tag: str | None, status: str) -> bool:
        """Wake the waiter of an event; False when nobody waits (Nova logs and drops it)."""
        waiter = self.events.pop_instance_event(instance_uuid, name, tag)
        if waiter is None:
            LOG.warning("Received unexpected event %s for instance %s",
                        InstanceEvents.key(name, tag), instance_uuid)
            trace.get_current_span().add_event("unexpected event", {attr.NOVA_EVENT: name})
            return False
        waiter.set(status)
        return True
