"""The reserve every store keeps free on its disk (issue 21, finding 14)."""

from __future__ import annotations

import shutil

from novalab.reference.common import diskspace
from novalab.reference.common.diskspace import GiB, Reserve
from novalab.reference.common.wiring import CloudConfig

MiB = 1024 ** 2


def report(monkeypatch, total: int, free: int) -> None:
    monkeypatch.setattr(diskspace, "disk_usage",
                        lambda path: shutil._ntuple_diskusage(total, total - free, free))


def test_the_reserve_is_the_smaller_of_a_share_and_a_size():
    reserve = CloudConfig().disk_reserve
    assert reserve.of(10 * GiB) == 10 * GiB // 20      # a small disk keeps its 5 %
    assert reserve.of(1000 * GiB) == GiB               # a large one no more than 1 GiB
    assert CloudConfig(disk_reserve_ratio=0.1, disk_reserve_bytes=0).disk_reserve.of(GiB) == 0


def test_a_write_is_allowed_only_while_the_reserve_stays_free(monkeypatch, tmp_path):
    report(monkeypatch, total=100 * GiB, free=GiB + 10 * MiB)
    reserve = Reserve()
    assert reserve.room(tmp_path) == 10 * MiB
    assert reserve.allows(tmp_path, 10 * MiB)
    assert not reserve.allows(tmp_path, 10 * MiB + 1)
    report(monkeypatch, total=100 * GiB, free=GiB // 2)
    assert not reserve.allows(tmp_path, 0)  # already inside the reserve: nothing more
