"""Where a test's time goes: a pytest plugin behind ``scripts/test_durations.py``.

Loaded only on request (``pytest -p suite_profile``, with ``NOVALAB_SUITE_PROFILE`` naming
a JSON-lines file); the normal run never pays for it. For each test it writes one line:
its phases' wall times (setup, call, teardown, as pytest measured them) and what the
test process spent, in those phases, on the costs a test can share or avoid:

- ``cloud_start``: starting embedded clouds (``EmbeddedCloud.start``);
- ``boot``: boots through ``novalab.reference.deploy.boot.boot``, POST to ACTIVE and
  the trace collected (tests that post servers with their own client are not counted);
- ``subprocess``: waiting for child processes (``subprocess.run`` and ``Popen.wait``
  and ``communicate``), by program (``novalab``, ``openstack``, ``chromium``...);
- ``sleep``: fixed sleeps and polling, ``time.sleep`` on the test's own thread.

The wrappers are installed when the plugin loads, before any test module imports
``boot``, so ``from ... import boot`` takes the wrapped one. Costs can nest (a boot
inside a polling helper): the script reports each beside the total, never as a sum.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

OUT = os.environ.get("NOVALAB_SUITE_PROFILE")
_costs: dict[str, float] = defaultdict(float)
_counts: dict[str, int] = defaultdict(int)
_main = threading.main_thread()


_inside: set[str] = set()  # the cost families being timed now (main thread only)


def _timed(kind_of, function):
    """``function`` wrapped to add its wall time to ``_costs[kind_of(args)]``; a call
    inside one of its own family (``communicate`` inside ``run``) is not counted again."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if threading.current_thread() is not _main:
            return function(*args, **kwargs)
        kind = kind_of(args, kwargs)
        family = kind.split(":")[0]
        if family in _inside:
            return function(*args, **kwargs)
        _inside.add(family)
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            _inside.discard(family)
            _costs[kind] += time.perf_counter() - start
            _counts[kind] += 1

    return wrapper


def _program(args, kwargs) -> str:
    argv = kwargs.get("args", args[0] if args else "?")
    if isinstance(argv, (str, bytes, os.PathLike)):
        argv = [argv] if not kwargs.get("shell") else str(argv).split()
    argv = [str(a) for a in argv]
    name = Path(argv[0]).name if argv else "?"
    if name.startswith("python") and len(argv) > 2 and argv[1] == "-m":
        name = argv[2].split(".")[0]  # python -m novalab.labs.cli -> novalab
    return f"subprocess:{name}"


def _popen_program(args, kwargs) -> str:
    popen = args[0]
    return _program((popen.args,), {})


def _install() -> None:
    from novalab.reference.deploy import boot as boot_module
    from novalab.reference.deploy.embedded import EmbeddedCloud

    EmbeddedCloud.start = _timed(lambda a, k: "cloud_start", EmbeddedCloud.start)
    boot_module.boot = _timed(lambda a, k: "boot", boot_module.boot)
    subprocess.run = _timed(_program, subprocess.run)
    subprocess.Popen.wait = _timed(_popen_program, subprocess.Popen.wait)
    subprocess.Popen.communicate = _timed(_popen_program, subprocess.Popen.communicate)
    time.sleep = _timed(lambda a, k: "sleep", time.sleep)


if OUT:
    _install()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _costs.clear()
    _counts.clear()
    phases: dict[str, float] = {}
    item.stash[_PHASES] = phases
    yield
    if not OUT:
        return
    record = {"nodeid": item.nodeid, "phases": phases,
              "costs": {k: round(v, 4) for k, v in _costs.items()}, "counts": dict(_counts),
              "e2e": item.get_closest_marker("e2e") is not None,
              "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")}
    with open(OUT, "a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")


_PHASES = pytest.StashKey[dict]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    phases = item.stash.get(_PHASES, None)
    if phases is not None:
        phases[call.when] = round(call.duration, 4)
        report = outcome.get_result()
        if report.outcome != "passed" or call.when == "call":
            phases.setdefault("outcome", report.outcome)
