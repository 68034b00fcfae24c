"""Libvirt XML as objects (``nova/virt/libvirt/config.py``).

Nova never writes domain XML by string formatting: the driver fills in
``LibvirtConfigGuest*`` objects and ``to_xml()`` renders them with an XML
library, so every element has one place that knows its shape. Upstream uses
lxml; the standard library's ``xml.etree`` is enough for the subset kept here.
``LibvirtConfigCaps`` goes the other way: it parses ``getCapabilities()``.

No ``<graphics>`` element is ever emitted: Nova only adds one for VNC/SPICE
consoles, and libvirt 9.0 rejects ``<graphics type='none'/>``.
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import ClassVar

NOVA_NS = "http://openstack.org/xmlns/libvirt/nova/1.1"


class LibvirtConfigObject:
    """Base: ``format_dom()`` builds an Element, ``to_xml()`` serialises it."""

    root_name: ClassVar[str] = ""
    ns_prefix: ClassVar[str | None] = None

    def _new_node(self, tag: str, /, **attrs) -> ET.Element:
        """An element (prefixed if namespaced) with the non-None ``attrs`` set."""
        if self.ns_prefix:
            tag = f"{self.ns_prefix}:{tag}"
        return ET.Element(tag, {k: str(v) for k, v in attrs.items() if v is not None})

    def _text_node(self, tag: str, value, /, **attrs) -> ET.Element:
        node = self._new_node(tag, **attrs)
        if value is not None:
            node.text = str(value)
        return node

    def format_dom(self) -> ET.Element:
        return self._new_node(self.root_name)

    def to_xml(self) -> str:
        root = self.format_dom()
        ET.indent(root)
        return ET.tostring(root, encoding="unicode")


# --- Nova's own metadata: who owns the guest and which flavor/image built it ---------------

class _NovaMeta(LibvirtConfigObject):
    # Like lxml's nsmap upstream: the prefix is declared once, on <nova:instance>.
    ns_prefix = "nova"


@dataclass
class LibvirtConfigGuestMetaNovaFlavor(_NovaMeta):
    root_name: ClassVar[str] = "flavor"
    name: str
    memory: int
    disk: int
    vcpus: int
    swap: int = 0
    ephemeral: int = 0

    def format_dom(self):
        meta = self._new_node("flavor", name=self.name)
        for key in ("memory", "disk", "swap", "ephemeral", "vcpus"):
            meta.append(self._text_node(key, getattr(self, key)))
        return meta


@dataclass
class LibvirtConfigGuestMetaNovaOwner(_NovaMeta):
    root_name: ClassVar[str] = "owner"
    userid: str
    projectid: str
    username: str | None = None
    projectname: str | None = None

    def format_dom(self):
        meta = super().format_dom()
        meta.append(self._text_node("user", self.username, uuid=self.userid))
        meta.append(self._text_node("project", self.projectname, uuid=self.projectid))
        return meta


@dataclass
class LibvirtConfigGuestMetaNovaInstance(_NovaMeta):
    """``<nova:instance>``: lets an operator map a libvirt domain back to Nova."""

    root_name: ClassVar[str] = "instance"
    package: str
    name: str
    creation_time: float
    flavor: LibvirtConfigGuestMetaNovaFlavor
    owner: LibvirtConfigGuestMetaNovaOwner
    roottype: str | None = None
    rootid: str | None = None

    def format_dom(self):
        meta = super().format_dom()
        meta.set("xmlns:nova", NOVA_NS)
        meta.append(self._new_node("package", version=self.package))
        meta.append(self._text_node("name", self.name))
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(self.creation_time))
        meta.append(self._text_node("creationTime", stamp))
        meta.append(self.flavor.format_dom())
        meta.append(self.owner.format_dom())
        if self.roottype and self.rootid:
            meta.append(self._new_node("root", type=self.roottype, uuid=self.rootid))
        return meta


# --- Devices ------------------------------------------------------------------------------

@dataclass
class LibvirtConfigGuestDisk(LibvirtConfigObject):
    """A ``<disk>``: a local file (``source_type="file"``) or a network volume (rbd).

    The auth fields stay empty until a Cinder connection_info says ``auth_enabled``:
    then libvirt reads the Ceph key from the libvirt secret ``auth_secret_uuid``.
    """

    root_name: ClassVar[str] = "disk"
    target_dev: str
    source_type: str = "file"
    source_device: str = "disk"
    target_bus: str = "virtio"
    driver_name: str = "qemu"
    driver_format: str = "raw"
    driver_cache: str | None = None
    source_path: str | None = None
    source_protocol: str | None = None
    source_name: str | None = None
    source_hosts: list[str] = field(default_factory=list)
    source_ports: list[str | None] = field(default_factory=list)
    auth_username: str | None = None
    auth_secret_type: str | None = None
    auth_secret_uuid: str | None = None
    serial: str | None = None

    def format_dom(self):
        dev = self._new_node("disk", type=self.source_type, device=self.source_device)
        dev.append(self._new_node("driver", name=self.driver_name, type=self.driver_format,
                                  cache=self.driver_cache))
        if self.source_type == "file":
            dev.append(self._new_node("source", file=self.source_path))
        elif self.source_type == "network":
            source = self._new_node("source", protocol=self.source_protocol,
                                    name=self.source_name)
            ports = self.source_ports or [None] * len(self.source_hosts)
            for host, port in zip(self.source_hosts, ports, strict=False):
                source.append(self._new_node("host", name=host, port=port))
            dev.append(source)
        if self.auth_secret_type is not None:
            auth = self._new_node("auth", username=self.auth_username)
            auth.append(self._new_node("secret", type=self.auth_secret_type,
                                       uuid=self.auth_secret_uuid))
            dev.append(auth)
        dev.append(self._new_node("target", dev=self.target_dev, bus=self.target_bus))
        if self.serial is not None:
            dev.append(self._text_node("serial", self.serial))
        return dev


@dataclass
class LibvirtConfigGuestInterface(LibvirtConfigObject):
    """A ``<interface type="bridge">``: the tap device libvirt plugs into a Linux bridge."""

    root_name: ClassVar[str] = "interface"
    mac_addr: str
    source_dev: str
    target_dev: str
    net_type: str = "bridge"
    model: str = "virtio"

    def format_dom(self):
        dev = self._new_node("interface", type=self.net_type)
        dev.append(self._new_node("mac", address=self.mac_addr))
        dev.append(self._new_node("model", type=self.model))
        dev.append(self._new_node("source", bridge=self.source_dev))
        dev.append(self._new_node("target", dev=self.target_dev))
        return dev


@dataclass
class LibvirtConfigGuestChar(LibvirtConfigObject):
    """A pty character device; ``log_file`` makes libvirt copy its output to a file."""

    type: str = "pty"
    target_type: str | None = None
    target_port: int | None = None
    log_file: str | None = None

    def format_dom(self):
        dev = self._new_node(self.root_name, type=self.type)
        if self.log_file:
            dev.append(self._new_node("log", file=self.log_file, append="off"))
        if self.target_type is not None or self.target_port is not None:
            dev.append(self._new_node("target", type=self.target_type, port=self.target_port))
        return dev


class LibvirtConfigGuestSerial(LibvirtConfigGuestChar):
    root_name = "serial"


class LibvirtConfigGuestConsole(LibvirtConfigGuestChar):
    root_name = "console"


# --- The guest ---------------------------------------------------------------------------

@dataclass
class LibvirtConfigGuest(LibvirtConfigObject):
    """The whole ``<domain>``: identity, sizing, metadata, firmware view and devices."""

    root_name: ClassVar[str] = "domain"
    virt_type: str
    name: str
    uuid: str
    memory: int  # KiB, as libvirt counts
    vcpus: int
    os_type: str = "hvm"
    os_arch: str | None = None
    os_boot_dev: list[str] = field(default_factory=lambda: ["hd"])
    features: list[str] = field(default_factory=lambda: ["acpi", "apic"])
    clock_offset: str = "utc"
    metadata: list[LibvirtConfigObject] = field(default_factory=list)
    devices: list[LibvirtConfigObject] = field(default_factory=list)

    def add_device(self, dev: LibvirtConfigObject) -> None:
        self.devices.append(dev)

    def format_dom(self):
        root = self._new_node("domain", type=self.virt_type)
        root.append(self._text_node("name", self.name))
        root.append(self._text_node("uuid", self.uuid))
        root.append(self._text_node("memory", self.memory, unit="KiB"))
        root.append(self._text_node("vcpu", self.vcpus))
        if self.metadata:
            meta = self._new_node("metadata")
            meta.extend([m.format_dom() for m in self.metadata])
            root.append(meta)
        os_node = self._new_node("os")
        os_node.append(self._text_node("type", self.os_type, arch=self.os_arch))
        os_node.extend([self._new_node("boot", dev=dev) for dev in self.os_boot_dev])
        root.append(os_node)
        feats = self._new_node("features")
        feats.extend([self._new_node(name) for name in self.features])
        root.append(feats)
        root.append(self._new_node("clock", offset=self.clock_offset))
        devices = self._new_node("devices")
        devices.extend([dev.format_dom() for dev in self.devices])
        root.append(devices)
        return root


# --- Host capabilities (parsed, not built) -----------------------------------------------

@dataclass
class LibvirtConfigCapsGuest:
    """One ``<guest>`` of the capabilities: an (arch, os type) and its domain types."""

    arch: str
    ostype: str
    domains: list[str]


@dataclass
class LibvirtConfigCaps:
    """What ``virConnect.getCapabilities()`` says about the host CPU and possible guests."""

    arch: str | None = None
    model: str | None = None
    vendor: str | None = None
    sockets: int | None = None
    cores: int | None = None
    threads: int | None = None
    cells: int = 1
    features: list[str] = field(default_factory=list)
    guests: list[LibvirtConfigCapsGuest] = field(default_factory=list)

    @classmethod
    def parse_str(cls, xmlstr: str) -> LibvirtConfigCaps:
        root = ET.fromstring(xmlstr)
        cpu = root.find("host/cpu")
        caps = cls(cells=len(root.findall("host/topology/cells/cell")) or 1)
        if cpu is not None:
            caps.arch = cpu.findtext("arch")
            caps.model = cpu.findtext("model")
            caps.vendor = cpu.findtext("vendor")
            caps.features = [f.get("name") for f in cpu.findall("feature")]
            topology = cpu.find("topology")
            if topology is not None:
                caps.sockets, caps.cores, caps.threads = (
                    int(topology.get(k)) for k in ("sockets", "cores", "threads"))
        for guest in root.findall("guest"):
            arch = guest.find("arch")
            caps.guests.append(LibvirtConfigCapsGuest(
                arch=arch.get("name"), ostype=guest.findtext("os_type"),
                domains=[d.get("type") for d in arch.findall("domain")]))
        return caps
