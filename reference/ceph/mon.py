"""ceph-mon: the keeper of the cluster map.

The monitor holds the one authoritative **cluster map** and hands it to anyone
who asks; everything else (where an object lives, which OSD is primary) clients
and OSDs compute from it themselves (see :mod:`crush`). The map::

    {"fsid": "<cluster uuid>", "epoch": 7,
     "mons": [{"name": "a", "addr": "127.0.0.1:6789"}],
     "osds": [{"id": 0, "addr": "127.0.0.1:41001", "up": true, "in": true, "weight": 1.0}],
     "pools": [{"id": 1, "name": "volumes", "pg_num": 32, "size": 2}],
     "services": {"rgw": [{"name": "rgw.ctl", "url": "http://127.0.0.1:7480"}]}}

Every change bumps ``epoch`` and is written to ``<data_dir>/mon.<name>/cluster_map.json``
before it is answered, so a restarted monitor serves the same map. Ops
(over :mod:`msgr`): ``get_cluster_map``, ``osd_boot``, ``osd_down``,
``service_register``, ``service_unregister``, ``pool_create``.

Real Ceph differs: several monitors agree on each new map with Paxos; the map is
several maps with their own epochs (monmap, osdmap with the pools, CRUSH map,
the mgr's service map); monitors push new maps to subscribers instead of waiting
to be asked; and a down OSD is detected by its peers' heartbeat reports, not
only when it says goodbye. Here: one monitor, one map, one epoch, clients pull.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import threading
import uuid
from pathlib import Path

from opentelemetry import trace

from novalab.reference.ceph import errors, msgr
from novalab.reference.ceph.auth import CephX
from novalab.tracing import attributes as attr

LOG = logging.getLogger(__name__)

DEFAULT_PG_NUM = 32
DEFAULT_SIZE = 2
# Pools a deployment tool creates for OpenStack before the services start (the
# DevStack Ceph plugin creates cinder's "volumes"); rgw creates its own pools.
DEFAULT_POOLS = ("volumes",)


class Monitor:
    """One monitor daemon (``mon.a``): the map, its file, and the msgr server."""

    def __init__(self, data_dir: Path, tracer: trace.Tracer, *, name: str = "a",
                 host: str = "127.0.0.1", port: int = 0, pools=DEFAULT_POOLS,
                 auth: CephX | None):
        self.name = name
        self.tracer = tracer
        self.path = Path(data_dir) / f"mon.{name}" / "cluster_map.json"
        self._lock = threading.Lock()
        self._map = self._load(pools)
        self._server = msgr.Server(self, rpc_service="mon", tracer=tracer, host=host,
                                   port=port, name=f"mon.{name}", auth=auth)

    @property
    def address(self) -> str:
        return self._server.address

    @property
    def cluster_map(self) -> dict:
        with self._lock:
            return copy.deepcopy(self._map)

    def start(self) -> Monitor:
        with self._lock:
            self._map["mons"] = [{"name": self.name, "addr": self.address}]
            self._commit()
        self._server.start()
        LOG.info("mon.%s serving epoch %d on %s", self.name, self._map["epoch"], self.address)
        return self

    def stop(self) -> None:
        self._server.stop()

    # The map and its file ----------------------------------------------------------------

    def _load(self, pools) -> dict:
        if self.path.exists():
            return json.loads(self.path.read_text())
        cluster_map = {"fsid": str(uuid.uuid4()), "epoch": 1, "mons": [], "osds": [],
                       "pools": [], "services": {}}
        for name in pools:
            cluster_map["pools"].append(_new_pool(cluster_map, name, DEFAULT_PG_NUM,
                                                  DEFAULT_SIZE))
        return cluster_map

    def _commit(self) -> None:
        """Bump the epoch and persist the map (caller holds the lock)."""
        self._map["epoch"] += 1
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self._map, indent=1, sort_keys=True))
        os.replace(tmp, self.path)

    def _osd(self, osd_id: int) -> dict | None:
        return next((o for o in self._map["osds"] if o["id"] == osd_id), None)

    # Ops ----------------------------------------------------------------------------------

    def op_get_cluster_map(self, args: dict, payload: bytes) -> dict:
        return self.cluster_map

    def op_osd_boot(self, args: dict, payload: bytes) -> dict:
        """An OSD announces its address: it is up (and in, as on first boot in Ceph)."""
        osd_id, addr = _osd_id(args), args.get("addr")
        if not isinstance(addr, str) or ":" not in addr:
            raise errors.InvalidArgumentError("osd_boot needs 'addr' as host:port")
        weight = float(args.get("weight", 1.0))
        with self._lock:
            osd = self._osd(osd_id)
            if osd is None:
                osd = {"id": osd_id, "weight": weight}
                self._map["osds"].append(osd)
                self._map["osds"].sort(key=lambda o: o["id"])
            osd.update(addr=addr, up=True, weight=weight)
            osd["in"] = True
            self._commit()
            trace.get_current_span().set_attribute(attr.CEPH_MAP_EPOCH, self._map["epoch"])
            return copy.deepcopy(self._map)

    def op_osd_down(self, args: dict, payload: bytes) -> dict:
        """Mark an OSD down: it is stopping, or a peer could not reach it."""
        osd_id = _osd_id(args)
        with self._lock:
            osd = self._osd(osd_id)
            if osd is None:
                raise errors.ObjectNotFound(f"osd.{osd_id} does not exist")
            if osd["up"]:
                osd["up"] = False
                self._commit()
                LOG.info("mon.%s: osd.%d down (reported by %s), epoch %d", self.name, osd_id,
                         args.get("reporter", "itself"), self._map["epoch"])
            return {"epoch": self._map["epoch"]}

    def op_service_register(self, args: dict, payload: bytes) -> dict:
        """A gateway (``rgw``) says where clients find it."""
        kind, name, url = args.get("service"), args.get("name"), args.get("url")
        if not all(isinstance(v, str) and v for v in (kind, name, url)):
            raise errors.InvalidArgumentError("service_register needs service, name and url")
        with self._lock:
            entries = [e for e in self._map["services"].get(kind, []) if e["name"] != name]
            self._map["services"][kind] = [*entries, {"name": name, "url": url}]
            self._commit()
            return {"epoch": self._map["epoch"]}

    def op_service_unregister(self, args: dict, payload: bytes) -> dict:
        kind, name = args.get("service"), args.get("name")
        with self._lock:
            entries = self._map["services"].get(kind, [])
            kept = [e for e in entries if e["name"] != name]
            if len(kept) != len(entries):
                self._map["services"][kind] = kept
                self._commit()
            return {"epoch": self._map["epoch"]}

    def op_pool_create(self, args: dict, payload: bytes) -> dict:
        """Create a pool; creating one that exists is not an error (``ceph osd pool create``)."""
        name = args.get("name")
        if not isinstance(name, str) or not name:
            raise errors.InvalidArgumentError("pool_create needs a 'name'")
        pg_num, size = int(args.get("pg_num", DEFAULT_PG_NUM)), int(args.get("size",
                                                                             DEFAULT_SIZE))
        if pg_num < 1 or size < 1:
            raise errors.InvalidArgumentError("pg_num and size must be positive")
        with self._lock:
            for pool in self._map["pools"]:
                if pool["name"] == name:
                    return {"pool": dict(pool), "epoch": self._map["epoch"]}
            pool = _new_pool(self._map, name, pg_num, size)
            self._map["pools"].append(pool)
            self._commit()
            return {"pool": dict(pool), "epoch": self._map["epoch"]}


def _new_pool(cluster_map: dict, name: str, pg_num: int, size: int) -> dict:
    next_id = max((p["id"] for p in cluster_map["pools"]), default=0) + 1
    return {"id": next_id, "name": name, "pg_num": pg_num, "size": size}


def _osd_id(args: dict) -> int:
    osd_id = args.get("id")
    if not isinstance(osd_id, int) or isinstance(osd_id, bool) or osd_id < 0:
        raise errors.InvalidArgumentError("an OSD 'id' (a non-negative integer) is required")
    return osd_id


class MonClient:
    """What every daemon and client uses to talk to the monitor (``MonClient`` in Ceph)."""

    def __init__(self, address: str, tracer: trace.Tracer, timeout: float = 30.0,
                 auth: CephX | None = None):
        self.address = address
        self.connection = msgr.Connection(address, tracer, rpc_service="mon",
                                          peer_service="ceph-mon", timeout=timeout, auth=auth)

    def _call(self, op: str, **args) -> dict:
        return self.connection.call(op, args)[0]

    def get_cluster_map(self) -> dict:
        return self._call("get_cluster_map")

    def osd_boot(self, osd_id: int, addr: str, weight: float = 1.0) -> dict:
        return self._call("osd_boot", id=osd_id, addr=addr, weight=weight)

    def osd_down(self, osd_id: int, reporter: str | None = None) -> dict:
        return self._call("osd_down", id=osd_id, reporter=reporter)

    def service_register(self, service: str, name: str, url: str) -> dict:
        return self._call("service_register", service=service, name=name, url=url)

    def service_unregister(self, service: str, name: str) -> dict:
        return self._call("service_unregister", service=service, name=name)

    def pool_create(self, name: str, pg_num: int = DEFAULT_PG_NUM,
                    size: int = DEFAULT_SIZE) -> dict:
        return self._call("pool_create", name=name, pg_num=pg_num, size=size)["pool"]

    def close(self) -> None:
        self.connection.close()
