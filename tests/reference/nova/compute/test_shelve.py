"""The offload's order, against upstream's ``ComputeManager._shelve_offload_instance``.

Upstream frees the server's placement allocations *before* it saves
SHELVED_OFFLOADED, so that whoever polls the API and acts on that state (an
unshelve, another boot) finds the resources free. The compute manager runs here
with recording stand-ins for the conductor, placement and the driver: no cloud.
"""

from __future__ import annotations

from types import SimpleNamespace

from opentelemetry import trace

from novalab.reference.nova.compute import task_states, vm_states
from novalab.reference.nova.compute.manager import ComputeManager

UUID = "6f1c1a38-8b7e-4c62-9a2e-3d0f3c1b2a10"


class Conductor:
    """Saves instances and records each save in ``log``."""

    def __init__(self, log: list):
        self.log = log

    def block_device_mapping_get_all_by_instance(self, context, uuid):
        return []

    def instance_update(self, context, uuid, updates, **kwargs):
        self.log.append(("save", dict(updates)))
        return {"uuid": uuid, **updates}


class Placement:
    def __init__(self, log: list):
        self.log = log

    def delete_allocation_for_instance(self, context, uuid):
        self.log.append(("delete allocations", uuid))


def test_offload_frees_the_allocations_before_it_saves_shelved_offloaded():
    log: list = []
    driver = SimpleNamespace(power_off=lambda *a: None, destroy=lambda *a: None,
                             get_info=lambda instance: SimpleNamespace(state=4))
    manager = ComputeManager("compute-1", driver, Conductor(log), trace.NoOpTracer(),
                             reportclient=Placement(log))
    instance = {"uuid": UUID, "vm_state": vm_states.SHELVED,
                "task_state": task_states.SHELVING_OFFLOADING}
    manager._shelve_offload_instance(None, instance, clean_shutdown=False)

    freed = log.index(("delete allocations", UUID))
    offloaded = next(i for i, (what, updates) in enumerate(log)
                     if what == "save" and updates.get("vm_state") == vm_states.SHELVED_OFFLOADED)
    assert freed < offloaded, log
    # The host goes last, in a save of its own, as upstream's.
    assert log[-1] == ("save", {"host": None, "node": None})
