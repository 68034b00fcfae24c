"""Image fetch on the compute host: through Ceph's gateway, verified, cached per host."""

from __future__ import annotations

import hashlib

import pytest

from novalab.reference.common import exception
from novalab.reference.deploy.boot import BootRequest, boot
from novalab.reference.nova.virt.images import verify


def test_verify_checks_size_md5_and_multihash():
    data = b"image bytes"
    image = {"id": "i", "size": len(data), "checksum": hashlib.md5(data).hexdigest(),
             "os_hash_algo": "sha512", "os_hash_value": hashlib.sha512(data).hexdigest()}
    verify(image, data)
    with pytest.raises(exception.ImageUnacceptable, match="size"):
        verify(image, data + b"!")
    with pytest.raises(exception.ImageUnacceptable, match="checksum mismatch"):
        verify(dict(image, checksum="0" * 32), data)
    with pytest.raises(exception.ImageUnacceptable, match="sha512 multihash mismatch"):
        verify(dict(image, os_hash_value="0" * 128), data)


def test_boot_reads_the_image_from_the_object_gateway(cloud):
    result = boot(cloud, BootRequest(name="from-rgw"))
    assert result.active, result.server
    names = [s.name for s in result.spans]
    fetch = next(s for s in result.spans if s.name == "fetch")
    inside = [s for s in result.spans if s.parent and s.parent.span_id == fetch.context.span_id]
    download = next(s for s in inside if s.name == "rgw_download")
    assert "GlanceImageServiceV2.show" in [s.name for s in inside]
    below = [s for s in result.spans if s.parent and
             s.parent.span_id == download.context.span_id]
    assert "ceph.mon/get_cluster_map" in [s.name for s in below]
    assert any(s.resource.attributes["service.name"] == "ceph-osd" for s in result.spans)
    assert "ceph.osd/read" in names
    # the disk holds the image's bytes
    disk = cloud.computes[0].driver._get_instance_path({"uuid": result.server["id"]}) + "/disk"
    with open(disk, "rb") as handle:
        assert handle.read(512)[-2:] == b"\x55\xaa"


def test_second_boot_on_a_host_uses_the_cache(cloud):
    assert boot(cloud, BootRequest(name="first")).active
    second = boot(cloud, BootRequest(name="second"))
    assert second.active
    assert "fetch" not in [s.name for s in second.spans]
    assert "Image.cache" in [s.name for s in second.spans]


def test_corrupted_image_ends_in_error_naming_the_check(cloud):
    rados = cloud.computes[0].driver.image_fetcher.rados
    ioctx = rados.open_ioctx("default.rgw.buckets.data")
    oid = f"glance/{cloud.cirros['id']}"
    data = bytearray(ioctx.read(oid))
    data[1000] ^= 0xFF  # one flipped byte on the OSDs
    ioctx.write_full(oid, bytes(data))
    result = boot(cloud, BootRequest(name="corrupt"))
    assert result.server["status"] == "ERROR"
    assert "checksum mismatch" in result.server["fault"]["message"]
