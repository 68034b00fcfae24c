"""LibvirtDriver against libvirt's in-process ``test:///default`` hypervisor.

``test:///default`` is one state shared by every connection in the process:
each test uses fresh UUIDs and names and destroys what it spawned.
"""

import datetime
import json
import os
import uuid
import xml.etree.ElementTree as ET

import libvirt
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from novalab.reference.common import exception
from novalab.reference.nova.compute import power_state
from novalab.reference.nova.virt.libvirt.driver import LibvirtDriver
from novalab.reference.nova.virt.libvirt.host import Host

URI = "test:///default"


@pytest.fixture
def exporter():
    return InMemorySpanExporter()


@pytest.fixture
def tracer(exporter):
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("test")


@pytest.fixture
def drv(tracer, tmp_path):
    driver = LibvirtDriver(uri=URI, tracer=tracer, instances_path=tmp_path / "instances")
    driver.init_host("compute-1")
    spawned = []
    driver.spawned = spawned
    yield driver
    for instance in spawned:
        driver.destroy(None, instance)


def make_instance(**overrides):
    instance_uuid = str(uuid.uuid4())
    instance = {
        "uuid": instance_uuid, "name": f"instance-{instance_uuid[:8]}", "display_name": "web-1",
        "memory_mb": 64, "vcpus": 1, "root_gb": 1, "project_id": "p-1", "user_id": "u-1",
        "image_ref": str(uuid.uuid4()), "flavor_name": "m1.nano",
        "created_at": datetime.datetime(2025, 1, 2, 3, 4, 5),
    }
    instance.update(overrides)
    return instance


def spawn(drv, instance, **kwargs):
    drv.spawned.append(instance)
    drv.spawn(None, instance, {}, [], None, {}, **kwargs)


RBD_BDI = {"block_device_mapping": [{
    "mount_device": "/dev/vdb",
    "connection_info": {
        "driver_volume_type": "rbd", "serial": "vol-1",
        "data": {"name": "volumes/volume-1", "hosts": ["192.0.2.10"], "ports": ["6789"]},
    },
}]}
VIFS = [{"id": "0123456789abcdef", "address": "fa:16:3e:00:00:01",
         "network": {"bridge": "br-int"}}]


def test_spawn_runs_the_guest(drv, tmp_path):
    instance = make_instance()
    spawn(drv, instance)
    assert drv.get_info(instance).state == power_state.RUNNING
    assert drv.instance_exists(instance)
    assert instance["name"] in drv.list_instances()
    instance_dir = tmp_path / "instances" / instance["uuid"]
    assert (instance_dir / "console.log").exists()
    disk = instance_dir / "disk"
    assert disk.stat().st_size == 1024 ** 3
    assert disk.stat().st_blocks * 512 < disk.stat().st_size  # sparse


def test_spawn_keeps_the_domain_xml_beside_the_disk(drv, tmp_path):
    """libvirt.xml in the instance directory is the XML libvirt defined (classic Nova's
    ``write_to_disk``): what a learner reads instead of ``virsh dumpxml``."""
    instance = make_instance(vcpus=2, memory_mb=512)
    spawn(drv, instance, network_info=VIFS)
    kept = ET.parse(tmp_path / "instances" / instance["uuid"] / "libvirt.xml").getroot()
    assert kept.findtext("name") == instance["name"]
    assert kept.findtext("uuid") == instance["uuid"]
    assert kept.findtext("vcpu") == "2"
    assert (kept.find("memory").text, kept.find("memory").get("unit")) == ("524288", "KiB")
    drv.destroy(None, instance)
    drv.spawned.remove(instance)
    assert not (tmp_path / "instances" / instance["uuid"]).exists()


def test_guest_xml_as_libvirt_stored_it(drv):
    instance = make_instance()
    spawn(drv, instance, network_info=VIFS, block_device_info=RBD_BDI)
    conn = libvirt.open(URI)
    try:
        dom = ET.fromstring(conn.lookupByUUIDString(instance["uuid"]).XMLDesc())
    finally:
        conn.close()
    assert dom.get("type") == "test"
    assert dom.findtext("name") == instance["name"]
    assert dom.findtext("memory") == str(64 * 1024)
    disks = {d.find("target").get("dev"): d for d in dom.findall("devices/disk")}
    assert disks["vda"].get("type") == "file"
    assert disks["vdb"].get("type") == "network"
    assert disks["vdb"].find("source").attrib == {"protocol": "rbd", "name": "volumes/volume-1"}
    assert disks["vdb"].find("source/host").attrib == {"name": "192.0.2.10", "port": "6789"}
    vif = dom.find("devices/interface")
    assert vif.find("target").get("dev") == "tap0123456789a"
    assert vif.find("source").get("bridge") == "br-int"
    assert dom.find("devices/graphics") is None
    ns = "{http://openstack.org/xmlns/libvirt/nova/1.1}"
    meta = dom.find(f"metadata/{ns}instance")
    assert meta.findtext(f"{ns}creationTime") == "2025-01-02 03:04:05"
    assert meta.find(f"{ns}root").get("uuid") == instance["image_ref"]


def test_boot_from_volume_has_no_local_disk(drv, tmp_path):
    instance = make_instance()
    bdi = {"block_device_mapping": [dict(RBD_BDI["block_device_mapping"][0],
                                         mount_device="/dev/vda")]}
    xml = drv._get_guest_xml(None, instance, None, {}, block_device_info=bdi)
    disks = ET.fromstring(xml).findall("devices/disk")
    assert [(d.get("type"), d.find("target").get("dev")) for d in disks] == [("network", "vda")]


def test_spawn_spans(drv, exporter):
    instance = make_instance()
    exporter.clear()
    spawn(drv, instance)
    spans = exporter.get_finished_spans()
    by_name = {}
    for span in spans:
        by_name.setdefault(span.name, span)
    root = by_name["LibvirtDriver.spawn"]
    network = by_name["LibvirtDriver._create_domain_and_network"]
    create = by_name["LibvirtDriver._create_domain"]
    assert root.parent is None
    assert network.parent.span_id == root.context.span_id
    assert create.parent.span_id == network.context.span_id
    assert root.attributes["code.function.name"] == (
        "nova.virt.libvirt.driver.LibvirtDriver.spawn")
    assert root.attributes["nova.instance.uuid"] == instance["uuid"]
    assert "/tag/ussuri-eol/" in create.attributes["novalab.upstream.url"]

    def below(parent):
        return [s for s in spans if s.parent and s.parent.span_id == parent.context.span_id]

    # _create_domain > Guest.create > defineXML, then Guest.launch > createWithFlags, as
    # upstream's nova/virt/libvirt/guest.py.
    assert [s.name for s in below(create)] == ["Guest.create", "Guest.launch"]
    for guest_span, call in zip(below(create), ["defineXML", "createWithFlags"], strict=True):
        assert guest_span.kind == trace.SpanKind.INTERNAL
        assert guest_span.attributes["code.function.name"] == (
            f"nova.virt.libvirt.guest.{guest_span.name}")
        assert guest_span.attributes["novalab.upstream.url"] == (
            "https://opendev.org/openstack/nova/src/branch/master/nova/virt/libvirt/guest.py")
        (span,) = below(guest_span)
        assert span.name == f"libvirt.{call}"
        assert span.kind == trace.SpanKind.CLIENT
        assert span.attributes["rpc.system"] == "libvirt"
        assert span.attributes["server.address"] == URI
    assert {"LibvirtDriver._create_image", "LibvirtDriver._get_guest_xml",
            "LibvirtDriver.spawn.<locals>._wait_for_boot"} <= by_name.keys()


def test_destroy_removes_domain_and_files(drv, tmp_path):
    instance = make_instance()
    spawn(drv, instance)
    drv.destroy(None, instance)
    assert not drv.instance_exists(instance)
    assert instance["name"] not in drv.list_instances()
    assert not (tmp_path / "instances" / instance["uuid"]).exists()
    with pytest.raises(exception.InstanceNotFound):
        drv.get_info(instance)


def test_destroy_of_a_missing_instance_is_fine(drv):
    drv.destroy(None, make_instance())


def test_failed_define_cleans_up(drv, tmp_path):
    instance = make_instance()
    bad_vif = [dict(VIFS[0], address="not-a-mac")]
    with pytest.raises(libvirt.libvirtError):
        drv.spawn(None, instance, {}, [], None, {}, network_info=bad_vif)
    assert not drv.instance_exists(instance)
    assert not (tmp_path / "instances" / instance["uuid"]).exists()


def test_wait_for_boot_is_bounded(drv):
    instance = make_instance()
    drv.boot_poll_attempts = 0
    drv.spawned.append(instance)
    with pytest.raises(exception.InstanceDeployFailure):
        drv.spawn(None, instance, {}, [], None, {})


def test_available_resource(drv):
    before = drv.get_available_resource("compute-1")
    instance = make_instance(vcpus=2, memory_mb=128)
    spawn(drv, instance)
    res = drv.get_available_resource("compute-1")
    assert res["vcpus"] > 0 and res["memory_mb"] > 0 and res["local_gb"] > 0
    assert 0 <= res["local_gb_used"] <= res["local_gb"]
    assert res["vcpus_used"] == before["vcpus_used"] + 2
    assert res["memory_mb_used"] == before["memory_mb_used"] + 128
    assert res["hypervisor_type"] == "TEST"
    assert res["hypervisor_version"] > 0
    assert res["hypervisor_hostname"] == "compute-1"
    cpu = json.loads(res["cpu_info"])
    assert cpu["arch"] == "i686" and cpu["topology"]["sockets"] > 0
    assert ["i686", "test", "hvm"] in res["supported_instances"]


def test_bad_uri_is_hypervisor_unavailable(tracer, tmp_path):
    uri = "bogus:///nowhere"
    with pytest.raises(exception.HypervisorUnavailable, match="bogus:///nowhere"):
        Host(uri, tracer).get_connection()
    driver = LibvirtDriver(uri=uri, tracer=tracer, instances_path=os.fspath(tmp_path))
    with pytest.raises(exception.HypervisorUnavailable):
        driver.init_host("compute-1")
