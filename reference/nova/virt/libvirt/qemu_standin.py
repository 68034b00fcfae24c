"""What QEMU does with a guest's Ceph disks as the domain starts, on a hypervisor without QEMU.

When libvirt starts a KVM guest whose disk is ``<disk type='network'><source
protocol='rbd' .../>``, QEMU's librbd connects to Ceph by itself: it reads the
cluster map from a monitor, then opens the RBD image on the OSD holding its
header. Nova does none of this; it only puts the disk in the domain XML.

libvirt's test hypervisor runs no QEMU, so nothing would ever touch the volume.
For ``test://`` URIs novalab attaches this stand-in to the libvirt connection:
inside the span of the call that starts the domain (``createWithFlags``), it
does exactly QEMU's two steps with novalab's librados/librbd. If the volume is
missing, the start fails as it would under QEMU.

Its spans are the hypervisor's, not nova-compute's: ``QemuRbdStandIn.on_host``
traces them as their own service, ``qemu-kvm`` on the compute host (the way
the guest's stand-in is traced as ``cloud-init``), so the trace, the flow
check (steps 49-51) and the call graph show QEMU, not Nova, talking to Ceph.
Each carries ``novalab.stand_in``: no real QEMU ran.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable

from opentelemetry import trace

from novalab.reference.ceph import auth as ceph_auth
from novalab.reference.ceph.auth import CephX
from novalab.reference.ceph.rados import Rados
from novalab.reference.ceph.rbd import Image
from novalab.tracing import attributes as attr

# The service.name of the hypervisor's spans: the QEMU/KVM process libvirt starts for a guest.
SERVICE = "qemu-kvm"
STAND_IN = "qemu (libvirt test hypervisor)"


def rbd_disks(domain_xml: str) -> list[dict]:
    """The rbd network disks of a domain: pool, image and monitor addresses."""
    disks = []
    for disk in ET.fromstring(domain_xml).iterfind("./devices/disk[@type='network']"):
        source = disk.find("source")
        if source is None or source.get("protocol") != "rbd":
            continue
        pool, _, image = source.get("name", "").partition("/")
        hosts = [f"{h.get('name')}:{h.get('port', '6789')}" for h in source.iterfind("host")]
        target = disk.find("target")
        disks.append({"pool": pool, "image": image, "monitors": hosts,
                      "target": target.get("dev") if target is not None else None})
    return disks


class QemuRbdStandIn:
    """Opens a starting domain's rbd disks as QEMU's librbd would.

    ``tracer`` makes its spans (and its librados calls'); ``on_host`` gives it
    the hypervisor's own.
    """

    def __init__(self, tracer, key: Callable[[], CephX] | None = None):
        self.tracer = tracer
        # The key libvirt's ceph secret holds for QEMU (auth.py), read when a disk opens:
        # a host whose guests have no rbd disk needs no keyring.
        self.key = key

    @classmethod
    def on_host(cls, w, host: str) -> QemuRbdStandIn:
        """The stand-in of ``host``'s hypervisor, traced as ``qemu-kvm`` on that host through
        the deployment's telemetry (``w.tracer``, one provider per service and host)."""
        return cls(w.tracer(SERVICE, host), lambda: ceph_auth.of(w.config.state_dir))

    def __call__(self, domain) -> None:
        for disk in rbd_disks(domain.XMLDesc(0)):
            self.open_disk(disk)

    def open_disk(self, disk: dict) -> None:
        with self.tracer.start_as_current_span(
                "qemu rbd open", kind=trace.SpanKind.INTERNAL,
                attributes={attr.NOVALAB_STAND_IN: STAND_IN,
                            attr.CEPH_POOL: disk["pool"], attr.CEPH_OBJECT: disk["image"],
                            attr.CODE_FUNCTION_NAME: "qemu.block.rbd.qemu_rbd_open",
                            attr.CODE_FILE_PATH: "block/rbd.c"}):
            auth = self.key() if self.key else None
            rados = Rados(disk["monitors"][0], self.tracer, auth=auth).connect()
            try:
                with Image(rados.open_ioctx(disk["pool"]), disk["image"]) as image:
                    image.size()  # the header, from its OSD
            finally:
                rados.shutdown()
