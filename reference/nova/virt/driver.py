"""The contract between nova-compute and a hypervisor (``nova/virt/driver.py``).

``ComputeManager`` never talks to a hypervisor itself: it calls these methods
on whichever ``ComputeDriver`` the host is configured with (libvirt, Ironic,
VMware...). Each method is a seam where the manager's bookkeeping (DB,
placement, notifications) hands over to the real work on the host.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass


@dataclass(frozen=True)
class InstanceInfo:
    """What the hypervisor reports about one guest (``nova/virt/hardware.py``).

    ``state`` is a ``nova.compute.power_state`` value; ``internal_id`` is the
    hypervisor's own id for the guest, if it has one.
    """

    state: int
    internal_id: int | None = None


class ComputeDriver(abc.ABC):
    """Base class for hypervisor drivers; ``instance`` is a dict row with ``uuid`` and ``name``."""

    @abc.abstractmethod
    def init_host(self, host: str) -> None:
        """Prepare the hypervisor when nova-compute starts, before any instance work."""

    @abc.abstractmethod
    def get_available_resource(self, nodename: str) -> dict:
        """Report the node's capacity and usage.

        The resource tracker calls this at start-up and periodically, then writes
        the result to the compute node record and placement inventory.
        """

    @abc.abstractmethod
    def spawn(self, context, instance: dict, image_meta: dict, injected_files: list,
              admin_password: str | None, allocations: dict, network_info=None,
              block_device_info=None) -> None:
        """Create and boot a new guest.

        By the time the manager calls this, Neutron ports exist (``network_info``)
        and Cinder volumes are attached on the Cinder side (``block_device_info``);
        the driver builds disks, defines the guest and starts it.
        """

    @abc.abstractmethod
    def destroy(self, context, instance: dict, network_info=None,
                block_device_info=None) -> None:
        """Power off and remove the guest and its local files.

        Must succeed when the guest is already gone: deletes are retried.
        """

    @abc.abstractmethod
    def get_info(self, instance: dict) -> InstanceInfo:
        """The guest's current power state, as the hypervisor sees it.

        Raises ``InstanceNotFound`` if the hypervisor has no such guest.
        """

    @abc.abstractmethod
    def list_instances(self) -> list[str]:
        """Names of every guest the hypervisor knows, running or not."""

    def snapshot(self, context, instance: dict, image_id: str, update_task_state) -> None:
        """Copy the guest's root disk into the (queued) image ``image_id``.

        ``update_task_state(task_state=..., expected_state=...)`` saves each step
        (``image_pending_upload``, ``image_uploading``) through the manager.
        """
        raise NotImplementedError()

    def power_off(self, instance: dict, timeout: int = 0, retry_interval: int = 0) -> None:
        """Stop the guest: ask it to shut down for up to ``timeout`` s, then pull the plug."""
        raise NotImplementedError()

    def power_on(self, context, instance: dict, network_info, block_device_info=None) -> None:
        """Start a stopped guest again."""
        raise NotImplementedError()

    def instance_exists(self, instance: dict) -> bool:
        """Whether the hypervisor knows this guest; drivers may check more cheaply."""
        return instance["name"] in self.list_instances()
