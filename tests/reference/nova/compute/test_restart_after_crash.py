"""nova-compute dies in the middle of a build, starts again: nothing stays reserved.

A crash is simulated in process: at a chosen point of the build a ``BaseException``
(which no ``except Exception`` of the build catches, so no clean-up runs) ends the
build thread, as ``kill -9`` would end the process there. ``init_host`` then runs
as on the restart. The server must end ERROR with a fault, and deleting it must
give back its port and its volume, whatever the crash left half-recorded.
"""

from __future__ import annotations

import time

import pytest

from .test_build_faults import leftovers
from .test_delete_during_build import _create, _wait_for


class Crash(BaseException):
    """The process dies here (kill -9): no handler runs."""


def _crash_after(target, name: str, monkeypatch, crashed: list):
    real = getattr(target, name)

    def dying(*args, **kwargs):
        real(*args, **kwargs)  # the call is made; its answer never arrives
        crashed.append(name)
        raise Crash(name)

    monkeypatch.setattr(target, name, dying)


@pytest.mark.parametrize("after", ["attachment_create", "attachment_update", "create"])
def test_a_build_cut_short_leaves_nothing_once_its_server_is_deleted(cloud_factory, login,
                                                                     monkeypatch, after):
    cloud = cloud_factory()
    (compute,) = cloud.computes
    crashed: list = []
    _crash_after(compute.volume_api, after, monkeypatch, crashed)
    session = login(cloud)
    server_id = _create(session, cloud, f"crash-after-{after}")
    for _ in range(600):
        if crashed:
            break
        time.sleep(0.05)
    assert crashed == [after]
    assert compute.wait_for_builds(30)
    monkeypatch.undo()

    compute.init_host()  # the restart
    server = _wait_for(session, server_id, lambda r, s: s.get("status") == "ERROR",
                       "went to ERROR", 30.0)
    assert "restarted during the build" in server["fault"]["message"]

    assert session.request("DELETE", f"{session.compute}/servers/{server_id}") \
        .status_code == 204
    _wait_for(session, server_id, lambda r, s: r.status_code == 404, "was gone", 60.0)
    ports, volumes = leftovers(cloud, server_id)
    assert ports == []
    assert [(v["id"], v["status"]) for v in volumes] == []
