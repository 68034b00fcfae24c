"""One libvirt domain, as Nova sees it (``nova/virt/libvirt/guest.py``).

``Guest`` wraps a ``virDomain`` so the driver speaks in verbs (create, launch,
poweroff) rather than libvirt calls, and maps libvirt's domain states onto
Nova's ``power_state`` values.

``Guest.create`` (define the domain: ``Host.write_instance_config`` ->
``defineXML``) and ``Guest.launch`` (start it: ``createWithFlags``) are spans
named after upstream's, so a boot's trace reads driver -> Guest -> libvirt as
upstream's code does. A guest made by ``create`` traces with its host's tracer.
"""

from __future__ import annotations

import contextlib

import libvirt

from novalab.reference.nova.compute import power_state
from novalab.tracing.spans import code_attributes

PATH = "nova/virt/libvirt/guest.py"

# libvirt's virDomainState -> Nova's power_state, as upstream.
LIBVIRT_POWER_STATE = {
    libvirt.VIR_DOMAIN_NOSTATE: power_state.NOSTATE,
    libvirt.VIR_DOMAIN_RUNNING: power_state.RUNNING,
    # BLOCKED (Xen only): running, with every vCPU idle.
    libvirt.VIR_DOMAIN_BLOCKED: power_state.RUNNING,
    libvirt.VIR_DOMAIN_PAUSED: power_state.PAUSED,
    # SHUTDOWN means "shutting down"; SHUTOFF is really off. Nova calls both SHUTDOWN.
    libvirt.VIR_DOMAIN_SHUTDOWN: power_state.SHUTDOWN,
    libvirt.VIR_DOMAIN_SHUTOFF: power_state.SHUTDOWN,
    libvirt.VIR_DOMAIN_CRASHED: power_state.CRASHED,
    libvirt.VIR_DOMAIN_PMSUSPENDED: power_state.SUSPENDED,
}


def _span(tracer, qualname: str):
    """An INTERNAL span standing for upstream ``qualname`` (nothing without a tracer)."""
    if tracer is None:
        return contextlib.nullcontext()
    return tracer.start_as_current_span(qualname, attributes=code_attributes(PATH, qualname))


class Guest:
    def __init__(self, domain, tracer=None):
        self._domain = domain
        self.tracer = tracer

    @property
    def uuid(self) -> str:
        return self._domain.UUIDString()

    @property
    def name(self) -> str:
        return self._domain.name()

    @classmethod
    def create(cls, xml: str, host) -> Guest:
        """Define a new guest from XML on ``host``; it exists but is not running yet."""
        with _span(host.tracer, "Guest.create"):
            guest = host.write_instance_config(xml)
        guest.tracer = host.tracer
        return guest

    def launch(self, pause: bool = False):
        """Start a defined guest (``virDomainCreateWithFlags``).

        Nova starts it paused when it must wait for Neutron's network-vif-plugged
        events before letting the guest run.
        """
        with _span(self.tracer, "Guest.launch"):
            return self._domain.createWithFlags(
                libvirt.VIR_DOMAIN_START_PAUSED if pause else 0)

    def resume(self) -> None:
        """Let a paused guest run (``virDomainResume``)."""
        self._domain.resume()

    def pause(self) -> None:
        """Freeze the guest's vCPUs in memory (``virDomainSuspend``; libvirt says PAUSED)."""
        self._domain.suspend()

    def save_memory_state(self) -> None:
        """Save the guest's memory to libvirt's managed-save file and stop it
        (``virDomainManagedSave``); the next ``launch`` restores it."""
        self._domain.managedSave(0)

    def get_xml_desc(self) -> str:
        """The live domain XML (``virDomainGetXMLDesc``)."""
        return self._domain.XMLDesc(0)

    def get_domain_info(self) -> list:
        """``virDomainGetInfo``: [state, max memory KiB, memory KiB, vCPUs, CPU time ns]."""
        return self._domain.info()

    def get_power_state(self, host) -> int:
        """The libvirt state mapped to a ``power_state`` value.

        ``host`` is unused here; upstream passes it for a libvirt compat workaround.
        """
        return LIBVIRT_POWER_STATE[self.get_domain_info()[0]]

    def is_active(self) -> bool:
        return bool(self._domain.isActive())

    def shutdown(self) -> None:
        """Ask the guest OS to shut down (``virDomainShutdown``, an ACPI power button)."""
        self._domain.shutdown()

    def poweroff(self) -> None:
        """Pull the plug (``virDomainDestroy``): the definition stays, the process goes."""
        self._domain.destroy()

    def delete_configuration(self) -> None:
        """Undefine the guest, removing any managed-save image and NVRAM with it.

        Drivers that refuse those flags (the test driver does) get a plain
        ``undefine()``, as upstream falls back for older libvirt.
        """
        try:
            self._domain.undefineFlags(libvirt.VIR_DOMAIN_UNDEFINE_MANAGED_SAVE
                                       | libvirt.VIR_DOMAIN_UNDEFINE_NVRAM)
        except (libvirt.libvirtError, AttributeError):
            if self._domain.hasManagedSaveImage(0):  # a suspended guest's saved memory
                self._domain.managedSaveRemove(0)
            self._domain.undefine()

    # Hot-plug: a volume attached to (or detached from) a defined guest ----------------------

    @staticmethod
    def _device_flags(persistent: bool, live: bool) -> int:
        flags = libvirt.VIR_DOMAIN_AFFECT_CONFIG if persistent else 0
        return flags | (libvirt.VIR_DOMAIN_AFFECT_LIVE if live else 0)

    def attach_device(self, conf, persistent: bool = False, live: bool = False) -> None:
        """Add a device (``virDomainAttachDeviceFlags``): ``persistent`` to the saved
        definition, ``live`` to the running guest."""
        with _span(self.tracer, "Guest.attach_device"):
            self._domain.attachDeviceFlags(conf.to_xml(),
                                           flags=self._device_flags(persistent, live))

    def detach_device(self, conf, persistent: bool = False, live: bool = False) -> None:
        """Remove a device (``virDomainDetachDeviceFlags``); upstream retries a live
        detach the guest has not acknowledged yet (``detach_device_with_retry``)."""
        with _span(self.tracer, "Guest.detach_device"):
            self._domain.detachDeviceFlags(conf.to_xml(),
                                           flags=self._device_flags(persistent, live))

    def get_persistent_xml(self) -> str:
        """The saved definition (``VIR_DOMAIN_XML_INACTIVE``): what the next start runs."""
        return self._domain.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE)
