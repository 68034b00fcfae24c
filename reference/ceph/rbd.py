"""RBD in small: block device images striped over RADOS objects.

A volume (cinder) or a disk (qemu through librbd) is an *image*: a run of bytes
of a fixed size, cut into objects of ``2**order`` bytes (4 MiB by default). The
layout is RBD's "format 2":

* ``rbd_directory``: the pool's list of images, in omap (``name_<name>`` -> id,
  ``id_<id>`` -> name);
* ``rbd_id.<name>``: the image's id (the name can change, the id cannot);
* ``rbd_header.<id>``: the header, in omap: ``size``, ``order``,
  ``object_prefix`` (``rbd_data.<id>``) and ``features``;
* ``rbd_data.<id>.<object number as 016x>``: the data objects, created only when
  written (an image is *thin*: a block never written is no object and reads as zeros).

Names follow the python ``rbd`` binding (``RBD().create``, ``Image.read``). Real
librbd keeps the header and directory consistent with object-class methods run
inside the OSD (``cls_rbd``) and adds clones, exclusive locks, the object map and
the journal; none of those are here. Omap values are plain strings here, not
Ceph's binary encoding.

Snapshots (``Image.create_snap``, ``list_snaps``, ``remove_snap``; what Cinder's
RBD driver makes of a volume snapshot) are kept as librbd keeps them in the
header's omap: ``snap_seq`` and one ``snapshot_<id>`` key per snapshot (its name
and size). Their data differs: Ceph's OSDs clone an object lazily, on the first
write after the snapshot (self-managed snapshots); here the snapshot copies the
image's written objects at once, to ``rbd_data.<id>.<number>@<snap id>``. A thin
image whose blocks were never written costs nothing either way. An image with
snapshots cannot be removed (``ImageHasSnapshots``), and
``Image(ioctx, name, snapshot=...)`` opens a snapshot read-only.
"""

from __future__ import annotations

import uuid

from novalab.reference.ceph import errors
from novalab.reference.ceph.rados import IoCtx

RBD_DIRECTORY = "rbd_directory"
DEFAULT_ORDER = 22                      # 2**22 bytes = 4 MiB objects
FEATURE_LAYERING = 1


class ImageNotFound(errors.ObjectNotFound):
    pass


class ImageExists(errors.ObjectExists):
    pass


class ImageHasSnapshots(errors.Error):
    code = "ENOTEMPTY"


class ReadOnlyImage(errors.Error):
    code = "EROFS"


class InvalidArgument(errors.InvalidArgumentError):
    pass


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not name or "/" in name or "@" in name:
        raise InvalidArgument(f"invalid image name {name!r}")


def _header_oid(image_id: str) -> str:
    return f"rbd_header.{image_id}"


def _id_oid(name: str) -> str:
    return f"rbd_id.{name}"


class RBD:
    """Image management on a pool (``rbd.RBD`` in the binding)."""

    def create(self, ioctx: IoCtx, name: str, size: int, order: int = DEFAULT_ORDER) -> None:
        """Create a thin image of ``size`` bytes; ``ImageExists`` if the name is taken."""
        _check_name(name)
        if not isinstance(size, int) or size < 0:
            raise InvalidArgument("size must be a non-negative integer")
        if not 12 <= order <= 26:
            raise InvalidArgument("order must be between 12 (4 KiB) and 26 (64 MiB)")
        image_id = uuid.uuid4().hex[:12]
        try:
            ioctx.create(_id_oid(name), image_id.encode())   # claims the name, atomically
        except errors.ObjectExists as exc:
            raise ImageExists(f"image '{name}' already exists") from exc
        try:
            ioctx.create(_header_oid(image_id))
            ioctx.set_omap(_header_oid(image_id), {
                "size": str(size), "order": str(order),
                "object_prefix": f"rbd_data.{image_id}", "features": str(FEATURE_LAYERING)})
            ioctx.set_omap(RBD_DIRECTORY, {f"name_{name}": image_id, f"id_{image_id}": name})
        except BaseException:
            for oid in (_header_oid(image_id), _id_oid(name)):
                _remove_quietly(ioctx, oid)
            raise

    def list(self, ioctx: IoCtx) -> list[str]:
        try:
            names, start = [], ""
            while True:
                values, more = ioctx.get_omap_vals(RBD_DIRECTORY, start, "name_")
                names.extend(key.removeprefix("name_") for key in values)
                if not more:
                    return names
                start = max(values)
        except errors.ObjectNotFound:
            return []

    def remove(self, ioctx: IoCtx, name: str) -> None:
        """Delete the image and its data; ``ImageNotFound`` if there is none.

        Data first, the directory entry last: an interrupted remove leaves an image
        still listed, and removing it again finishes the job.
        """
        _check_name(name)
        image_id = _lookup_id(ioctx, name)
        try:
            header, _ = ioctx.get_omap_vals(_header_oid(image_id))
        except errors.ObjectNotFound:
            header = {}
        if any(key.startswith(_SNAP_PREFIX) for key in header):
            raise ImageHasSnapshots(f"image '{name}' has snapshots: remove them first")
        if header:
            image = Image.__new__(Image)
            image._load(ioctx, name, image_id, header)
            for number in range(image.stat()["num_objs"]):
                _remove_quietly(ioctx, image._data_oid(number))
        _remove_quietly(ioctx, _header_oid(image_id))
        _remove_quietly(ioctx, _id_oid(name))
        try:
            ioctx.remove_omap_keys(RBD_DIRECTORY, [f"name_{name}", f"id_{image_id}"])
        except errors.ObjectNotFound:
            pass


_SNAP_PREFIX = "snapshot_"


def _lookup_id(ioctx: IoCtx, name: str) -> str:
    try:
        return ioctx.read(_id_oid(name)).decode()
    except errors.ObjectNotFound:
        pass
    try:
        values, _ = ioctx.get_omap_vals(RBD_DIRECTORY, prefix=f"name_{name}")
    except errors.ObjectNotFound:
        values = {}
    if f"name_{name}" in values:
        return values[f"name_{name}"]
    raise ImageNotFound(f"image '{name}' does not exist")


def _remove_quietly(ioctx: IoCtx, oid: str) -> None:
    try:
        ioctx.remove(oid)
    except errors.ObjectNotFound:
        pass


class Image:
    """An open image: byte-addressed reads and writes mapped onto its data objects."""

    def __init__(self, ioctx: IoCtx, name: str, snapshot: str | None = None):
        _check_name(name)
        try:
            image_id = ioctx.read(_id_oid(name)).decode()
            header, _ = ioctx.get_omap_vals(_header_oid(image_id))
        except errors.ObjectNotFound as exc:
            raise ImageNotFound(f"image '{name}' does not exist") from exc
        self._load(ioctx, name, image_id, header)
        if snapshot is not None:
            snap = self._find_snap(snapshot)
            self._snap_id, self._size = snap["id"], snap["size"]

    def _load(self, ioctx: IoCtx, name: str, image_id: str, header: dict) -> None:
        self.ioctx = ioctx
        self.name = name
        self.id = image_id
        self._size = int(header["size"])
        self.order = int(header["order"])
        self.object_size = 1 << self.order
        self.block_name_prefix = header["object_prefix"]
        self._snap_id = None  # the snapshot this handle reads, if any (read-only)

    def _data_oid(self, number: int, snap_id: int | None = None) -> str:
        snap_id = self._snap_id if snap_id is None else snap_id
        oid = f"{self.block_name_prefix}.{number:016x}"
        return oid if snap_id is None else f"{oid}@{snap_id}"

    # Snapshots --------------------------------------------------------------------------

    def list_snaps(self) -> list[dict]:
        """The image's snapshots, oldest first: ``{"id", "name", "size"}`` each."""
        values, _ = self.ioctx.get_omap_vals(_header_oid(self.id), prefix=_SNAP_PREFIX)
        snaps = []
        for key, value in sorted(values.items()):
            name, _, size = value.rpartition(",")
            snaps.append({"id": int(key.removeprefix(_SNAP_PREFIX), 16), "name": name,
                          "size": int(size)})
        return snaps

    def _find_snap(self, name: str) -> dict:
        for snap in self.list_snaps():
            if snap["name"] == name:
                return snap
        raise ImageNotFound(f"snapshot '{name}' of image '{self.name}' does not exist")

    def create_snap(self, name: str) -> None:
        """Snapshot the image as it is now; ``ImageExists`` if the name is taken."""
        self._check_writable()
        _check_name(name)
        if any(s["name"] == name for s in self.list_snaps()):
            raise ImageExists(f"snapshot '{name}' of image '{self.name}' already exists")
        header, _ = self.ioctx.get_omap_vals(_header_oid(self.id), prefix="snap_seq")
        snap_id = int(header.get("snap_seq", "0")) + 1
        self.ioctx.set_omap(_header_oid(self.id), {"snap_seq": str(snap_id)})
        for number in range(self.stat()["num_objs"]):
            try:
                data = self.ioctx.read(self._data_oid(number))
            except errors.ObjectNotFound:
                continue  # never written: reads as zeros in the snapshot too
            self.ioctx.write_full(self._data_oid(number, snap_id), data)
        # Recorded last: a snapshot that is listed has all its data.
        self.ioctx.set_omap(_header_oid(self.id),
                            {f"{_SNAP_PREFIX}{snap_id:016x}": f"{name},{self._size}"})

    def remove_snap(self, name: str) -> None:
        """Delete a snapshot and its data; ``ImageNotFound`` if there is none."""
        self._check_writable()
        snap = self._find_snap(name)
        self.ioctx.remove_omap_keys(_header_oid(self.id),
                                    [f"{_SNAP_PREFIX}{snap['id']:016x}"])
        for number in range(-(-snap["size"] // self.object_size)):
            _remove_quietly(self.ioctx, self._data_oid(number, snap["id"]))

    def _check_writable(self) -> None:
        if self._snap_id is not None:
            raise ReadOnlyImage(f"image '{self.name}' is open at a snapshot: read-only")

    def _extents(self, offset: int, length: int):
        """(object number, offset in object, length) for each object the range touches."""
        end = offset + length
        while offset < end:
            number, within = divmod(offset, self.object_size)
            count = min(self.object_size - within, end - offset)
            yield number, within, count
            offset += count

    def size(self) -> int:
        return self._size

    def stat(self) -> dict:
        return {"size": self._size, "obj_size": self.object_size,
                "num_objs": -(-self._size // self.object_size), "order": self.order,
                "block_name_prefix": self.block_name_prefix}

    def read(self, offset: int, length: int) -> bytes:
        """Bytes at ``offset``, clipped at the end of the image; unwritten blocks are zeros."""
        if offset < 0 or length < 0 or offset > self._size:
            raise InvalidArgument(f"read of {length} bytes at {offset} is outside the image")
        length = min(length, self._size - offset)
        parts = []
        for number, within, count in self._extents(offset, length):
            try:
                data = self.ioctx.read(self._data_oid(number), within, count)
            except errors.ObjectNotFound:
                data = b""
            parts.append(data.ljust(count, b"\0"))
        return b"".join(parts)

    def write(self, data: bytes, offset: int) -> int:
        """Write ``data`` at ``offset``; the range must lie inside the image."""
        self._check_writable()
        if offset < 0 or offset + len(data) > self._size:
            raise InvalidArgument(f"write of {len(data)} bytes at {offset} is outside the "
                                  f"image of {self._size} bytes")
        view = memoryview(data)
        done = 0
        for number, within, count in self._extents(offset, len(data)):
            self.ioctx.write(self._data_oid(number), bytes(view[done:done + count]), within)
            done += count
        return done

    def resize(self, size: int) -> None:
        """Grow (the new bytes read as zeros) or shrink (the cut data is discarded)."""
        self._check_writable()
        if not isinstance(size, int) or size < 0:
            raise InvalidArgument("size must be a non-negative integer")
        if size < self._size:
            keep = -(-size // self.object_size)
            for number in range(keep, self.stat()["num_objs"]):
                _remove_quietly(self.ioctx, self._data_oid(number))
            if size % self.object_size:
                try:
                    self.ioctx.trunc(self._data_oid(keep - 1), size % self.object_size)
                except errors.ObjectNotFound:
                    pass
        self.ioctx.set_omap(_header_oid(self.id), {"size": str(size)})
        self._size = size

    def close(self) -> None:
        """Nothing to release (librbd would drop its watch on the header)."""

    def __enter__(self) -> Image:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
