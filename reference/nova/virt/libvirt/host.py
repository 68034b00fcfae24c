"""The libvirt connection of one compute host (``nova/virt/libvirt/host.py``).

``Host`` owns the single ``virConnect`` the driver uses and turns libvirt's
error codes into Nova exceptions, so the driver above never handles a raw
``libvirtError`` for "no such domain". Upstream also runs libvirt's event loop
here (lifecycle events); novalab polls instead.
"""

from __future__ import annotations

import threading

import libvirt
from opentelemetry import trace

from novalab.reference.common import exception
from novalab.reference.nova.virt.libvirt import config as vconfig
from novalab.reference.nova.virt.libvirt.guest import Guest
from novalab.tracing.libvirt import TracedConnection, client_span


class Host:
    def __init__(self, uri: str, tracer: trace.Tracer):
        self._uri = uri
        self.tracer = tracer
        self._conn = None
        self._lock = threading.Lock()
        self._caps: vconfig.LibvirtConfigCaps | None = None
        # Work the hypervisor does while a domain starts (see qemu_standin.py).
        self.on_domain_start = None

    @staticmethod
    def _libvirt_error_handler(context, err):
        # Just ignore instead of default outputting to stderr: errors still
        # reach us as libvirtError exceptions (and as ERROR spans).
        pass

    def get_connection(self) -> TracedConnection:
        """The connection, opened on first use (once, even with concurrent callers).

        Upstream registers the error handler before the first libvirt call and
        raises ``HypervisorUnavailable`` when the daemon cannot be reached.
        """
        if self._conn is None:
            with self._lock:
                if self._conn is None:
                    libvirt.registerErrorHandler(self._libvirt_error_handler, None)
                    try:
                        with client_span(self.tracer, "open", self._uri):
                            conn = libvirt.open(self._uri)
                    except libvirt.libvirtError as ex:
                        raise exception.HypervisorUnavailable(host=self._uri) from ex
                    self._conn = TracedConnection(conn, self.tracer, self._uri,
                                                  on_domain_start=self.on_domain_start)
        return self._conn

    def write_instance_config(self, xml: str) -> Guest:
        """Define (persist, without starting) a domain: ``virDomainDefineXML``."""
        return Guest(self.get_connection().defineXML(xml))

    def get_guest(self, instance: dict) -> Guest:
        """The guest whose libvirt UUID is the instance's UUID (Nova sets them equal)."""
        try:
            return Guest(self.get_connection().lookupByUUIDString(instance["uuid"]))
        except libvirt.libvirtError as ex:
            if ex.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                raise exception.InstanceNotFound(instance_id=instance["uuid"]) from ex
            raise

    def list_guests(self, only_running: bool = False) -> list[Guest]:
        """All defined domains (or only the active ones)."""
        flags = libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE if only_running else 0
        return [Guest(dom) for dom in self.get_connection().listAllDomains(flags)]

    def get_capabilities(self) -> vconfig.LibvirtConfigCaps:
        """Parsed ``getCapabilities()``: host CPU and the (arch, domain type)s offered.

        Read once and kept, as upstream's ``Host._caps``: a host's capabilities do
        not change while nova-compute runs.
        """
        if self._caps is None:
            self._caps = vconfig.LibvirtConfigCaps.parse_str(
                self.get_connection().getCapabilities())
        return self._caps

    def ensure_bridge_network(self, network_id: str, bridge: str) -> None:
        """Make sure the bridge of a Neutron network exists on this host.

        os-vif's linux bridge plugin creates ``brq<network>`` when a port is
        plugged and it is missing. Without root novalab has no kernel bridges;
        as the L2 agent does, the bridge is a libvirt network ``neutron-<id>``
        (UUID = the network id) forwarding onto it.
        """
        conn = self.get_connection()
        name = f"neutron-{network_id}"
        try:
            network = conn.networkLookupByName(name)
        except libvirt.libvirtError as ex:
            if ex.get_error_code() != libvirt.VIR_ERR_NO_NETWORK:
                raise
            xml = (f"<network><name>{name}</name><uuid>{network_id}</uuid>"
                   f"<forward mode='bridge'/><bridge name='{bridge}'/></network>")
            try:
                network = conn.networkDefineXML(xml)
            except libvirt.libvirtError:
                network = conn.networkLookupByName(name)  # the L2 agent defined it first
        if not network.isActive():
            try:
                network.create()
            except libvirt.libvirtError:
                if not network.isActive():
                    raise

    def get_node_info(self) -> list:
        """``virNodeGetInfo``: [arch, memory MiB, cpus, MHz, nodes, sockets, cores, threads]."""
        return self.get_connection().getInfo()
