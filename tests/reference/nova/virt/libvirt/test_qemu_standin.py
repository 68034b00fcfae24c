"""The QEMU stand-in traces as the hypervisor (``qemu-kvm``), not as nova-compute."""

from __future__ import annotations

import socket

import pytest

from novalab.reference.ceph import auth
from novalab.reference.ceph.errors import ConnectionFailed
from novalab.reference.common.wiring import CloudConfig, Wiring
from novalab.reference.nova.virt.libvirt.qemu_standin import QemuRbdStandIn, rbd_disks
from novalab.tracing.setup import Telemetry


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_its_spans_are_the_hypervisors_of_its_host(tmp_path):
    """Its own span and its librados calls carry service.name qemu-kvm and the compute
    host's name (no monitor listens here, so the open fails as QEMU's would)."""
    telemetry = Telemetry(memory=True, otlp=False)
    auth.of(tmp_path, create=True)  # the host holds the cluster's keyring
    standin = QemuRbdStandIn.on_host(Wiring(CloudConfig(state_dir=tmp_path), telemetry),
                                     "compute-1")
    disk = {"pool": "volumes", "image": "volume-1", "target": "vdb",
            "monitors": [f"127.0.0.1:{_closed_port()}"]}
    with pytest.raises(ConnectionFailed):
        standin.open_disk(disk)
    telemetry.force_flush()
    spans = {span.name: span for span in telemetry.finished_spans()}
    assert set(spans) == {"qemu rbd open", "ceph.mon/get_cluster_map"}
    for span in spans.values():
        assert span.resource.attributes["service.name"] == "qemu-kvm"
        assert span.resource.attributes["host.name"] == "compute-1"
    opened = spans["qemu rbd open"]
    assert opened.attributes["novalab.stand_in"] == "qemu (libvirt test hypervisor)"
    assert (opened.attributes["ceph.pool"], opened.attributes["ceph.object"]) == \
        ("volumes", "volume-1")
    assert spans["ceph.mon/get_cluster_map"].parent.span_id == opened.context.span_id
    assert "qemu-kvm" in telemetry.services and "nova-compute" not in telemetry.services


def test_rbd_disks_of_a_domain():
    xml = ("<domain><devices><disk type='file'><source file='/x'/></disk>"
           "<disk type='network'><source protocol='rbd' name='volumes/volume-1'>"
           "<host name='192.0.2.10' port='6789'/></source><target dev='vdb'/></disk>"
           "</devices></domain>")
    assert rbd_disks(xml) == [{"pool": "volumes", "image": "volume-1",
                               "monitors": ["192.0.2.10:6789"], "target": "vdb"}]
