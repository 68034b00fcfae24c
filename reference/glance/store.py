"""Image stores (``glance_store`` in small): put an image's bytes somewhere, get them back.

A store takes the bytes of an upload and returns where it put them (a location
URL) with the size and checksums Glance records: ``checksum`` (MD5, the legacy
field) and the multihash ``os_hash_algo``/``os_hash_value`` (SHA-512), which a
consumer such as nova-compute verifies after download.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from novalab.reference.common import exception

HASH_ALGO = "sha512"


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


class FileStore:
    """glance_store's ``file`` backend: one file per image under a directory."""

    scheme = "file"

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def add(self, image_id: str, data: bytes) -> Stored:
        path = self.root / image_id
        if path.exists():
            raise exception.Conflict(f"Image storage media is full or the image {image_id} "
                                     "already has data.")
        tmp = path.with_suffix(".part")
        tmp.write_bytes(data)
        tmp.replace(path)
        md5, sha512 = fingerprint(data)
        return Stored(path.as_uri(), len(data), md5, sha512)

    def get(self, location: str) -> bytes:
        path = Path(urlparse(location).path)
        try:
            return path.read_bytes()
        except FileNotFoundError as exc:
            raise exception.NotFound(f"Image data not found at {location}") from exc

    def delete(self, location: str) -> None:
        Path(urlparse(location).path).unlink(missing_ok=True)


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
        return f"{self.endpoint}/swift/v1/{self.container}/{image_id}"

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

    def add(self, image_id: str, data: bytes) -> Stored:
        self._ensure_container()
        md5, sha512 = fingerprint(data)
        response = self.http.put(self._url(image_id), content=data,
                                 headers={**self._headers(), "ETag": md5,
                                          "Content-Type": "application/octet-stream"})
        if response.status_code != 201:
            raise exception.NovaLabException(
                f"rgw refused image {image_id}: {response.status_code} {response.text[:200]}")
        return Stored(f"rgw://{self.container}/{image_id}", len(data), md5, sha512)

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
    return parsed.path.lstrip("/")
