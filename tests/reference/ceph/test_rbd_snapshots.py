"""RBD snapshots on the cluster: the image as it was, kept in the header and in data objects."""

from __future__ import annotations

import uuid

import pytest

from novalab.reference.ceph import rbd

MiB = 1 << 20


@pytest.fixture
def ioctx(ceph):
    return ceph.rados.open_ioctx("volumes")


def test_a_snapshot_keeps_the_data_of_its_moment(ioctx):
    name = f"volume-{uuid.uuid4()}"
    rbd.RBD().create(ioctx, name, 10 * MiB)
    with rbd.Image(ioctx, name) as image:
        image.write(b"before", 5 * MiB)
        image.create_snap("snapshot-1")
        image.write(b"after!", 5 * MiB)
        assert [(s["id"], s["name"], s["size"]) for s in image.list_snaps()] == \
            [(1, "snapshot-1", 10 * MiB)]
        with pytest.raises(rbd.ImageExists):
            image.create_snap("snapshot-1")
    with rbd.Image(ioctx, name, snapshot="snapshot-1") as snap:
        assert snap.read(5 * MiB, 6) == b"before"
        assert snap.read(0, 4) == b"\0" * 4  # never written: zeros, and no object copied
        with pytest.raises(rbd.ReadOnlyImage):
            snap.write(b"x", 0)
    with rbd.Image(ioctx, name) as image:
        assert image.read(5 * MiB, 6) == b"after!"
        prefix = image.block_name_prefix
    assert sorted(o for o in ioctx.list_objects() if o.startswith(prefix)) == \
        [f"{prefix}.{1:016x}", f"{prefix}.{1:016x}@1"]
    with pytest.raises(rbd.ImageHasSnapshots):
        rbd.RBD().remove(ioctx, name)
    with rbd.Image(ioctx, name) as image:
        image.remove_snap("snapshot-1")
        assert image.list_snaps() == []
        with pytest.raises(rbd.ImageNotFound):
            image.remove_snap("snapshot-1")
    assert not [o for o in ioctx.list_objects() if o.endswith("@1")]
    rbd.RBD().remove(ioctx, name)
    assert name not in rbd.RBD().list(ioctx)
