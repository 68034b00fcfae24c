"""RBD images on the cluster: thin data objects, zeros where nothing was written."""

from __future__ import annotations

import uuid

import pytest

from novalab.reference.ceph import rbd

MiB = 1 << 20


@pytest.fixture
def ioctx(ceph):
    return ceph.rados.open_ioctx("volumes")


def image_name():
    return f"volume-{uuid.uuid4()}"


def data_objects(ioctx, image):
    return sorted(o for o in ioctx.list_objects() if o.startswith(image.block_name_prefix))


def test_create_list_open_remove(ioctx):
    name = image_name()
    rbd.RBD().create(ioctx, name, 10 * MiB)
    assert name in rbd.RBD().list(ioctx)
    with rbd.Image(ioctx, name) as image:
        assert image.size() == 10 * MiB
        assert image.stat()["obj_size"] == 4 * MiB and image.stat()["num_objs"] == 3
        image_id = image.id
    objects = ioctx.list_objects()
    assert f"rbd_id.{name}" in objects and f"rbd_header.{image_id}" in objects
    with pytest.raises(rbd.ImageExists):
        rbd.RBD().create(ioctx, name, MiB)
    rbd.RBD().remove(ioctx, name)
    assert name not in rbd.RBD().list(ioctx)
    assert not [o for o in ioctx.list_objects() if image_id in o or o == f"rbd_id.{name}"]
    with pytest.raises(rbd.ImageNotFound):
        rbd.Image(ioctx, name)
    with pytest.raises(rbd.ImageNotFound):
        rbd.RBD().remove(ioctx, name)


def test_images_are_thin_and_read_zeros_where_unwritten(ioctx):
    name = image_name()
    rbd.RBD().create(ioctx, name, 12 * MiB)
    image = rbd.Image(ioctx, name)
    assert data_objects(ioctx, image) == []
    assert image.read(5 * MiB, 16) == bytes(16)
    # A write straddling the first object boundary touches objects 0 and 1 only.
    image.write(b"A" * 10 + b"B" * 10, 4 * MiB - 10)
    assert data_objects(ioctx, image) == [f"{image.block_name_prefix}.{n:016x}" for n in (0, 1)]
    assert image.read(4 * MiB - 12, 24) == b"\0\0" + b"A" * 10 + b"B" * 10 + b"\0\0"
    # Objects store only what was written up to the write's end (sparse files).
    assert ioctx.stat(f"{image.block_name_prefix}.{1:016x}") == 10
    # Reads clip at the end of the image; writes past it are refused.
    assert image.read(12 * MiB - 4, 100) == bytes(4)
    with pytest.raises(rbd.InvalidArgument):
        image.write(b"x" * 8, 12 * MiB - 4)
    with pytest.raises(rbd.InvalidArgument):
        image.read(12 * MiB + 1, 1)
    rbd.RBD().remove(ioctx, name)
    assert data_objects(ioctx, image) == []


def test_resize_shrinks_data_and_grows_with_zeros(ioctx):
    name = image_name()
    rbd.RBD().create(ioctx, name, 12 * MiB)
    image = rbd.Image(ioctx, name)
    image.write(b"x" * MiB, 0)
    image.write(b"y" * MiB, 9 * MiB)          # object 2
    image.resize(MiB // 2)
    assert data_objects(ioctx, image) == [f"{image.block_name_prefix}.{0:016x}"]
    image.resize(12 * MiB)
    reopened = rbd.Image(ioctx, name)
    assert reopened.size() == 12 * MiB
    assert reopened.read(MiB // 2 - 2, 4) == b"xx\0\0"
    assert reopened.read(9 * MiB, 4) == bytes(4)
    rbd.RBD().remove(ioctx, name)


def test_bad_arguments(ioctx):
    for bad in ("", "a/b", "snap@1"):
        with pytest.raises(rbd.InvalidArgument):
            rbd.RBD().create(ioctx, bad, MiB)
    with pytest.raises(rbd.InvalidArgument):
        rbd.RBD().create(ioctx, image_name(), -1)
