"""No test goes missing: every id in docs/perf/test-id-map.txt is still collected.

The map lists the suite's test ids from before the suite was made parallel, each
with the id that carries it now (issue 20: no test deleted, skipped or weakened).
The check needs the whole suite collected, so it runs in `make test` and CI; a run
of some modules, or of `make test-fast`, skips it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

MAP = Path(__file__).resolve().parents[1] / "docs" / "perf" / "test-id-map.txt"


def carried_ids() -> dict[str, str]:
    """``{old id: the id that carries it now}``."""
    carried = {}
    for line in MAP.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        old, _, new = line.partition(" -> ")
        carried[old.strip()] = (new or old).strip()
    return carried


def whole_suite(config: pytest.Config) -> bool:
    """Did this run collect every test: no paths, no -m, no -k, nothing deselected?"""
    testpaths = config.getini("testpaths")
    return (sorted(config.args) in ([], sorted(testpaths))
            and not config.option.markexpr and not config.option.keyword
            and not config.option.deselect)


def test_every_test_of_the_map_is_still_collected(request):
    if not whole_suite(request.config):
        pytest.skip("needs the whole suite collected (make test)")
    collected = {item.nodeid for item in request.session.items}
    carried = carried_ids()
    assert len(carried) >= 2035
    missing = sorted(f"{old} -> {new}" for old, new in carried.items() if new not in collected)
    assert not missing, f"{len(missing)} mapped tests are not collected:\n" + "\n".join(
        missing[:50])
