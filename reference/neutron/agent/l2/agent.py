"""neutron-l2-agent: plug a bound port on its host, then report it up.

Modelled on the Linux bridge agent (``linuxbridge_neutron_agent.py``, removed
from upstream after Xena, and its still-present loop in
``neutron/plugins/ml2/drivers/agent/_common_agent.py``). The server casts
``port_update`` to ``q-agent-notifier-port-update.<host>``; the agent then

1. calls ``get_device_details`` on ``q-plugin`` (the server moves the port to BUILD),
2. wires the port: the Linux bridge agent would create the bridge
   ``brq<network id>`` and enslave the tap ``tap<port id>`` with ``ip link``; novalab
   has no root and no real bridges, so the same intent goes to the host's
   libvirt: a libvirt network ``neutron-<network id>`` (``<forward mode='bridge'>``
   onto ``brq…``, UUID = the neutron network id) is defined and started if
   missing (``networkDefineXML``, ``networkCreate``), and the port is recorded on
   it as a ``<portgroup>`` named after its tap device (``networkUpdate``),
3. calls ``update_device_up``, which lifts the port's L2 provisioning block.

Before step 1, as upstream's loop calls ``setup_port_filters`` before it treats
the devices, the security group agent (``agent/securitygroups_rpc.py``) asks the
server ``security_group_info_for_devices`` and its firewall driver writes the
port's chains (a stand-in: computed and kept in memory, shown on the span of
``IptablesFirewallDriver.prepare_port_filter``). Rule and member changes come on
``q-agent-notifier-security_group-update.<host>`` and refresh those filters.

Upstream queues updated devices and handles them in a polling loop every two
seconds, once their tap exists on the host; novalab handles each in the RPC
handler, waiting there for the guest's tap to appear, so the wiring stays in
the trace of the port update that asked for it. ``port_delete`` removes the
record.
"""

from __future__ import annotations

import logging
import threading
import time
import xml.etree.ElementTree as ET

import libvirt
from opentelemetry import trace

from novalab.reference.common.context import RequestContext, get_admin_context
from novalab.reference.neutron import constants
from novalab.reference.neutron.agent.linux.iptables_firewall import IptablesFirewallDriver
from novalab.reference.neutron.agent.rpc import PluginApi, SecurityGroupServerRpcApi
from novalab.reference.neutron.agent.securitygroups_rpc import SecurityGroupAgentRpc
from novalab.tracing import attributes as attr
from novalab.tracing.libvirt import TracedConnection, client_span
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)

LB_AGENT = "neutron/plugins/ml2/drivers/linuxbridge/agent/linuxbridge_neutron_agent.py"
COMMON_AGENT = "neutron/plugins/ml2/drivers/agent/_common_agent.py"
LB_REF = "xena-eol"
AFFECT = libvirt.VIR_NETWORK_UPDATE_AFFECT_LIVE | libvirt.VIR_NETWORK_UPDATE_AFFECT_CONFIG

# One hypervisor may serve several agents of one process (test:///default): serialise
# the check-then-define of a network so two agents never both define it.
_DEFINE_LOCK = threading.Lock()


def libvirt_network_name(network_id: str) -> str:
    return f"neutron-{network_id}"


def network_xml(network_id: str) -> str:
    root = ET.Element("network")
    ET.SubElement(root, "name").text = libvirt_network_name(network_id)
    ET.SubElement(root, "uuid").text = network_id
    ET.SubElement(root, "forward", mode="bridge")
    ET.SubElement(root, "bridge", name=constants.bridge_name(network_id))
    return ET.tostring(root, encoding="unicode")


class LibvirtBridgeManager:
    """What ``LinuxBridgeManager`` does with ``ip link``, done through libvirt's network API."""

    def __init__(self, uri: str, tracer):
        self.uri = uri
        self.tracer = tracer
        self._conn: TracedConnection | None = None
        self._lock = threading.Lock()
        self.defined: set[str] = set()  # networks this agent created
        self.stopping = threading.Event()

    def _libvirt_error_handler(self, _ctx, _err):
        pass  # errors still arrive as libvirtError (and ERROR spans)

    @property
    def conn(self) -> TracedConnection:
        with self._lock:
            if self._conn is None:
                libvirt.registerErrorHandler(self._libvirt_error_handler, None)
                with client_span(self.tracer, "open", self.uri):
                    raw = libvirt.open(self.uri)
                self._conn = TracedConnection(raw, self.tracer, self.uri)
            return self._conn

    def _network_call(self, network, method: str, *args):
        """A ``virNetwork`` call as a CLIENT span (tracing/libvirt.py wraps only domains)."""
        with client_span(self.tracer, method, self.uri):
            return getattr(network, {"networkCreate": "create", "networkUpdate": "update",
                                     "networkGetXMLDesc": "XMLDesc",
                                     "networkIsActive": "isActive",
                                     "networkDestroy": "destroy",
                                     "networkUndefine": "undefine"}[method])(*args)

    @property
    def sees_guests(self) -> bool:
        """False on a private test hypervisor (a ``test:///<file>`` URI gives every
        connection its own state, so the compute host's guests are invisible here)."""
        return not (self.uri.startswith("test:///") and self.uri != "test:///default")

    def device_exists(self, tap_name: str) -> bool:
        """Is a guest interface with this tap on the host? (Untraced: it is polled.)"""
        raw = self.conn._target
        for domain in raw.listAllDomains(0):
            try:
                root = ET.fromstring(domain.XMLDesc(0))
            except libvirt.libvirtError:
                continue  # destroyed since it was listed (another guest's delete)
            if root.find(f"./devices/interface/target[@dev='{tap_name}']") is not None:
                return True
        return False

    def wait_for_device(self, tap_name: str, timeout: float = 60.0,
                        cancelled: threading.Event | None = None) -> bool:
        """Wait until the tap exists, as the agent's loop notices new devices.

        Upstream's loop scans the host for new taps every two seconds; novalab
        looks for this one port's tap more often (from 10 ms, backing off to
        50 ms), so a boot is not slowed by the scan period. (With a 200 ms cap, a
        tap could sit unseen for up to 200 ms on the path to network-vif-plugged;
        Nova's wait for it over 8 whole-cast boots went from a median of 64 ms
        to 43 ms with this cap.) Only then is the port wired and
        reported up, so Nova hears network-vif-plugged after its guest exists.
        The wait ends early when the agent stops or ``cancelled`` is set (the port
        was deleted: its tap will never come).
        """
        if not self.sees_guests:
            return True
        deadline = time.monotonic() + timeout
        delay = 0.01
        while time.monotonic() < deadline:
            if self.device_exists(tap_name):
                return True
            if (cancelled or self.stopping).wait(delay) or self.stopping.is_set():
                return False  # deleted, or the agent is stopping: give up at once
            delay = min(delay * 1.5, 0.05)
        return False

    def stop(self) -> None:
        """Interrupt any wait for a device (the agent is shutting down)."""
        self.stopping.set()

    @upstream(LB_AGENT, "LinuxBridgeManager.ensure_bridge", ref=LB_REF)
    def ensure_bridge(self, network_id: str):
        """The network's bridge exists and is up: define and start it if needed."""
        name = libvirt_network_name(network_id)
        with _DEFINE_LOCK:
            try:
                network = self.conn.networkLookupByName(name)
            except libvirt.libvirtError as ex:
                if ex.get_error_code() != libvirt.VIR_ERR_NO_NETWORK:
                    raise
                network = self.conn.networkDefineXML(network_xml(network_id))
                self.defined.add(network_id)
            if not self._network_call(network, "networkIsActive"):
                self._network_call(network, "networkCreate")
        return network

    @upstream(LB_AGENT, "LinuxBridgeManager.plug_interface", ref=LB_REF)
    def plug_interface(self, network_id: str, tap_name: str) -> None:
        network = self.ensure_bridge(network_id)
        if tap_name not in self._portgroups(network):
            self._network_call(network, "networkUpdate",
                               libvirt.VIR_NETWORK_UPDATE_COMMAND_ADD_LAST,
                               libvirt.VIR_NETWORK_SECTION_PORTGROUP, -1,
                               f"<portgroup name='{tap_name}'/>", AFFECT)

    @upstream(LB_AGENT, "LinuxBridgeManager.remove_interface", ref=LB_REF)
    def remove_interface(self, network_id: str, tap_name: str) -> bool:
        try:
            network = self.conn.networkLookupByName(libvirt_network_name(network_id))
        except libvirt.libvirtError:
            return False
        if tap_name not in self._portgroups(network):
            return False
        self._network_call(network, "networkUpdate", libvirt.VIR_NETWORK_UPDATE_COMMAND_DELETE,
                           libvirt.VIR_NETWORK_SECTION_PORTGROUP, -1,
                           f"<portgroup name='{tap_name}'/>", AFFECT)
        return True

    def _portgroups(self, network) -> set[str]:
        root = ET.fromstring(self._network_call(network, "networkGetXMLDesc", 0))
        return {pg.get("name") for pg in root.findall("portgroup")}

    def plugged(self, network_id: str) -> set[str]:
        """The tap devices recorded on a network (what a test or a learner can check)."""
        try:
            network = self.conn.networkLookupByName(libvirt_network_name(network_id))
        except libvirt.libvirtError:
            return set()
        return self._portgroups(network)

    def cleanup(self) -> None:
        """Destroy and undefine the networks this agent defined (test hypervisors only)."""
        for network_id in sorted(self.defined):
            try:
                network = self.conn.networkLookupByName(libvirt_network_name(network_id))
                if self._network_call(network, "networkIsActive"):
                    self._network_call(network, "networkDestroy")
                self._network_call(network, "networkUndefine")
            except libvirt.libvirtError:
                LOG.debug("network %s already gone", network_id)
        self.defined.clear()


class L2Agent:
    """The RPC endpoint on ``q-agent-notifier-port-update.<host>`` (and ``-port-delete``,
    ``-security_group-update``)."""

    def __init__(self, host: str, manager: LibvirtBridgeManager, plugin_rpc: PluginApi, tracer,
                 sg_plugin_rpc: SecurityGroupServerRpcApi | None = None):
        self.host = host
        self.agent_id = f"lb-{host}"
        self.mgr = manager
        self.plugin_rpc = plugin_rpc
        self.tracer = tracer
        self.devices: dict[str, str] = {}  # port id -> network id, as plugged here
        self._lock = threading.Lock()
        # Ports whose tap is being waited for, and the event a port_delete sets.
        self._waiting: dict[str, threading.Event] = {}
        self.firewall = IptablesFirewallDriver(tracer)
        self.sg_agent = SecurityGroupAgentRpc(sg_plugin_rpc, self.firewall, tracer) \
            if sg_plugin_rpc is not None else None

    @upstream(LB_AGENT, "LinuxBridgeRpcCallbacks.port_update", ref=LB_REF)
    def port_update(self, context: RequestContext, port: dict, network_type: str | None = None,
                    segmentation_id: int | None = None,
                    physical_network: str | None = None) -> None:
        self.treat_devices_added_updated([port["id"]])

    @upstream(COMMON_AGENT, "CommonAgentLoop.treat_devices_added_updated")
    def treat_devices_added_updated(self, devices: list[str]) -> None:
        for device in devices:
            self._process_device_if_exists(device)

    @upstream(COMMON_AGENT, "CommonAgentLoop._process_device_if_exists")
    def _process_device_if_exists(self, device: str) -> None:
        context = get_admin_context()
        span = trace.get_current_span()
        started = time.monotonic()
        deleted = self._waiting.setdefault(device, threading.Event())
        try:
            appeared = self.mgr.wait_for_device(constants.tap_name(device), cancelled=deleted)
        finally:
            self._waiting.pop(device, None)
        if deleted.is_set():
            span.add_event("port deleted while waiting for its device",
                           {attr.NEUTRON_PORT_ID: device})
            return
        if not appeared:
            LOG.warning("Device %s did not appear on %s; not reporting it up", device, self.host)
            span.add_event("device did not appear", {attr.NEUTRON_PORT_ID: device})
            return
        span.add_event("device appeared", {attr.NEUTRON_PORT_ID: device,
                                           attr.NOVALAB_WAITED_S: time.monotonic() - started})
        if self.sg_agent is not None:  # setup_port_filters: new, or updated (refresh)
            if device in self.firewall.ports:
                self.sg_agent.refresh_firewall([device])
            else:
                self.sg_agent.prepare_devices_filter([device])
        details = self.plugin_rpc.get_device_details(context, device, self.agent_id, self.host)
        if "port_id" not in details:
            LOG.info("Device %s not defined on plugin or binding failed", device)
            if self.sg_agent is not None:
                self.sg_agent.remove_devices_filter([device])
            return
        tap = constants.tap_name(details["port_id"])
        if not details["admin_state_up"]:
            if self.mgr.remove_interface(details["network_id"], tap):
                self.devices.pop(device, None)
            self.plugin_rpc.update_device_down(context, device, self.agent_id, self.host)
            return
        with self._lock:
            self.mgr.plug_interface(details["network_id"], tap)
            self.devices[device] = details["network_id"]
        self.plugin_rpc.update_device_up(context, device, self.agent_id, self.host)

    @upstream(COMMON_AGENT, "CommonAgentLoop.treat_devices_removed")
    def port_delete(self, context: RequestContext, port_id: str,
                    network_id: str | None = None) -> None:
        waiting = self._waiting.get(port_id)
        if waiting is not None:
            waiting.set()  # its tap will never come: stop waiting for it
        with self._lock:
            network_id = self.devices.pop(port_id, network_id)
            if network_id:
                self.mgr.remove_interface(network_id, constants.tap_name(port_id))
        if self.sg_agent is not None:
            self.sg_agent.remove_devices_filter([port_id])

    # SecurityGroupAgentRpcCallbackMixin: casts on q-agent-notifier-security_group-update.

    @upstream("neutron/api/rpc/handlers/securitygroups_rpc.py",
              "SecurityGroupAgentRpcCallbackMixin.security_groups_rule_updated")
    def security_groups_rule_updated(self, context: RequestContext,
                                     security_groups: list[str]) -> None:
        if self.sg_agent is not None:
            self.sg_agent.security_groups_rule_updated(security_groups)

    @upstream("neutron/api/rpc/handlers/securitygroups_rpc.py",
              "SecurityGroupAgentRpcCallbackMixin.security_groups_member_updated")
    def security_groups_member_updated(self, context: RequestContext,
                                       security_groups: list[str]) -> None:
        if self.sg_agent is not None:
            self.sg_agent.security_groups_member_updated(security_groups)


def agent_state(host: str) -> dict:
    return {"binary": "neutron-l2-agent", "host": host, "topic": "N/A",
            "agent_type": constants.AGENT_TYPE_L2,
            "configurations": {"interface_driver": "libvirt-network",
                               "bridge_mappings": {}}}
