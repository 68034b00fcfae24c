"""Image stores (``glance_store`` in small): put an image's bytes somewhere, get them back.

A store takes the bytes of an upload and returns where it put them (a location
URL) with the size and checksums Glance records: ``checksum`` (MD5, the legacy
field) and the multihash ``os_hash_algo``/``os_hash_value`` (SHA-512), which a
consumer such as nova-compute verifies after download.

An upload is *staged* first (:func:`stage`): read in chunks, hashed as it
streams, spooled to a temporary file past a few MiB, and cut off with a 413 the
moment it passes what the caller may store. A store then copies the staged
bytes. A store names an object only after the image's parsed UUID
(:func:`object_name`), never after a string a client sent, so no id can reach
another image's object (an id ``<victim>#x`` would have been ``<victim>`` in a
URL, and ``../x`` another file).
"""

from __future__ import annotations

import errno
import hashlib
import os
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO
from urllib.parse import quote, urlparse

from novalab.reference.common import exception
from novalab.reference.common.diskspace import Reserve

HASH_ALGO = "sha512"
CHUNK = 64 * 1024
SPOOL_IN_MEMORY = 4 * 1024 * 1024


class StorageFull(exception.NovaLabException):
    """glance_store's ``StorageFull``: the store has no room for the image (the API
    answers 413, "Image storage media is full")."""

    msg_fmt = "There is not enough disk space on the image storage media."
    code = 413


@dataclass(frozen=True)
class Stored:
    location: str
    size: int
    checksum: str
    os_hash_value: str


def fingerprint(data: bytes) -> tuple[str, str]:
    """(MD5 hex, SHA-512 hex) of ``data``: Glance's two image checksums."""
    return hashlib.md5(data, usedforsecurity=False).hexdigest(), \
        hashlib.new(HASH_ALGO, data).hexdigest()


def object_name(image_id) -> str:
    """The store's name for an image: its id parsed as a UUID, in canonical form.

    ``ValueError`` for anything that is not a UUID (a path, a URL fragment).
    """
    if isinstance(image_id, uuid.UUID):
        return str(image_id)
    if not isinstance(image_id, str) or len(image_id) != 36:
        raise ValueError(f"not an image id: {image_id!r}")
    return str(uuid.UUID(image_id))


@dataclass
class Staged:
    """An upload read to its end: where its bytes wait, its size and checksums."""

    file: BinaryIO
    size: int
    checksum: str
    os_hash_value: str

    def chunks(self) -> Iterator[bytes]:
        self.file.seek(0)
        while chunk := self.file.read(CHUNK):
            yield chunk

    def close(self) -> None:
        self.file.close()


def stage(data: bytes | Iterable[bytes], limit: int | None = None,
          too_big: Callable[[int], Exception] | None = None) -> Staged:
    """Read ``data`` (bytes or chunks) into a spooled file, hashing as it goes.

    Past ``limit`` bytes, reading stops and ``too_big(limit)`` is raised: an
    upload is never held whole in memory, nor read further than it may go.
    """
    chunks = [data] if isinstance(data, (bytes, bytearray)) else data
    md5 = hashlib.md5(usedforsecurity=False)
    sha = hashlib.new(HASH_ALGO)
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)
    size = 0
    try:
        for chunk in chunks:
            size += len(chunk)
            if limit is not None and size > limit:
                raise (too_big(limit) if too_big else
                       exception.Invalid(f"Image data is larger than {limit} bytes."))
            md5.update(chunk)
            sha.update(chunk)
            spool.write(chunk)
    except BaseException:
        spool.close()
        raise
    return Staged(spool, size, md5.hexdigest(), sha.hexdigest())


def _staged(data) -> Staged:
    return data if isinstance(data, Staged) else stage(data)


class FileStore:
    """glance_store's ``file`` backend: one file per image under a directory.

    It keeps ``reserve`` free on its disk: an image that would eat into it is
    refused before a byte is written, and a disk that fills anyway (ENOSPC) is
    the same :class:`StorageFull`, with the partial file removed.
    """

    scheme = "file"

    def __init__(self, root: str | os.PathLike, reserve: Reserve | None = None):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.reserve = reserve or Reserve()

    def add(self, image_id: str, data) -> Stored:
        name = object_name(image_id)
        path = self.root / name
        if path.exists():
            raise exception.Conflict(f"Image storage media is full or the image {name} "
                                     "already has data.")
        staged = _staged(data)
        if not self.reserve.allows(self.root, staged.size):
            raise StorageFull()
        tmp = path.with_suffix(".part")
        try:
            with tmp.open("wb") as out:
                for chunk in staged.chunks():
                    out.write(chunk)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise StorageFull() from exc
            raise
        tmp.replace(path)
        return Stored(path.as_uri(), staged.size, staged.checksum, staged.os_hash_value)

    def _path(self, location: str) -> Path:
        """The file of a ``file://`` location, only if it is one of this store's images."""
        path = Path(urlparse(location).path)
        if path.parent != self.root:
            raise exception.NotFound(f"Image data not found at {location}")
        return self.root / object_name(path.name)

    def get(self, location: str) -> bytes:
        try:
            return self._path(location).read_bytes()
        except (FileNotFoundError, ValueError) as exc:
            raise exception.NotFound(f"Image data not found at {location}") from exc

    def delete(self, location: str) -> None:
        try:
            self._path(location).unlink(missing_ok=True)
        except (ValueError, exception.NotFound):
            pass


class RgwStore:
    """Images as objects in the Ceph object gateway (glance_store's Swift backend on rgw).

    Glance uploads each image to container ``glance`` with its own service
    token; the location it records, ``rgw://glance/<image id>``, names the
    object, not a gateway: a consumer finds a gateway in the cluster map (as
    ``rbd://`` locations need the monitor) and reads the object there.
    """

    scheme = "rgw"
    container = "glance"

    def __init__(self, endpoint: str, http, token: Callable[[], str]):
        self.endpoint = endpoint.rstrip("/")
        self.http = http
        self.token = token
        self._container_ready = False

    def _url(self, image_id: str) -> str:
        return f"{self.endpoint}/swift/v1/{self.container}/{quote(object_name(image_id), safe='')}"

    def _headers(self) -> dict[str, str]:
        return {"X-Auth-Token": self.token()}

    def _ensure_container(self) -> None:
        if not self._container_ready:
            response = self.http.put(f"{self.endpoint}/swift/v1/{self.container}",
                                     headers=self._headers())
            if response.status_code not in (201, 202):
                raise exception.NovaLabException(
                    f"rgw refused container {self.container}: {response.status_code}")
            self._container_ready = True

    def add(self, image_id: str, data) -> Stored:
        name = object_name(image_id)
        self._ensure_container()
        staged = _staged(data)
        response = self.http.put(self._url(name), content=staged.chunks(),
                                 headers={**self._headers(), "ETag": staged.checksum,
                                          "Content-Length": str(staged.size),
                                          "Content-Type": "application/octet-stream"})
        if response.status_code in (413, 507):  # Swift's "no room" (a full cluster: 507)
            raise StorageFull()
        if response.status_code != 201:
            raise exception.NovaLabException(
                f"rgw refused image {name}: {response.status_code} {response.text[:200]}")
        return Stored(f"rgw://{self.container}/{name}", staged.size, staged.checksum,
                      staged.os_hash_value)

    def get(self, location: str) -> bytes:
        response = self.http.get(self._url(location_object(location)), headers=self._headers())
        if response.status_code == 404:
            raise exception.NotFound(f"Image data not found at {location}")
        if response.status_code != 200:
            raise exception.NovaLabException(f"rgw answered {response.status_code} for "
                                             f"{location}")
        return response.content

    def delete(self, location: str) -> None:
        response = self.http.delete(self._url(location_object(location)),
                                    headers=self._headers())
        if response.status_code not in (204, 404):
            raise exception.NovaLabException(f"rgw could not delete {location}: "
                                             f"{response.status_code}")


def location_object(location: str) -> str:
    """The object name of an ``rgw://<container>/<object>`` location."""
    parsed = urlparse(location)
    if parsed.scheme != "rgw":
        raise exception.Invalid(f"not an rgw location: {location}")
    try:
        return object_name(parsed.path.lstrip("/"))
    except ValueError as exc:
        raise exception.Invalid(f"not an image object: {location}") from exc
