"""An OSD on a nearly full disk refuses writes, not removals (issue 21, finding 14)."""

from __future__ import annotations

import shutil
import uuid

import pytest

from novalab.reference.ceph import errors
from novalab.reference.common import diskspace
from novalab.reference.common.diskspace import GiB


def nearly_full(monkeypatch) -> None:
    """The probe says 10 MiB of 100 GiB are free: inside every OSD's reserve (1 GiB)."""
    monkeypatch.setattr(diskspace, "disk_usage", lambda path: shutil._ntuple_diskusage(
        100 * GiB, 100 * GiB - 10 * 1024 ** 2, 10 * 1024 ** 2))


def test_a_full_osd_refuses_writes_but_frees_space_and_recovers(fresh_ceph, monkeypatch):
    io = fresh_ceph.rados.open_ioctx("volumes")
    kept, refused = f"kept-{uuid.uuid4().hex[:8]}", f"new-{uuid.uuid4().hex[:8]}"
    io.write_full(kept, b"before")
    nearly_full(monkeypatch)
    for write in (lambda: io.write_full(refused, b"x"), lambda: io.write(kept, b"y", 6),
                  lambda: io.set_omap(kept, {"k": "v"})):
        with pytest.raises(errors.NoSpace, match="full"):
            write()
    assert refused not in io.list_objects()
    assert io.read(kept) == b"before"        # reads go on
    io.remove(kept)                          # and removing is how space is freed
    monkeypatch.undo()
    io.write_full(refused, b"room again")
    assert io.read(refused) == b"room again"
