"""A real boot projects onto all 58 steps, in causal order, over each broker."""

from __future__ import annotations

import pytest

from novalab.diagrams.check import check
from novalab.diagrams.flows import get_flow
from novalab.diagrams.load import load_trace
from novalab.reference.deploy.boot import BootRequest, boot


def _check(cloud):
    result = boot(cloud, BootRequest(name="vm-flow"))
    assert result.active, result.server
    report = check(load_trace(result.spans), get_flow())
    missing = [r.step.number for r in report.results if not r.matched]
    return report, missing


def test_memory_broker_58_of_58(cloud):
    report, missing = _check(cloud)
    assert missing == []
    assert report.summary == "58/58 steps matched, 0 out of order"  # and no warning
    # The hypervisor's own spans (qemu-kvm, QEMU's stand-in) open the volume on Ceph.
    for number in (49, 51):
        assert report.trace.parent(report.result(number).span).service == "qemu-kvm"


@pytest.mark.amqp
def test_rabbitmq_58_of_58(amqp_url, cloud_factory):
    report, missing = _check(cloud_factory(transport_url=amqp_url))
    assert missing == []
    assert report.summary == "58/58 steps matched, 0 out of order"


def test_a_second_boot_of_the_image_expects_no_download_and_a_bare_boot_no_volume(cloud):
    """What a boot implies comes from the build itself: the image is in the host's cache
    after the first boot, and a boot with no volume has no Cinder or rbd steps."""
    first = check(load_trace(boot(cloud, BootRequest(name="vm-first")).spans), get_flow())
    assert first.ok and first.expected == 58
    second = boot(cloud, BootRequest(name="vm-second", volume_size=None))
    assert second.active, second.server
    report = check(load_trace(second.spans), get_flow())
    excused = {r.step.number: r.excused for r in report.results if r.excused}
    assert set(excused) == {*range(19, 26), 39, 40, 41, 42, 48, 49, 50, 51}
    assert "already in the cache of compute-1" in excused[19]
    assert "mapped no volume" in excused[39]
    assert report.ok, [r.step.number for r in report.results if r.missing]
    assert report.summary == ("43/43 expected steps matched, 0 out of order "
                              "(15 of 58 not expected for this boot)")


def test_a_port_that_never_went_active_has_no_step_37(cloud):
    """Step 37 is the port saved ACTIVE. A boot whose binding failed never saves that:
    the rule's fallback (the last UPDATE of neutron_ports) must not take another write
    of the failing request for it (lab 10's port drill found that it did)."""
    from novalab.reference.common.faults import Faults

    Faults(cloud.config.state_dir).inject("port-binding")
    result = boot(cloud, BootRequest(name="vm-unbound"))
    assert result.server["status"] == "ERROR"
    report = check(load_trace(result.spans), get_flow())
    assert not report.result(37).matched
