"""librados in small: the client library every Ceph user links (rbd, rgw, qemu, cinder).

A client needs only the monitor's address. :meth:`Rados.connect` fetches the
cluster map; from then on the client computes each object's placement group
and primary OSD itself (:mod:`crush`) and talks to that OSD directly: there is
no proxy or lookup service in the data path. When an OSD answers ``ESTALE``
(it is not the primary in its newer map) or cannot be reached, the client
fetches the map again and resends once: the usual way a Ceph client learns
that the cluster changed. Real librados keeps a session to the monitor and is
*pushed* each new map; it would also wait for a map in which the PG has an up
OSD instead of failing.

Names follow the python ``rados`` binding (``Rados``, ``open_ioctx``, ``IoCtx``,
``write_full``, ``trunc``, ``ObjectNotFound``), with small differences noted on
the methods. Calls are CLIENT spans of the calling service (``ceph.osd/read``,
``ceph.mon/get_cluster_map``) carrying ``ceph.pool``, ``ceph.object``,
``ceph.pg`` and the target ``ceph.osd``.
"""

from __future__ import annotations

import threading

from opentelemetry import trace

from novalab.reference.ceph import crush, errors, msgr
from novalab.reference.ceph.auth import CephX
from novalab.reference.ceph.errors import (  # noqa: F401 (librados names)
    Error,
    InvalidArgumentError,
    ObjectExists,
    ObjectNotFound,
)
from novalab.reference.ceph.mon import DEFAULT_PG_NUM, DEFAULT_SIZE, MonClient
from novalab.tracing import attributes as attr


class Rados:
    """A connection to one cluster through its monitor at ``mon_address`` (host:port)."""

    def __init__(self, mon_address: str, tracer: trace.Tracer, *, timeout: float = 30.0,
                 auth: CephX | None = None):
        self.mon_address = mon_address
        self.tracer = tracer
        self.auth = auth  # the keyring's key (auth.of), which the deployment's daemons ask
        self.mon = MonClient(mon_address, tracer, timeout=timeout, auth=auth)
        self._osds = msgr.ConnectionPool(tracer, rpc_service="osd",
                                         peer_service="ceph-osd", timeout=timeout, auth=auth)
        self._map: dict | None = None
        self._lock = threading.Lock()

    def connect(self) -> Rados:
        self.refresh_map()
        return self

    @property
    def cluster_map(self) -> dict:
        if self._map is None:
            self.refresh_map()
        return self._map

    def refresh_map(self, newer_than: int | None = None) -> dict:
        """Fetch the map (unless another thread already got one newer than ``newer_than``)."""
        with self._lock:
            if self._map is None or newer_than is None or self._map["epoch"] <= newer_than:
                self._map = self.mon.get_cluster_map()
            return self._map

    @property
    def fsid(self) -> str:
        return self.cluster_map["fsid"]

    # Pools and services --------------------------------------------------------------------

    def list_pools(self) -> list[str]:
        return [pool["name"] for pool in self.cluster_map["pools"]]

    def pool_exists(self, name: str) -> bool:
        return name in self.list_pools()

    def create_pool(self, name: str, pg_num: int = DEFAULT_PG_NUM,
                    size: int = DEFAULT_SIZE) -> None:
        """Create pool ``name`` (nothing happens if it exists)."""
        self.mon.pool_create(name, pg_num, size)
        self.refresh_map()

    def service_urls(self, service: str) -> list[str]:
        """Where the gateways of kind ``service`` (``"rgw"``) registered themselves."""
        return [entry["url"] for entry in self.cluster_map["services"].get(service, [])]

    def open_ioctx(self, pool: str) -> IoCtx:
        """An I/O context on ``pool``; ``ObjectNotFound`` if there is no such pool.

        A pool missing from our map may be newer than it: fetch the map once more
        (librados waits for the latest osdmap the same way)."""
        try:
            crush.find_pool(self.cluster_map, pool)
        except errors.ObjectNotFound:
            crush.find_pool(self.refresh_map(), pool)
        return IoCtx(self, pool)

    def shutdown(self) -> None:
        self._osds.close()
        self.mon.close()

    def __enter__(self) -> Rados:
        return self.connect()

    def __exit__(self, *exc) -> None:
        self.shutdown()

    # The data path -------------------------------------------------------------------------

    def osd_op(self, pool: str, op: str, args: dict | None = None, payload: bytes = b"", *,
               oid: str | None = None, pg: int | None = None) -> tuple[dict, bytes]:
        """Send ``op`` on object ``oid`` (or on PG ``pg``) to its primary OSD."""
        for attempt in range(2):
            cluster_map = self.cluster_map
            pool_ref = crush.find_pool(cluster_map, pool)
            if pg is None:
                placement = crush.locate(cluster_map, pool, oid)
            else:
                placement = crush.pg_placement(cluster_map, pool_ref, pg)
            attributes = {attr.CEPH_POOL: pool, attr.CEPH_PG: placement.pgid,
                          attr.CEPH_MAP_EPOCH: cluster_map["epoch"]}
            if oid is not None:
                attributes[attr.CEPH_OBJECT] = oid
            try:
                if placement.primary is None:
                    raise errors.NoUpOSD(f"pg {placement.pgid} has no up OSD in epoch "
                                         f"{cluster_map['epoch']}")
                attributes[attr.CEPH_OSD] = placement.primary
                connection = self._osds.get(crush.osd_address(cluster_map, placement.primary))
                request = {"pool": pool, "epoch": cluster_map["epoch"], **(args or {})}
                if oid is not None:
                    request["oid"] = oid
                return connection.call(op, request, payload, attributes)
            except (errors.StaleMap, errors.ConnectionFailed, errors.NoUpOSD):
                if attempt:
                    raise
                self.refresh_map(newer_than=cluster_map["epoch"])
        raise AssertionError("unreachable")


class IoCtx:
    """Object operations on one pool, as ``rados.Ioctx``."""

    def __init__(self, rados: Rados, pool: str):
        self.rados = rados
        self.pool = pool

    def _op(self, op: str, oid: str, args: dict | None = None,
            payload: bytes = b"") -> tuple[dict, bytes]:
        if not isinstance(oid, str) or not oid:
            raise errors.InvalidArgumentError("an object name is required")
        return self.rados.osd_op(self.pool, op, args, payload, oid=oid)

    # Data --------------------------------------------------------------------------------

    def write_full(self, oid: str, data: bytes, xattrs: dict[str, str] | None = None) -> None:
        """Replace the object's bytes (creating it). With ``xattrs``, replace those
        too, in the same op (as a ``WriteOp`` of ``write_full`` plus ``setxattr``)."""
        args = {} if xattrs is None else {"xattrs": xattrs}
        self._op("write_full", oid, args, bytes(data))

    def create(self, oid: str, data: bytes = b"", xattrs: dict[str, str] | None = None) -> None:
        """Create the object exclusively: ``ObjectExists`` if it is there already."""
        args = {"exclusive": True, **({} if xattrs is None else {"xattrs": xattrs})}
        self._op("write_full", oid, args, bytes(data))

    def write(self, oid: str, data: bytes, offset: int = 0) -> None:
        self._op("write", oid, {"offset": offset}, bytes(data))

    def trunc(self, oid: str, size: int) -> None:
        self._op("truncate", oid, {"size": size})

    def read(self, oid: str, offset: int = 0, length: int | None = None) -> bytes:
        """Bytes from ``offset``; the whole rest when ``length`` is None (the python
        binding reads 8192 bytes by default)."""
        args = {"offset": offset} if length is None else {"offset": offset, "length": length}
        return self._op("read", oid, args)[1]

    def read_with_xattrs(self, oid: str, offset: int = 0,
                         length: int | None = None) -> tuple[bytes, dict[str, str]]:
        """Bytes and xattrs in one op, so both belong to the same version."""
        args = {"offset": offset, "xattrs": True}
        if length is not None:
            args["length"] = length
        result, data = self._op("read", oid, args)
        return data, result.get("xattrs", {})

    def get_xattrs(self, oid: str) -> dict[str, str]:
        return self.read_with_xattrs(oid, 0, 0)[1]

    def stat(self, oid: str) -> int:
        """The object's size (the python binding returns ``(size, mtime)``)."""
        return self._op("stat", oid)[0]["size"]

    def remove(self, oid: str) -> None:
        """Remove the object; ``ObjectNotFound`` if it is not there."""
        self._op("remove", oid)

    remove_object = remove

    def list_objects(self) -> list[str]:
        """Every object of the pool, asking each PG's primary in turn (``pgls``)."""
        pool = crush.find_pool(self.rados.cluster_map, self.pool)
        names: list[str] = []
        for pg in range(pool["pg_num"]):
            names.extend(self.rados.osd_op(self.pool, "list", {"pg": pg}, pg=pg)[0]["objects"])
        return sorted(names)

    # Omap: an object's sorted key/value map ------------------------------------------------

    def set_omap(self, oid: str, values: dict[str, str]) -> None:
        self._op("omap_set", oid, {"vals": dict(values)})

    def get_omap_vals(self, oid: str, start_after: str = "", prefix: str = "",
                      max_return: int = 1000) -> tuple[dict[str, str], bool]:
        """Up to ``max_return`` keys after ``start_after`` with ``prefix``, and whether
        there are more."""
        result, _ = self._op("omap_get", oid, {"start_after": start_after, "prefix": prefix,
                                               "max_return": max_return})
        return result["vals"], result["more"]

    def remove_omap_keys(self, oid: str, keys) -> None:
        self._op("omap_rm", oid, {"keys": list(keys)})

    def close(self) -> None:
        """Nothing to release: the connections belong to the ``Rados`` handle."""
