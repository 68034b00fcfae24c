"""Quotas by counting: defaults, per-project limits, the check before work, the recheck."""

from __future__ import annotations

import pytest

from novalab.reference.common import db, exception, quota
from novalab.reference.nova.db.models import Quota


@pytest.fixture
def engine(tmp_path):
    database = db.Database(f"sqlite:///{tmp_path}/q.db")
    database.create_schema()
    used = {"p1": {"instances": 0, "cores": 0}}
    counters = {name: (lambda project, name=name: used.get(project, {}).get(name, 0))
                for name in ("instances", "cores")}
    engine = quota.QuotaEngine(database, Quota, {"instances": 2, "cores": -1}, counters)
    engine.used = used
    return engine


def test_defaults_until_a_project_has_its_own(engine):
    assert engine.limits("p1") == {"instances": 2, "cores": -1}
    assert engine.set_limits("p1", {"instances": 5}) == {"instances": 5, "cores": -1}
    assert engine.limits("p2") == {"instances": 2, "cores": -1}
    engine.delete_limits("p1")
    assert engine.limits("p1")["instances"] == 2


def test_a_request_over_the_limit_is_refused_with_novas_wording(engine):
    engine.used["p1"]["instances"] = 1
    engine.check_deltas("p1", {"instances": 1, "cores": 10**6})  # cores unlimited
    with pytest.raises(quota.OverQuota) as raised:
        engine.check_deltas("p1", {"instances": 2})
    assert raised.value.code == 403
    assert str(raised.value) == ("Quota exceeded for instances: Requested 2, but already "
                                 "used 1 of 2 instances")


def test_the_recheck_counts_the_rows_already_written(engine):
    engine.used["p1"]["instances"] = 2  # our one plus a racing request's one
    engine.recheck("p1", {"instances": 1})  # 2 of 2: fine
    engine.used["p1"]["instances"] = 3
    with pytest.raises(quota.OverQuota):
        engine.recheck("p1", {"instances": 1})


@pytest.mark.parametrize("values", [{"instances": -2}, {"instances": 2**31}, {"nope": 1}])
def test_limits_out_of_range_or_unknown_are_400(engine, values):
    with pytest.raises(exception.Invalid):
        engine.set_limits("p1", values)


def test_one_counter_counts_several_resources_in_one_call(tmp_path):
    database = db.Database(f"sqlite:///{tmp_path}/q.db")
    database.create_schema()
    calls = []

    def count(project):
        calls.append(project)
        return 3, 6

    engine = quota.QuotaEngine(database, Quota, {"instances": 10, "cores": 20, "snapshots": 5},
                               {("instances", "cores"): count})
    assert engine.usages("p1") == {"instances": 3, "cores": 6, "snapshots": 0}
    assert calls == ["p1"]
    assert engine.usages("p1", ["cores"]) == {"cores": 6}
