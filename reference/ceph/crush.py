"""CRUSH in small: where an object lives is computed, never looked up.

Every client and every OSD holding the same cluster map computes the same answer,
so there is no central table of object locations. Two steps:

1. **object -> placement group.** ``pg = crc32(name) mod pg_num``. Real Ceph hashes
   the name with rjenkins and folds it with ``ceph_stable_mod``, which moves only a
   few objects when ``pg_num`` grows to a number that is not a power of two; a
   plain modulo does not have that property, and novalab never changes ``pg_num``.
2. **placement group -> ordered list of OSDs** by a *straw2* draw: every OSD that
   is *in* draws a straw ``ln(u) / weight`` with ``u`` a hash of (pool, pg, OSD,
   replica rank) in (0, 1]; the longest straw (the largest, least negative value)
   wins. An OSD with twice the weight wins twice as often, and taking an OSD out
   only moves the PGs that had chosen it. Rank ``r`` draws again without the OSDs
   already chosen, for ``size`` replicas. Real CRUSH walks a hierarchy of buckets
   (host, rack, room) from a rule, so replicas land on different hosts, and retries
   a collision with a new ``r``; here every OSD sits directly under one root.

The result of CRUSH is the *acting* set. OSDs that are down are then dropped from
it (the *up* set), keeping the order: the first up OSD is the **primary**, the only
one clients talk to for that PG. A PG with a down member runs *degraded* on fewer
copies; real Ceph marks a down OSD *out* after ``mon_osd_down_out_interval`` (10
minutes) and only then does CRUSH choose a replacement (and backfill it).
"""

from __future__ import annotations

import hashlib
import math
import struct
import zlib
from dataclasses import dataclass

from novalab.reference.ceph import errors


def object_to_pg(name: str, pg_num: int) -> int:
    """The placement group (0 .. pg_num-1) of object ``name`` in a pool of ``pg_num`` PGs."""
    if pg_num < 1:
        raise errors.InvalidArgumentError(f"pg_num must be positive, not {pg_num}")
    return zlib.crc32(name.encode("utf-8")) % pg_num


def pg_id(pool_id: int, pg: int) -> str:
    """A PG's name as Ceph prints it: pool id, a dot, the PG number in hex (``2.1f``)."""
    return f"{pool_id}.{pg:x}"


def _straw(pool_id: int, pg: int, osd_id: int, rank: int, weight: float) -> float:
    digest = hashlib.blake2b(struct.pack(">IIII", pool_id, pg, osd_id, rank),
                             digest_size=8).digest()
    u = (int.from_bytes(digest, "big") + 1) / 2**64     # in (0, 1]
    return math.log(u) / weight


def acting_osds(pool_id: int, pg: int, osds: list[dict], size: int) -> list[int]:
    """CRUSH's choice for a PG: ``size`` distinct OSD ids among those *in*, best first."""
    candidates = [o for o in osds if o.get("in", True) and o.get("weight", 1.0) > 0]
    chosen: list[int] = []
    for rank in range(min(size, len(candidates))):
        best = max((o for o in candidates if o["id"] not in chosen),
                   key=lambda o: _straw(pool_id, pg, o["id"], rank, o.get("weight", 1.0)))
        chosen.append(best["id"])
    return chosen


def up_osds(pool_id: int, pg: int, osds: list[dict], size: int) -> list[int]:
    """The acting set without the OSDs that are down; the first is the primary."""
    up = {o["id"] for o in osds if o.get("up")}
    return [osd_id for osd_id in acting_osds(pool_id, pg, osds, size) if osd_id in up]


@dataclass(frozen=True)
class Placement:
    """Where one object lives under one cluster map."""

    pool: dict
    oid: str
    pg: int
    up: list[int]
    epoch: int

    @property
    def pgid(self) -> str:
        return pg_id(self.pool["id"], self.pg)

    @property
    def primary(self) -> int | None:
        return self.up[0] if self.up else None

    @property
    def replicas(self) -> list[int]:
        return self.up[1:]


def find_pool(cluster_map: dict, name: str) -> dict:
    for pool in cluster_map["pools"]:
        if pool["name"] == name:
            return pool
    raise errors.ObjectNotFound(f"pool '{name}' does not exist")


def pg_placement(cluster_map: dict, pool: dict, pg: int, oid: str = "") -> Placement:
    up = up_osds(pool["id"], pg, cluster_map["osds"], pool["size"])
    return Placement(pool=pool, oid=oid, pg=pg, up=up, epoch=cluster_map["epoch"])


def locate(cluster_map: dict, pool_name: str, oid: str) -> Placement:
    """The PG and up set of object ``oid`` of pool ``pool_name``."""
    pool = find_pool(cluster_map, pool_name)
    return pg_placement(cluster_map, pool, object_to_pg(oid, pool["pg_num"]), oid)


def osd_address(cluster_map: dict, osd_id: int) -> str:
    for osd in cluster_map["osds"]:
        if osd["id"] == osd_id:
            return osd["addr"]
    raise errors.ObjectNotFound(f"osd.{osd_id} is not in the cluster map")
