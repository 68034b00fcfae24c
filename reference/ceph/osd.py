"""ceph-osd: an object storage daemon, keeping objects as files and copies on its peers.

Each OSD stores the objects of the placement groups CRUSH gives it, one file per
object under ``<data_dir>/osd.<id>/<pool>/<pg hex>/<escaped object name>`` (the
object's bytes, nothing else), with optional side files: ``@xattr`` (its
extended attributes, JSON), ``@omap`` (its key/value map, JSON) and ``@name``
(the full name, when a long one had to be hashed into the file name). That is
FileStore in small; today's BlueStore writes to a raw device and keeps metadata
in RocksDB, committing data and metadata in one transaction.

**Ops** (over :mod:`msgr`; each names ``pool`` and ``oid`` and the client's map
``epoch``): ``write_full``, ``write`` (at an offset), ``truncate``, ``remove``,
``read`` (``offset``/``length``, optionally the xattrs), ``stat``,
``omap_set``, ``omap_get``, ``omap_rm``, ``list`` (one PG, like Ceph's ``pgls``),
and ``replica_write`` between OSDs.

**Only the primary answers.** The OSD computes the object's PG and up set from its
own map (first fetching a newer map from the monitor if the client's ``epoch``
is ahead) and answers ``ESTALE`` when it is not the primary: the client then
refreshes its map and resends.

**Replication.** The primary applies a mutation under the PG's lock, then sends
it as ``replica_write`` to every other OSD of the up set, and acknowledges only
when all have applied it, so an acknowledged write is on every up copy. A
replica that cannot be reached is reported down to the monitor (as OSDs report
failed heartbeats) and the write completes degraded.

**Full.** An OSD keeps a reserve free on its disk (``CloudConfig.disk_reserve``,
standing for ``mon_osd_full_ratio``): a write that would eat into it is refused
with ``ENOSPC`` (``rados.NoSpace``) on the primary and on every replica, while
reads, truncates and removals go on, being how space is freed. Upstream the
monitor sets the cluster's ``full`` flag from the OSDs' reports and clients pause
their writes; here the OSD answers at once, so a caller sees why.

Left out: PG peering, the PG log and recovery/backfill (an OSD that was down
misses the writes made meanwhile, and a PG that CRUSH moves to a new OSD starts
empty there), scrubbing, snapshots, object classes, CephX. An OSD reads and writes
under its PG lock, one op per PG at a time, as real OSDs order ops per PG.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import uuid
from pathlib import Path
from urllib.parse import quote, unquote

from opentelemetry import trace

from novalab.reference.ceph import crush, errors, msgr
from novalab.reference.ceph.auth import CephX
from novalab.reference.ceph.mon import MonClient
from novalab.reference.common.diskspace import Reserve
from novalab.tracing import attributes as attr

LOG = logging.getLogger(__name__)

MUTATIONS = ("write_full", "write", "truncate", "remove", "omap_set", "omap_rm")
GROWING = ("write_full", "write", "omap_set")   # refused when the OSD is full
MAX_OBJECT_NAME = 2048   # osd_max_object_name_len
MAX_FILE_NAME = 200      # longer escaped names are hashed (FileStore's "long file names")
OMAP_MAX_RETURN = 1000


# The object store: files in PG directories --------------------------------------------

def object_filename(oid: str) -> str:
    """A file name for ``oid``: percent-escaped, so '/' and '@' never appear in it.

    An escaped name too long for the file system becomes its first 100 characters,
    ``%L`` (never produced by escaping) and a SHA-256 of the name; the full name is
    kept in the ``@name`` side file, as FileStore kept it in an xattr.
    """
    if not isinstance(oid, str) or not oid:
        raise errors.InvalidArgumentError("an object name ('oid') is required")
    if len(oid.encode()) > MAX_OBJECT_NAME:
        raise errors.NameTooLong(f"object names are at most {MAX_OBJECT_NAME} bytes")
    name = quote(oid, safe="")
    if set(name) == {"."}:          # "." and ".." are directory entries, not files
        name = name.replace(".", "%2E")
    if len(name) > MAX_FILE_NAME:
        name = f"{name[:100]}%L{hashlib.sha256(oid.encode()).hexdigest()}"
    return name


class FileStore:
    """One OSD's objects on disk. Callers hold the PG lock; every write is atomic."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def pg_dir(self, pool: dict, pg: int) -> Path:
        return self.root / quote(pool["name"], safe="") / f"{pg:x}"

    def path(self, pg_dir: Path, oid: str, side: str = "") -> Path:
        return pg_dir / (object_filename(oid) + (f"@{side}" if side else ""))

    @staticmethod
    def _atomic_write(path: Path, data: bytes) -> Path:
        """Write ``data`` to a temporary file next to ``path``; return it, ready to rename."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}@tmp.{uuid.uuid4().hex}")
        with open(tmp, "wb") as f:
            f.write(data)
        return tmp

    def _replace_data(self, pg_dir: Path, oid: str, tmp: Path) -> None:
        """Make ``tmp`` the object's data file (recording a hashed name's full name)."""
        path = self.path(pg_dir, oid)
        if "%L" in path.name and not self.path(pg_dir, oid, "name").exists():
            os.replace(self._atomic_write(self.path(pg_dir, oid, "name"), oid.encode()),
                       self.path(pg_dir, oid, "name"))
        os.replace(tmp, path)

    def exists(self, pg_dir: Path, oid: str) -> bool:
        return self.path(pg_dir, oid).is_file()

    def _require(self, pg_dir: Path, oid: str) -> Path:
        path = self.path(pg_dir, oid)
        if not path.is_file():
            raise errors.ObjectNotFound(f"object '{oid}' does not exist")
        return path

    def write_full(self, pg_dir: Path, oid: str, data: bytes, xattrs: dict | None = None):
        path = self.path(pg_dir, oid)
        tmp_data = self._atomic_write(path, data)
        if xattrs is not None:
            os.replace(self._atomic_write(self.path(pg_dir, oid, "xattr"),
                                          json.dumps(xattrs).encode()),
                       self.path(pg_dir, oid, "xattr"))
        self._replace_data(pg_dir, oid, tmp_data)

    def write(self, pg_dir: Path, oid: str, data: bytes, offset: int) -> None:
        """Write at ``offset`` (a gap reads as zeros), copy-modify-rename."""
        path = self.path(pg_dir, oid)
        current = bytearray(path.read_bytes()) if path.is_file() else bytearray()
        if len(current) < offset:
            current.extend(bytes(offset - len(current)))
        current[offset:offset + len(data)] = data
        self._replace_data(pg_dir, oid, self._atomic_write(path, bytes(current)))

    def truncate(self, pg_dir: Path, oid: str, size: int) -> None:
        path = self._require(pg_dir, oid)
        data = path.read_bytes()
        data = data[:size] if len(data) >= size else data + bytes(size - len(data))
        os.replace(self._atomic_write(path, data), path)

    def remove(self, pg_dir: Path, oid: str) -> bool:
        existed = self.exists(pg_dir, oid)
        for side in ("", "xattr", "omap", "name"):
            self.path(pg_dir, oid, side).unlink(missing_ok=True)
        return existed

    def read(self, pg_dir: Path, oid: str, offset: int, length: int | None) -> bytes:
        with open(self._require(pg_dir, oid), "rb") as f:
            f.seek(offset)
            return f.read() if length is None else f.read(length)

    def stat(self, pg_dir: Path, oid: str) -> dict:
        st = self._require(pg_dir, oid).stat()
        return {"size": st.st_size, "mtime": st.st_mtime}

    def _side(self, pg_dir: Path, oid: str, side: str) -> dict:
        path = self.path(pg_dir, oid, side)
        return json.loads(path.read_bytes()) if path.is_file() else {}

    def xattrs(self, pg_dir: Path, oid: str) -> dict:
        return self._side(pg_dir, oid, "xattr")

    def omap(self, pg_dir: Path, oid: str) -> dict:
        self._require(pg_dir, oid)
        return self._side(pg_dir, oid, "omap")

    def omap_update(self, pg_dir: Path, oid: str, set_vals: dict | None = None,
                    rm_keys: list | None = None) -> None:
        """Set and remove keys; setting keys on a missing object creates it, as in Ceph."""
        path = self.path(pg_dir, oid)
        if not path.is_file():
            if not set_vals:
                return
            self._replace_data(pg_dir, oid, self._atomic_write(path, b""))
        values = self._side(pg_dir, oid, "omap")
        values.update(set_vals or {})
        for key in rm_keys or ():
            values.pop(key, None)
        side = self.path(pg_dir, oid, "omap")
        os.replace(self._atomic_write(side, json.dumps(values, sort_keys=True).encode()), side)

    def list(self, pg_dir: Path) -> list[str]:
        if not pg_dir.is_dir():
            return []
        names = []
        for entry in pg_dir.iterdir():
            if "@" in entry.name or not entry.is_file():
                continue
            if "%L" in entry.name:
                names.append((pg_dir / f"{entry.name}@name").read_bytes().decode())
            else:
                names.append(unquote(entry.name))
        return sorted(names)


# The daemon ----------------------------------------------------------------------------

def _int_arg(args: dict, key: str, default: int | None = None) -> int | None:
    value = args.get(key, default)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise errors.InvalidArgumentError(f"'{key}' must be a non-negative integer")
    return value


class OSD:
    """``ceph-osd`` number ``osd_id``: its store, its map, its msgr server and peers."""

    def __init__(self, osd_id: int, data_dir: Path, mon_address: str, tracer: trace.Tracer, *,
                 host: str = "127.0.0.1", port: int = 0, weight: float = 1.0,
                 timeout: float = 30.0, reserve: Reserve | None = None,
                 auth: CephX | None):
        self.id = osd_id
        self.name = f"osd.{osd_id}"
        self.tracer = tracer
        self.weight = weight
        self.root = Path(data_dir) / self.name
        self.store = FileStore(self.root)
        self.reserve = reserve or Reserve()  # what the disk keeps free (the full ratio)
        self.mon = MonClient(mon_address, tracer, timeout=timeout, auth=auth)
        self.peers = msgr.ConnectionPool(tracer, rpc_service="osd", peer_service="ceph-osd",
                                         timeout=timeout, auth=auth)
        self._map: dict = {"epoch": 0, "osds": [], "pools": []}
        self._map_lock = threading.Lock()
        self._pg_locks: dict[tuple[int, int], threading.Lock] = {}
        self._pg_locks_lock = threading.Lock()
        self._server = msgr.Server(self, rpc_service="osd", tracer=tracer, host=host,
                                   port=port, name=self.name, auth=auth)

    @property
    def address(self) -> str:
        return self._server.address

    @property
    def epoch(self) -> int:
        return self._map["epoch"]

    # Life cycle ---------------------------------------------------------------------------

    def start(self) -> OSD:
        """Check the data dir belongs to this cluster, listen, then boot into the map."""
        try:
            self._check_data_dir(self.mon.get_cluster_map()["fsid"])
            self._server.start()
            self._map = self.mon.osd_boot(self.id, self.address, self.weight)
        except BaseException:
            self._server.stop()
            self.mon.close()
            raise
        LOG.info("%s up on %s at epoch %d", self.name, self.address, self.epoch)
        return self

    def _check_data_dir(self, fsid: str) -> None:
        """Like ``ceph-osd``, refuse a data directory made for another cluster or OSD."""
        self.root.mkdir(parents=True, exist_ok=True)
        for filename, expected in (("ceph_fsid", fsid), ("whoami", str(self.id))):
            path = self.root / filename
            if path.exists() and path.read_text().strip() != expected:
                raise errors.InvalidArgumentError(
                    f"{self.name}: {self.root} was made with {filename} "
                    f"{path.read_text().strip()}, not {expected}")
            path.write_text(expected + "\n")

    def stop(self) -> None:
        """Tell the monitor we are going (``mark me down``), then stop serving."""
        try:
            self.mon.osd_down(self.id, reporter=self.name)
        except errors.Error as exc:
            LOG.warning("%s: could not mark itself down: %s", self.name, exc)
        self._server.stop()
        self.peers.close()
        self.mon.close()

    # The map and placement ----------------------------------------------------------------

    def refresh_map(self, newer_than: int | None = None) -> dict:
        with self._map_lock:
            if newer_than is None or self._map["epoch"] <= newer_than:
                self._map = self.mon.get_cluster_map()
            return self._map

    def _catch_up(self, epoch: int) -> dict:
        """Our map, first refreshed if the sender has seen a newer one."""
        current = self._map
        if epoch > current["epoch"]:
            return self.refresh_map(newer_than=current["epoch"])
        return current

    def _placement(self, args: dict, *, pg: int | None = None, oid: str = "") -> crush.Placement:
        cluster_map = self._catch_up(_int_arg(args, "epoch", 0))
        pool_name = args.get("pool")
        if not isinstance(pool_name, str):
            raise errors.InvalidArgumentError("a 'pool' name is required")
        pool = crush.find_pool(cluster_map, pool_name)
        if pg is None:
            pg = crush.object_to_pg(oid, pool["pg_num"])
        elif pg >= pool["pg_num"]:
            raise errors.InvalidArgumentError(f"pool '{pool_name}' has no pg {pg:x}")
        placement = crush.pg_placement(cluster_map, pool, pg, oid)
        span = trace.get_current_span()
        span.set_attribute(attr.CEPH_PG, placement.pgid)
        span.set_attribute(attr.CEPH_OSD, self.id)
        return placement

    def _primary_placement(self, args: dict, *, pg: int | None = None) -> crush.Placement:
        oid = "" if pg is not None else args.get("oid")
        if pg is None:
            object_filename(oid)  # validates the name
        placement = self._placement(args, pg=pg, oid=oid)
        if placement.primary != self.id:
            raise errors.StaleMap(
                f"{self.name} is not the primary of pg {placement.pgid} in epoch "
                f"{placement.epoch} (up set {placement.up})")
        return placement

    def _pg_lock(self, placement: crush.Placement) -> threading.Lock:
        key = (placement.pool["id"], placement.pg)
        with self._pg_locks_lock:
            return self._pg_locks.setdefault(key, threading.Lock())

    # Mutations: apply here, then on every replica ------------------------------------------

    def _check_full(self, op: str, args: dict, payload: bytes) -> None:
        """Refuse a write that would leave less than the reserve free (``ENOSPC``), as an
        OSD past ``mon_osd_full_ratio`` does; removing and truncating go on, being how
        space is freed. Checked on the primary and on every replica."""
        if op not in GROWING:
            return
        incoming = len(payload) + len(json.dumps(args.get("vals") or args.get("xattrs") or {}))
        if not self.reserve.allows(self.root, incoming):
            raise errors.NoSpace(f"{self.name} is full: a write of {incoming} bytes would "
                                 "leave less than its reserve free")

    def _apply(self, op: str, placement: crush.Placement, args: dict, payload: bytes,
               primary: bool) -> dict:
        self._check_full(op, args, payload)
        pg_dir = self.store.pg_dir(placement.pool, placement.pg)
        oid = placement.oid
        if op == "write_full":
            if primary and args.get("exclusive") and self.store.exists(pg_dir, oid):
                raise errors.ObjectExists(f"object '{oid}' already exists")
            xattrs = args.get("xattrs")
            if xattrs is not None and not isinstance(xattrs, dict):
                raise errors.InvalidArgumentError("'xattrs' must be an object")
            self.store.write_full(pg_dir, oid, payload, xattrs)
        elif op == "write":
            self.store.write(pg_dir, oid, payload, _int_arg(args, "offset", 0))
        elif op == "truncate":
            self.store.truncate(pg_dir, oid, _int_arg(args, "size", 0))
        elif op == "remove":
            if not self.store.remove(pg_dir, oid) and primary:
                raise errors.ObjectNotFound(f"object '{oid}' does not exist")
        elif op == "omap_set":
            values = args.get("vals")
            if not isinstance(values, dict) or not all(isinstance(v, str)
                                                       for v in values.values()):
                raise errors.InvalidArgumentError("'vals' must map keys to strings")
            self.store.omap_update(pg_dir, oid, set_vals=values)
        elif op == "omap_rm":
            keys = args.get("keys")
            if not isinstance(keys, list):
                raise errors.InvalidArgumentError("'keys' must be a list")
            if primary:
                self.store.omap(pg_dir, oid)  # ENOENT for a missing object
            self.store.omap_update(pg_dir, oid, rm_keys=keys)
        return {}

    def _mutate(self, op: str, args: dict, payload: bytes) -> dict:
        placement = self._primary_placement(args)
        with self._pg_lock(placement):
            result = self._apply(op, placement, args, payload, primary=True)
            self._replicate(op, placement, args, payload)
        return result

    def _replicate(self, op: str, placement: crush.Placement, args: dict, payload: bytes):
        cluster_map = self._map
        forwarded = dict(args, mutation=op, pg=placement.pg, epoch=cluster_map["epoch"])
        for osd_id in placement.replicas:
            address = crush.osd_address(cluster_map, osd_id)
            attributes = {attr.CEPH_POOL: placement.pool["name"],
                          attr.CEPH_OBJECT: placement.oid, attr.CEPH_PG: placement.pgid,
                          attr.CEPH_OSD: osd_id, attr.CEPH_MAP_EPOCH: cluster_map["epoch"]}
            try:
                self.peers.get(address).call("replica_write", forwarded, payload, attributes)
            except (errors.ConnectionFailed, errors.TimedOut) as exc:
                LOG.warning("%s: replica osd.%d unreachable (%s); reporting it down",
                            self.name, osd_id, exc)
                self.mon.osd_down(osd_id, reporter=self.name)
                self.refresh_map()

    def op_replica_write(self, args: dict, payload: bytes) -> dict:
        """Apply a mutation the primary already applied (no primary check, no forwarding)."""
        op = args.get("mutation")
        if op not in MUTATIONS:
            raise errors.InvalidArgumentError(f"cannot replicate '{op}'")
        object_filename(args.get("oid"))
        placement = self._placement(args, oid=args["oid"])
        with self._pg_lock(placement):
            return self._apply(op, placement, args, payload, primary=False)

    def op_write_full(self, args: dict, payload: bytes) -> dict:
        return self._mutate("write_full", args, payload)

    def op_write(self, args: dict, payload: bytes) -> dict:
        return self._mutate("write", args, payload)

    def op_truncate(self, args: dict, payload: bytes) -> dict:
        return self._mutate("truncate", args, payload)

    def op_remove(self, args: dict, payload: bytes) -> dict:
        return self._mutate("remove", args, payload)

    def op_omap_set(self, args: dict, payload: bytes) -> dict:
        return self._mutate("omap_set", args, payload)

    def op_omap_rm(self, args: dict, payload: bytes) -> dict:
        return self._mutate("omap_rm", args, payload)

    # Reads ---------------------------------------------------------------------------------

    def op_read(self, args: dict, payload: bytes) -> tuple[dict, bytes]:
        placement = self._primary_placement(args)
        pg_dir = self.store.pg_dir(placement.pool, placement.pg)
        with self._pg_lock(placement):
            data = self.store.read(pg_dir, placement.oid, _int_arg(args, "offset", 0),
                                   _int_arg(args, "length"))
            result = {"xattrs": self.store.xattrs(pg_dir, placement.oid)} \
                if args.get("xattrs") else {}
        return result, data

    def op_stat(self, args: dict, payload: bytes) -> dict:
        placement = self._primary_placement(args)
        with self._pg_lock(placement):
            return self.store.stat(self.store.pg_dir(placement.pool, placement.pg),
                                   placement.oid)

    def op_omap_get(self, args: dict, payload: bytes) -> dict:
        """Keys after ``start_after`` beginning with ``prefix``, at most ``max_return``."""
        placement = self._primary_placement(args)
        start_after, prefix = str(args.get("start_after", "")), str(args.get("prefix", ""))
        limit = min(_int_arg(args, "max_return", OMAP_MAX_RETURN), OMAP_MAX_RETURN)
        with self._pg_lock(placement):
            values = self.store.omap(self.store.pg_dir(placement.pool, placement.pg),
                                     placement.oid)
        keys = [k for k in sorted(values) if k > start_after and k.startswith(prefix)]
        return {"vals": {k: values[k] for k in keys[:limit]}, "more": len(keys) > limit}

    def op_list(self, args: dict, payload: bytes) -> dict:
        """The objects of one PG of a pool (the client walks every PG)."""
        placement = self._primary_placement(args, pg=_int_arg(args, "pg", 0))
        with self._pg_lock(placement):
            return {"objects": self.store.list(self.store.pg_dir(placement.pool, placement.pg))}

