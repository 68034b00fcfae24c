"""Two-host clouds whose scheduler a test configures through STATE_DIR/nova.conf."""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

import pytest


class SchedulerLab:
    """A running cloud with two compute hosts, seen as the learner sees it: nova.conf,
    a folder of filter files, the API (as admin, who is shown each server's host) and
    the scheduler's spans."""

    def __init__(self, cloud, session):
        self.cloud = cloud
        self.session = session
        self.state_dir = Path(cloud.config.state_dir)
        self.conf = self.state_dir / "nova.conf"
        self.filters = self.state_dir / "filters"
        self.filters.mkdir(exist_ok=True)

    def configure(self, **options) -> None:
        """Write [filter_scheduler] with ``options`` and filter_dirs = filters."""
        lines = ["[filter_scheduler]", "filter_dirs = filters"]
        lines += [f"{key} = {value}" for key, value in options.items()]
        touch_newer(self.conf, "\n".join(lines) + "\n")

    def write_filter(self, name: str, source: str) -> Path:
        path = self.filters / name
        touch_newer(path, textwrap.dedent(source))
        return path

    def boot(self, name: str, flavor: str = "42") -> dict:
        """Boot and wait for ACTIVE or ERROR (a bound on waiting, not on speed)."""
        body = {"server": {"name": name, "flavorRef": flavor,
                           "imageRef": self.cloud.cirros["id"]}}
        response = self.session.request("POST", f"{self.session.compute}/servers", json=body)
        assert response.status_code == 202, response.text
        server_id = response.json()["server"]["id"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            server = self.session.request(
                "GET", f"{self.session.compute}/servers/{server_id}").json()["server"]
            if server["status"] in ("ACTIVE", "ERROR"):
                return server
            time.sleep(0.05)
        raise AssertionError(f"{name} is still building")

    def schedule_spans(self) -> list:
        """The ``FilterScheduler._schedule`` spans so far, oldest first."""
        self.cloud.telemetry.force_flush()
        spans = [s for s in self.cloud.telemetry.finished_spans()
                 if s.name == "FilterScheduler._schedule"]
        return sorted(spans, key=lambda s: s.start_time)

    @staticmethod
    def events(span, name: str) -> list[dict]:
        return [dict(e.attributes) for e in span.events if e.name == name]


def touch_newer(path: Path, text: str) -> None:
    """Write ``text`` and make sure the file's mtime moved on, however fast the clock
    ticks: the scheduler notices a change by the file's stat."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    if path.stat().st_mtime_ns <= before:
        os.utime(path, ns=(before + 1_000_000_000, before + 1_000_000_000))


@pytest.fixture
def lab(cloud_factory, login):
    cloud = cloud_factory(computes=2, network=False)
    return SchedulerLab(cloud, login(cloud, "admin"))



@pytest.fixture
def touch():
    """``touch(path, text)``: write a file so that its mtime surely changes."""
    return touch_newer
