"""A boot's volumes are attached and completed in _prep_block_device, before spawn."""

from __future__ import annotations

from novalab.reference.deploy.boot import BootRequest, boot


def _ancestors(span, by_id) -> list[str]:
    names = []
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        names.append(span.name)
    return names


def test_the_volume_is_in_use_before_the_guest_is_spawned(cloud):
    result = boot(cloud, BootRequest(name="with-a-volume"))
    assert result.active
    by_id = {s.context.span_id: s for s in result.spans}
    (complete,) = [s for s in result.spans if s.name == "API.attachment_complete"]
    (spawn,) = [s for s in result.spans if s.name == "LibvirtDriver.spawn"]
    # As upstream's DriverVolumeBlockDevice._volume_attach at boot time.
    assert "ComputeManager._prep_block_device" in _ancestors(complete, by_id)
    assert complete.end_time <= spawn.start_time
