"""The L2 agent waits for a port's tap before wiring it, but not for a deleted port's."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import libvirt
from opentelemetry.trace import NoOpTracer

from novalab.reference.common.context import get_admin_context
from novalab.reference.neutron.agent.l2.agent import L2Agent, LibvirtBridgeManager


class RecordingPluginApi:
    """Stands in for the agent's RPC client to neutron-server: records what it is asked."""

    def __init__(self):
        self.calls: list[str] = []

    def get_device_details(self, context, device, agent_id, host):
        self.calls.append("get_device_details")
        return {}


def test_a_port_deleted_while_its_tap_is_awaited_is_given_up_at_once():
    manager = LibvirtBridgeManager("test:///default", NoOpTracer())
    assert manager.sees_guests  # so the agent really waits for the tap
    plugin = RecordingPluginApi()
    agent = L2Agent("compute-1", manager, plugin, NoOpTracer())
    worker = threading.Thread(target=agent.port_update,
                              args=(get_admin_context(), {"id": "port-never-plugged"}))
    worker.start()
    try:
        # The wait is 60 s; a port_delete must end it well before.
        for _ in range(500):
            if "port-never-plugged" in agent._waiting:
                break
            time.sleep(0.01)
        agent.port_delete(get_admin_context(), "port-never-plugged")
        worker.join(10)
        assert not worker.is_alive(), "the agent still waits for a deleted port's tap"
        assert plugin.calls == []  # nothing reported up for a port that is gone
    finally:
        manager.stop()
        worker.join()


class _Vanished:
    """A domain listed a moment before another guest's delete destroyed it."""

    def XMLDesc(self, flags):  # noqa: N802 - libvirt's name
        raise libvirt.libvirtError("Domain not found: no domain with matching uuid")


class _Present:
    def XMLDesc(self, flags):  # noqa: N802 - libvirt's name
        return ("<domain><devices><interface type='bridge'><target dev='tapabc'/>"
                "</interface></devices></domain>")


def test_a_domain_destroyed_while_the_agent_looks_is_skipped():
    manager = LibvirtBridgeManager("test:///default", NoOpTracer())
    manager._conn = SimpleNamespace(_target=SimpleNamespace(
        listAllDomains=lambda flags: [_Vanished(), _Present()]))
    assert manager.device_exists("tapabc")
    assert not manager.device_exists("tapxyz")
