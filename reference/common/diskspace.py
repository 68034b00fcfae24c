"""Room on a store's disk: refuse a write before the disk is full, not when it is.

A store that writes until the disk is full takes every service on that disk
down with it (their databases cannot write either). So each store keeps a
*reserve*: a write that would leave less free than the reserve is refused, as
Ceph's OSDs refuse writes at ``mon_osd_full_ratio`` (0.95: 5 % kept) and
Glance's file store answers "storage media is full". The reserve is the smaller
of a share of the disk and a fixed size (``CloudConfig.disk_reserve_ratio``,
``disk_reserve_bytes``), so a small disk keeps its 5 % and a large one no more
than it needs.

:func:`disk_usage` is the one probe every store asks; tests replace it to
report a nearly full disk without filling one.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

GiB = 1024 ** 3
RESERVE_RATIO = 0.05
RESERVE_BYTES = 1 * GiB


def disk_usage(path: str | os.PathLike):
    """(total, used, free) bytes of the filesystem holding ``path``."""
    return shutil.disk_usage(path)


@dataclass(frozen=True)
class Reserve:
    """What a store keeps free: ``ratio`` of the disk or ``size`` bytes, the smaller."""

    ratio: float = RESERVE_RATIO
    size: int = RESERVE_BYTES

    def of(self, total: int) -> int:
        return min(int(total * self.ratio), self.size)

    def room(self, path: str | os.PathLike) -> int:
        """Bytes a store may still write under ``path`` (negative: already too full)."""
        total, _used, free = disk_usage(path)
        return free - self.of(total)

    def allows(self, path: str | os.PathLike, incoming: int) -> bool:
        """May ``incoming`` more bytes be written under ``path``?"""
        return incoming <= self.room(path)
