"""Directories and files only their owner may read.

A deployment's state dir holds its database, secrets and traces, and a trace
holds what identifies a guest to the metadata service; on a machine shared by
a class, every other user would read them with the usual umask (0755 and
0644). So novalab makes its state dirs 0700 and its trace files 0600 from the
start (an ``open`` with the mode, never a ``chmod`` after the file was
readable), and tightens those an older novalab made.
"""

from __future__ import annotations

import os
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def _tighten(path: Path, mode: int) -> None:
    """Take group and other bits off ``path`` if it is ours (a shared dir is left be)."""
    stat = path.stat()
    if stat.st_uid == os.getuid() and stat.st_mode & 0o077:
        path.chmod(stat.st_mode & 0o777 & mode)


def private_dir(path: str | os.PathLike) -> Path:
    """``path`` as a directory only its owner may enter (parents made as usual)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    _tighten(path, DIR_MODE)
    return path


def open_private(path: str | os.PathLike, mode: str = "a"):
    """``open(path, mode)`` of a text file only its owner may read (``a`` or ``w``)."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if mode == "a" else os.O_TRUNC)
    fd = os.open(path, flags, FILE_MODE)
    if os.fstat(fd).st_mode & 0o077:  # made by an older novalab
        os.fchmod(fd, FILE_MODE)
    return os.fdopen(fd, mode, encoding="utf-8")


def write_private(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` atomically to a file only its owner may read."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open_private(tmp, "w") as out:
        out.write(text)
    tmp.replace(path)
    return path
