"""Filters and the weigher on hand-made host states."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from novalab.reference.common.db import utcnow
from novalab.reference.nova.scheduler.conf import FilterSchedulerConf
from novalab.reference.nova.scheduler.filters.compute_filter import ComputeFilter
from novalab.reference.nova.scheduler.filters.core_filter import CoreFilter
from novalab.reference.nova.scheduler.filters.disk_filter import DiskFilter
from novalab.reference.nova.scheduler.filters.image_props_filter import ImagePropertiesFilter
from novalab.reference.nova.scheduler.filters.ram_filter import RamFilter
from novalab.reference.nova.scheduler.host_manager import HostState, service_is_up
from novalab.reference.nova.scheduler.weights import get_weighed_objects, normalize
from novalab.reference.nova.scheduler.weights.ram import RAMWeigher


def host(name="h1", ram=1024, free_ram=1024, disk=10, free_disk=10, vcpus=2, used=0, **kw):
    return HostState(host=name, nodename=name, total_usable_ram_mb=ram, free_ram_mb=free_ram,
                     total_usable_disk_gb=disk, free_disk_gb=free_disk, vcpus_total=vcpus,
                     vcpus_used=used, num_instances=0, **kw)


def spec(ram=512, disk=1, vcpus=1, props=None):
    return {"flavor": {"memory_mb": ram, "root_gb": disk, "ephemeral_gb": 0, "vcpus": vcpus},
            "image": {"properties": props or {}}}


def test_ram_filter_counts_overcommit():
    assert RamFilter().host_passes(host(ram=1024, free_ram=0), spec(ram=512))  # 1.5 ratio
    assert not RamFilter().host_passes(host(ram=1024, free_ram=0), spec(ram=513))


def test_disk_and_core_filters():
    assert DiskFilter().host_passes(host(disk=10, free_disk=1), spec(disk=1))
    assert not DiskFilter().host_passes(host(disk=10, free_disk=0), spec(disk=1))
    assert CoreFilter().host_passes(host(vcpus=1, used=15), spec(vcpus=1))  # 16.0 ratio
    assert not CoreFilter().host_passes(host(vcpus=1, used=16), spec(vcpus=1))


def test_compute_filter_needs_live_enabled_service():
    assert ComputeFilter().host_passes(host(), spec())
    assert not ComputeFilter().host_passes(host(service_up=False), spec())
    assert not ComputeFilter().host_passes(host(service_disabled=True), spec())
    now = utcnow()
    assert service_is_up({"last_seen_up": now - timedelta(seconds=5)}, now)
    assert not service_is_up({"last_seen_up": now - timedelta(seconds=61)}, now)
    assert not service_is_up({"last_seen_up": now, "forced_down": True}, now)


def test_image_properties_filter():
    x86 = host(supported_instances=[["x86_64", "qemu", "hvm"], ["i686", "qemu", "hvm"]])
    f = ImagePropertiesFilter()
    assert f.host_passes(x86, spec())
    assert f.host_passes(x86, spec(props={"hw_architecture": "x86_64"}))
    assert f.host_passes(x86, spec(props={"hw_architecture": "i686", "img_hv_type": "qemu"}))
    assert not f.host_passes(x86, spec(props={"hw_architecture": "aarch64"}))
    assert not f.host_passes(x86, spec(props={"img_hv_type": "xen"}))


def test_ram_weigher_prefers_free_memory():
    """Free RAM normalised from 0 (RAMWeigher.minval) to the most free, best first."""
    hosts = [host("a", free_ram=100), host("b", free_ram=900), host("c", free_ram=450)]
    weighed = get_weighed_objects([RAMWeigher()], hosts, spec())
    assert [(w.obj.host, round(w.weight, 3)) for w in weighed] == \
        [("b", 1.0), ("c", 0.5), ("a", 0.111)]


def test_a_negative_ram_multiplier_stacks():
    conf = FilterSchedulerConf(path=Path("nova.conf"), ram_weight_multiplier=-2.0)
    hosts = [host("a", free_ram=100), host("b", free_ram=900), host("c", free_ram=450)]
    weighed = get_weighed_objects([RAMWeigher(conf)], hosts, spec())
    assert [(w.obj.host, round(w.weight, 3)) for w in weighed] == \
        [("a", -0.222), ("c", -1.0), ("b", -2.0)]


def test_weighing_one_host_or_equal_hosts():
    (only,) = get_weighed_objects([RAMWeigher()], [host("a", free_ram=5)], spec())
    assert only.weight == 0.0
    tied = get_weighed_objects([RAMWeigher()], [host("a"), host("b")], spec())
    assert [w.obj.host for w in tied] == ["a", "b"]  # stable: the first listed wins
    assert normalize([3, 3]) == [0.0, 0.0] and normalize([]) == []
