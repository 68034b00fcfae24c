"""The placement rule: stable, spread by weight, distinct replicas, down and out OSDs."""

from __future__ import annotations

from collections import Counter

import pytest

from novalab.reference.ceph import crush, errors


def osds(count, overrides=None):
    overrides = overrides or {}
    return [dict({"id": i, "addr": f"127.0.0.1:{7000 + i}", "up": True, "in": True,
                  "weight": 1.0}, **overrides.get(i, {})) for i in range(count)]


def test_object_to_pg_is_crc32_mod_pg_num():
    # Fixed values: a change of the hash would move every object of an existing cluster.
    assert crush.object_to_pg("rbd_header.abc", 32) == 8
    assert crush.object_to_pg("cirros.img", 64) == 54
    assert all(0 <= crush.object_to_pg(f"obj{i}", 32) < 32 for i in range(500))
    with pytest.raises(errors.InvalidArgumentError):
        crush.object_to_pg("x", 0)


def test_pg_id_is_pool_dot_hex():
    assert crush.pg_id(2, 31) == "2.1f"


def test_acting_set_is_deterministic_distinct_and_sized():
    cluster = osds(5)
    for pg in range(64):
        first = crush.acting_osds(1, pg, cluster, 3)
        assert first == crush.acting_osds(1, pg, [dict(o) for o in reversed(cluster)], 3)
        assert len(first) == 3 and len(set(first)) == 3
    # Fewer OSDs than replicas: every OSD once, no repeats.
    assert sorted(crush.acting_osds(1, 0, osds(2), 3)) == [0, 1]


def test_pools_with_the_same_pg_numbers_map_differently():
    cluster = osds(6)
    pool1 = [crush.acting_osds(1, pg, cluster, 2) for pg in range(32)]
    pool2 = [crush.acting_osds(2, pg, cluster, 2) for pg in range(32)]
    assert pool1 != pool2


def test_primaries_spread_evenly_over_equal_weights():
    cluster = osds(4)
    primaries = Counter(crush.acting_osds(1, pg, cluster, 2)[0] for pg in range(2048))
    assert set(primaries) == {0, 1, 2, 3}
    assert all(400 <= count <= 624 for count in primaries.values()), primaries


def test_weight_attracts_placements_in_proportion():
    cluster = osds(3, {0: {"weight": 2.0}})
    primaries = Counter(crush.acting_osds(1, pg, cluster, 1)[0] for pg in range(4000))
    # Expected shares 1/2, 1/4, 1/4.
    assert 1800 <= primaries[0] <= 2200, primaries
    assert 800 <= primaries[1] <= 1200 and 800 <= primaries[2] <= 1200, primaries


def test_a_down_osd_leaves_the_up_set_and_the_next_becomes_primary():
    cluster = osds(4)
    before = {pg: crush.up_osds(1, pg, cluster, 2) for pg in range(128)}
    cluster[1]["up"] = False
    for pg, up in before.items():
        now = crush.up_osds(1, pg, cluster, 2)
        assert 1 not in now
        # CRUSH's choice is unchanged: the PG runs degraded on the survivors, in order.
        assert now == [o for o in up if o != 1]
    assert any(up[0] == 1 for up in before.values())


def test_an_out_osd_moves_only_the_pgs_that_had_chosen_it():
    cluster = osds(5)
    before = {pg: crush.acting_osds(1, pg, cluster, 2) for pg in range(256)}
    cluster[3]["in"] = False
    moved = 0
    for pg, acting in before.items():
        now = crush.acting_osds(1, pg, cluster, 2)
        assert 3 not in now and len(now) == 2
        if 3 not in acting:
            assert now == acting, f"pg {pg} moved although osd.3 was not in it"
        else:
            moved += 1
    assert moved > 0


def test_locate_names_pool_pg_and_primary():
    cluster_map = {"epoch": 5, "osds": osds(3),
                   "pools": [{"id": 4, "name": "volumes", "pg_num": 32, "size": 2}]}
    placement = crush.locate(cluster_map, "volumes", "rbd_header.abc")
    assert placement.pg == 8 and placement.pgid == "4.8" and placement.epoch == 5
    assert placement.primary == placement.up[0] and len(placement.replicas) == 1
    with pytest.raises(errors.ObjectNotFound):
        crush.locate(cluster_map, "nope", "x")
    cluster_map["osds"] = [dict(o, up=False) for o in cluster_map["osds"]]
    assert crush.locate(cluster_map, "volumes", "x").primary is None
