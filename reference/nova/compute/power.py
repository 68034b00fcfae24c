"""nova-compute's power actions and console output (``nova/compute/manager.py``).

Upstream these are methods of ``ComputeManager``; novalab keeps them in this
mixin, as ``shelve.py`` keeps the shelve ones. Each power action arrives as a
cast on ``compute.<host>`` with the task state nova-api saved, runs serialised
with the instance's other work, asks the driver, and saves the new power state
and vm_state only if the task state is still the one it expects (a delete that
came in between wins):

    stop_instance      powering-off -> STOPPED (power_state SHUTDOWN)
    start_instance     powering-on -> ACTIVE (RUNNING)      (in ``shelve.py``)
    reboot_instance    rebooting -> reboot_pending -> reboot_started -> ACTIVE
                       (rebooting_hard -> ..._hard for a HARD reboot)
    pause_instance     pausing -> PAUSED (PAUSED)
    unpause_instance   unpausing -> ACTIVE (RUNNING)
    suspend_instance   suspending -> SUSPENDED (SHUTDOWN: libvirt's managed save)
    resume_instance    resuming -> ACTIVE (RUNNING)

Each is the event ``compute_<method>`` of the request's instance action
(``@wrap_instance_event``); a failure records a fault and puts the task state
back to None. ``get_console_output`` is an RPC *call*: nova-api waits for the
guest's serial console log, the last ``tail_length`` lines of it.
"""

from __future__ import annotations

import logging

from novalab.reference.nova.compute import task_states, vm_states
from novalab.reference.nova.compute.shelve import reverts_task_state, wrap_instance_fault
from novalab.reference.nova.compute.utils import wrap_instance_event
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)
_MANAGER = "nova/compute/manager.py"
# The task states of a reboot, by type: (set by nova-api, pending, started).
_REBOOT_STATES = {
    "SOFT": (task_states.REBOOTING, task_states.REBOOT_PENDING, task_states.REBOOT_STARTED),
    "HARD": (task_states.REBOOTING_HARD, task_states.REBOOT_PENDING_HARD,
             task_states.REBOOT_STARTED_HARD),
}


def tail_log(log: bytes, length) -> bytes:
    """The last ``length`` lines (``ComputeManager._tail_log``); 0 or junk: nothing."""
    try:
        length = int(length)
    except ValueError:
        length = 0
    if length <= 0:
        return b""
    return b"\n".join(log.split(b"\n")[-length:])


class PowerMixin:
    """What ``ComputeManager`` gains; it uses the manager's ``driver``, ``conductor_api``,
    ``network_api``, ``_instance_locks``, ``_instance_update`` and ``_get_power_state``."""

    def _power_action(self, context, instance: dict, expected: str, vm_state: str,
                      do) -> dict:
        """Run ``do()`` under the instance's lock, then save power_state and vm_state."""
        with self._instance_locks[instance["uuid"]]:
            do()
            return self._instance_update(context, instance, expected=expected,
                                         power_state=self._get_power_state(instance),
                                         vm_state=vm_state, task_state=None)

    @upstream(_MANAGER, "ComputeManager.stop_instance")
    @reverts_task_state
    @wrap_instance_event(prefix="compute")
    @wrap_instance_fault
    def stop_instance(self, context, instance: dict, clean_shutdown: bool = True) -> None:
        """RPC endpoint (cast): power the guest off (cleanly, if it answers in time)."""
        self._power_action(context, instance, task_states.POWERING_OFF, vm_states.STOPPED,
                           lambda: self._power_off_instance(context, instance,
                                                            clean_shutdown))

    @upstream(_MANAGER, "ComputeManager.reboot_instance")
    @reverts_task_state
    @wrap_instance_event(prefix="compute")
    @wrap_instance_fault
    def reboot_instance(self, context, instance: dict, block_device_info=None,
                        reboot_type: str = "SOFT") -> None:
        """RPC endpoint (cast): reboot the guest; it is ACTIVE again afterwards."""
        requested, pending, started = _REBOOT_STATES[reboot_type]
        with self._instance_locks[instance["uuid"]]:
            instance = self._instance_update(context, instance, expected=requested,
                                             task_state=pending)
            instance = self._instance_update(context, instance, expected=pending,
                                             task_state=started)
            self.driver.reboot(context, instance, self._network_info(context, instance),
                               reboot_type, block_device_info=block_device_info)
            self._instance_update(context, instance, expected=started,
                                  power_state=self._get_power_state(instance),
                                  vm_state=vm_states.ACTIVE, task_state=None)

    @upstream(_MANAGER, "ComputeManager.pause_instance")
    @reverts_task_state
    @wrap_instance_event(prefix="compute")
    @wrap_instance_fault
    def pause_instance(self, context, instance: dict) -> None:
        """RPC endpoint (cast): freeze the guest's vCPUs."""
        self._power_action(context, instance, task_states.PAUSING, vm_states.PAUSED,
                           lambda: self.driver.pause(instance))

    @upstream(_MANAGER, "ComputeManager.unpause_instance")
    @reverts_task_state
    @wrap_instance_event(prefix="compute")
    @wrap_instance_fault
    def unpause_instance(self, context, instance: dict) -> None:
        self._power_action(context, instance, task_states.UNPAUSING, vm_states.ACTIVE,
                           lambda: self.driver.unpause(instance))

    @upstream(_MANAGER, "ComputeManager.suspend_instance")
    @reverts_task_state
    @wrap_instance_event(prefix="compute")
    @wrap_instance_fault
    def suspend_instance(self, context, instance: dict) -> None:
        """RPC endpoint (cast): save the guest's memory to disk and stop it."""
        self._power_action(context, instance, task_states.SUSPENDING, vm_states.SUSPENDED,
                           lambda: self.driver.suspend(context, instance))

    @upstream(_MANAGER, "ComputeManager.resume_instance")
    @reverts_task_state
    @wrap_instance_event(prefix="compute")
    @wrap_instance_fault
    def resume_instance(self, context, instance: dict) -> None:
        self._power_action(context, instance, task_states.RESUMING, vm_states.ACTIVE,
                           lambda: self.driver.resume(
                               context, instance, self._network_info(context, instance)))

    @upstream(_MANAGER, "ComputeManager.get_console_output")
    @wrap_instance_fault
    def get_console_output(self, context, instance: dict, tail_length=None) -> str:
        """RPC endpoint (call): the guest's console log, its last ``tail_length`` lines."""
        output = self.driver.get_console_output(context, instance)
        if isinstance(output, str):
            output = output.encode()
        if tail_length is not None:
            output = tail_log(output, tail_length)
        return output.decode("ascii", "replace")

    def _network_info(self, context, instance: dict) -> list:
        if self.network_api is None:
            return []
        return self.network_api.get_instance_nw_info(context, instance)
