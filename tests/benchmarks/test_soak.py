"""The soak benchmark, CI-sized: boots with drills and deletes leave nothing wrong.

``benchmarks/soak.py`` prints its counts; here a small run of it must count zero
everywhere (lost, stuck, ERROR without a fault, 5xx, leaks). Correctness only:
how fast it ran is the benchmark's business.
"""

from __future__ import annotations

import pytest


@pytest.fixture
def soak(load_benchmark):
    return load_benchmark("soak")


def test_boots_with_faults_and_deletes_leave_nothing_behind(soak, tmp_path):
    cloud = soak.start_cloud(tmp_path, computes=2)
    try:
        report = soak.run_soak(cloud, boots=16, concurrency=4, fault_rate=0.3,
                               delete_rate=0.3, seed=7, deadline=120.0)
    finally:
        cloud.stop()
    assert report.accepted == 16
    # The seed gives drills and deletes both, so the run tries what it claims to.
    assert sum(report.faults_injected.values()) > 0 and report.outcomes["deleted"] > 0
    assert report.lost == []
    assert report.stuck == []
    assert report.error_without_fault == []
    assert report.server_errors == []
    assert {kind: items for kind, items in report.leaked.items() if items} == {}
