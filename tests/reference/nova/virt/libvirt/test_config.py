"""The LibvirtConfig* objects render the XML libvirt expects, and parse capabilities."""

import xml.etree.ElementTree as ET

import libvirt

from novalab.reference.nova.virt.libvirt import config as vconfig

NOVA = f"{{{vconfig.NOVA_NS}}}"


def _guest() -> vconfig.LibvirtConfigGuest:
    guest = vconfig.LibvirtConfigGuest(
        virt_type="kvm", name="instance-00000001",
        uuid="7e2f6d3a-1b4c-4d5e-8f90-a1b2c3d4e5f6", memory=512 * 1024, vcpus=2,
        os_arch="x86_64")
    guest.metadata.append(vconfig.LibvirtConfigGuestMetaNovaInstance(
        package="novalab 0.1.0", name="web-1", creation_time=0,
        flavor=vconfig.LibvirtConfigGuestMetaNovaFlavor(name="m1.small", memory=512, disk=1,
                                                        vcpus=2),
        owner=vconfig.LibvirtConfigGuestMetaNovaOwner(userid="u-1", projectid="p-1"),
        roottype="image", rootid="img-1"))
    guest.add_device(vconfig.LibvirtConfigGuestDisk(target_dev="vda",
                                                    source_path="/srv/i/disk"))
    guest.add_device(vconfig.LibvirtConfigGuestDisk(
        target_dev="vdb", source_type="network", source_protocol="rbd",
        source_name="volumes/volume-1", source_hosts=["10.0.0.1", "10.0.0.2"],
        source_ports=["6789", "6789"], auth_username="cinder", auth_secret_type="ceph",
        auth_secret_uuid="5e4d0c2a-0000-4000-8000-000000000001", serial="vol-1"))
    guest.add_device(vconfig.LibvirtConfigGuestInterface(
        mac_addr="fa:16:3e:11:22:33", source_dev="br-int", target_dev="tap0123456789a"))
    guest.add_device(vconfig.LibvirtConfigGuestSerial(log_file="/srv/i/console.log"))
    guest.add_device(vconfig.LibvirtConfigGuestConsole(target_type="serial", target_port=0))
    return guest


def test_domain_identity_sizing_and_platform():
    dom = ET.fromstring(_guest().to_xml())
    assert dom.tag == "domain" and dom.get("type") == "kvm"
    assert dom.findtext("name") == "instance-00000001"
    assert dom.findtext("uuid") == "7e2f6d3a-1b4c-4d5e-8f90-a1b2c3d4e5f6"
    assert dom.find("memory").get("unit") == "KiB" and dom.findtext("memory") == "524288"
    assert dom.findtext("vcpu") == "2"
    assert dom.find("os/type").text == "hvm" and dom.find("os/type").get("arch") == "x86_64"
    assert dom.find("os/boot").get("dev") == "hd"
    assert dom.find("features/acpi") is not None and dom.find("features/apic") is not None
    assert dom.find("clock").get("offset") == "utc"


def test_nova_metadata_is_namespaced_on_the_instance_element():
    xml = _guest().to_xml()
    assert f'<nova:instance xmlns:nova="{vconfig.NOVA_NS}">' in xml
    meta = ET.fromstring(xml).find(f"metadata/{NOVA}instance")
    assert meta.find(f"{NOVA}package").get("version") == "novalab 0.1.0"
    assert meta.findtext(f"{NOVA}name") == "web-1"
    assert meta.findtext(f"{NOVA}creationTime") == "1970-01-01 00:00:00"
    flavor = meta.find(f"{NOVA}flavor")
    assert flavor.get("name") == "m1.small"
    assert [flavor.findtext(f"{NOVA}{k}") for k in ("memory", "disk", "vcpus")] == [
        "512", "1", "2"]
    assert meta.find(f"{NOVA}owner/{NOVA}user").get("uuid") == "u-1"
    assert meta.find(f"{NOVA}owner/{NOVA}project").get("uuid") == "p-1"
    assert meta.find(f"{NOVA}root").attrib == {"type": "image", "uuid": "img-1"}


def test_devices_file_disk_rbd_disk_interface_and_consoles():
    devices = ET.fromstring(_guest().to_xml()).find("devices")
    local, volume = devices.findall("disk")
    assert local.get("type") == "file"
    assert local.find("source").get("file") == "/srv/i/disk"
    assert local.find("target").attrib == {"dev": "vda", "bus": "virtio"}

    assert volume.get("type") == "network"
    source = volume.find("source")
    assert source.attrib == {"protocol": "rbd", "name": "volumes/volume-1"}
    assert [h.attrib for h in source.findall("host")] == [
        {"name": "10.0.0.1", "port": "6789"}, {"name": "10.0.0.2", "port": "6789"}]
    assert volume.find("auth").get("username") == "cinder"
    assert volume.find("auth/secret").get("type") == "ceph"
    assert volume.find("target").get("dev") == "vdb"
    assert volume.findtext("serial") == "vol-1"

    vif = devices.find("interface")
    assert vif.get("type") == "bridge"
    assert vif.find("mac").get("address") == "fa:16:3e:11:22:33"
    assert vif.find("source").get("bridge") == "br-int"
    assert vif.find("model").get("type") == "virtio"
    assert vif.find("target").get("dev") == "tap0123456789a"

    assert devices.find("serial").get("type") == "pty"
    assert devices.find("serial/log").get("file") == "/srv/i/console.log"
    assert devices.find("console").get("type") == "pty"


def test_no_graphics_and_no_auth_without_secret():
    guest = _guest()
    guest.devices[1].auth_secret_type = None
    dom = ET.fromstring(guest.to_xml())
    assert dom.find("devices/graphics") is None
    assert dom.find("devices/disk/auth") is None


def test_caps_parse_the_test_driver_capabilities():
    conn = libvirt.open("test:///default")
    try:
        caps = vconfig.LibvirtConfigCaps.parse_str(conn.getCapabilities())
    finally:
        conn.close()
    assert caps.arch == "i686"
    assert caps.cells == 2
    assert {(g.arch, g.ostype) for g in caps.guests} == {("i686", "hvm"), ("i686", "xen")}
    assert all(g.domains == ["test"] for g in caps.guests)


def test_caps_parse_cpu_model_and_topology():
    caps = vconfig.LibvirtConfigCaps.parse_str(
        "<capabilities><host><cpu><arch>x86_64</arch><model>Skylake</model>"
        "<vendor>Intel</vendor><topology sockets='1' cores='4' threads='2'/>"
        "<feature name='vmx'/></cpu></host>"
        "<guest><os_type>hvm</os_type><arch name='x86_64'>"
        "<domain type='qemu'/><domain type='kvm'/></arch></guest></capabilities>")
    assert (caps.arch, caps.model, caps.vendor) == ("x86_64", "Skylake", "Intel")
    assert (caps.sockets, caps.cores, caps.threads) == (1, 4, 2)
    assert caps.features == ["vmx"]
    assert caps.guests[0].domains == ["qemu", "kvm"]
