"""Fixtures of the tracing tests: a state dir's ``traces/`` and processes writing to it."""

from __future__ import annotations

import pytest
from span_files import Process


@pytest.fixture
def traces_dir(tmp_path):
    """``STATE_DIR/traces`` of a deployment whose state dir is ``tmp_path / "state"``."""
    path = tmp_path / "state" / "traces"
    path.mkdir(parents=True)
    return path


@pytest.fixture
def processes(traces_dir):
    made = {}

    def get(service):
        if service not in made:
            made[service] = Process(traces_dir, service)
        return made[service]

    yield get
    for process in made.values():
        process.close()


