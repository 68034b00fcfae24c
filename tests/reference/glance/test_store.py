"""Glance's file store on a nearly full disk (issue 21, finding 14)."""

from __future__ import annotations

import errno
import shutil
import uuid

import pytest

from novalab.reference.common import diskspace
from novalab.reference.common.diskspace import GiB
from novalab.reference.glance import store


def nearly_full(monkeypatch, free: int = 10 * 1024 ** 2) -> None:
    """The probe says 100 GiB with ``free`` left: under the reserve (1 GiB)."""
    monkeypatch.setattr(diskspace, "disk_usage", lambda path: shutil._ntuple_diskusage(
        100 * GiB, 100 * GiB - free, free))


def test_the_file_store_refuses_an_image_that_would_eat_the_reserve(tmp_path, monkeypatch):
    files = store.FileStore(tmp_path / "images")
    image_id = str(uuid.uuid4())
    nearly_full(monkeypatch)
    with pytest.raises(store.StorageFull):
        files.add(image_id, b"x" * 4096)
    assert list((tmp_path / "images").iterdir()) == []   # not a byte written
    monkeypatch.undo()
    stored = files.add(image_id, b"x" * 4096)             # room again: it is stored
    assert files.get(stored.location) == b"x" * 4096


def test_a_disk_that_fills_during_the_write_is_storage_full_and_leaves_nothing(
        tmp_path, monkeypatch):
    files = store.FileStore(tmp_path / "images")
    real_open = store.Path.open

    def full_open(path, mode="r", *args, **kwargs):
        handle = real_open(path, mode, *args, **kwargs)
        if "w" in mode:
            def write(_data):
                raise OSError(errno.ENOSPC, "No space left on device")
            handle.write = write
        return handle

    monkeypatch.setattr(store.Path, "open", full_open)
    with pytest.raises(store.StorageFull):
        files.add(str(uuid.uuid4()), b"x" * 4096)
    assert list((tmp_path / "images").iterdir()) == []
