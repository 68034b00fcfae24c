"""Write docs/perf/test-durations.md: how long the suite takes, and where the time goes.

Runs pytest with the ``suite_profile`` plugin (tests/suite_profile.py), which records
for every test its phases' wall times and what the test process spent on cloud
start-ups, boots, child processes (by program) and its own sleeps; then renders the
table by module (slowest first) and the slowest tests.

    .venv/bin/python scripts/test_durations.py                    # the whole suite, as `make test`
    .venv/bin/python scripts/test_durations.py -- -m "not e2e"    # any pytest arguments after --
    .venv/bin/python scripts/test_durations.py --from out/profile.jsonl   # render a recorded run

Wall time is what the run took on this machine, as it was at the time: read the
figures as shares, not promises (the machine is shared and noisy).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "docs" / "perf" / "test-durations.md"
DEFAULT_PROFILE = ROOT / "out" / "test-profile.jsonl"
COSTS = ("cloud_start", "boot", "subprocess", "sleep")


def run_pytest(profile: Path, pytest_args: list[str]) -> tuple[float, int]:
    """Run the suite with the profile plugin: ``(wall seconds, pytest's exit code)``."""
    profile.parent.mkdir(parents=True, exist_ok=True)
    profile.unlink(missing_ok=True)
    env = dict(os.environ, NOVALAB_SUITE_PROFILE=str(profile))
    start = time.monotonic()
    code = subprocess.call([str(ROOT / ".venv" / "bin" / "pytest"), "-p", "suite_profile",
                            *pytest_args], cwd=ROOT, env=env)
    return time.monotonic() - start, code


def load(profile: Path) -> list[dict]:
    return [json.loads(line) for line in profile.read_text().splitlines() if line.strip()]


def total(record: dict) -> float:
    phases = record["phases"]
    return sum(phases.get(p, 0.0) for p in ("setup", "call", "teardown"))


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _of_kind(values: dict, kind: str) -> float:
    """``values[kind]``; for ``subprocess``, the sum over every ``subprocess:PROGRAM``."""
    if kind == "subprocess":
        return sum(v for k, v in values.items() if k.startswith("subprocess:"))
    return values.get(kind, 0)


def cost(record: dict, kind: str) -> float:
    return _of_kind(record["costs"], kind)


def count(record: dict, kind: str) -> int:
    return _of_kind(record["counts"], kind)


def by_module_seconds(records: list[dict]) -> dict[str, float]:
    """Each module's summed test time, slowest first."""
    spent: dict[str, float] = defaultdict(float)
    for record in records:
        spent[module_of(record["nodeid"])] += total(record)
    return {m: round(v, 1) for m, v in sorted(spent.items(), key=lambda kv: -kv[1])}


def counted(group: list[dict], kind: str) -> str:
    """``"N (seconds)"`` of one cost over a module's tests, ``-`` if none."""
    times = sum(count(r, kind) for r in group)
    return f"{times} ({sum(cost(r, kind) for r in group):,.1f})" if times else "-"


def seconds(value: float) -> str:
    return f"{value:,.1f}" if value else "-"


def render(records: list[dict], wall: float | None, args: list[str]) -> str:
    by_module: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        by_module[module_of(record["nodeid"])].append(record)
    summed = sum(total(r) for r in records)
    outcomes = Counter(r["phases"].get("outcome", "passed") for r in records)
    workers = sorted({r.get("worker", "main") for r in records})
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    lines = [
        "# Test durations",
        "",
        "Written by `scripts/test_durations.py` (pytest with `tests/suite_profile.py`); "
        "rerun it after a change that adds tests or time.",
        "",
        f"- run: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC at {commit or '?'}, "
        f"`pytest {' '.join(args)}`".rstrip() + f", {len(workers)} worker(s)",
        f"- tests: {len(records):,} ("
        + ", ".join(f"{n:,} {o}" for o, n in sorted(outcomes.items())) + ")",
        f"- wall time: {seconds(wall) + ' s' if wall else 'not measured'}; "
        f"test time summed over tests: {summed:,.1f} s",
        "",
        "Where the test process's time went, summed over every test (a cost can sit inside "
        "another, e.g. a sleep while polling a boot, so these overlap and are not added up):",
        "",
        "| cost | seconds | share of summed test time | count |",
        "|---|---:|---:|---:|",
    ]
    for kind in COSTS:
        value = sum(cost(r, kind) for r in records)
        times = sum(count(r, kind) for r in records)
        share = f"{value / summed:.0%}" if summed else "-"
        lines.append(f"| {kind.replace('_', ' ')} | {seconds(value)} | {share} | {times:,} |")
    programs: Counter = Counter()
    for record in records:
        for key, value in record["costs"].items():
            if key.startswith("subprocess:"):
                programs[key.removeprefix("subprocess:")] += value
    if programs:
        lines += ["", "Child processes by program (seconds waited): " + ", ".join(
            f"{name} {value:,.1f}" for name, value in programs.most_common(8)) + "."]
    lines += [
        "",
        "## By module, slowest first",
        "",
        "`e2e`: the module starts a `serve`/`up` cloud, a real CLI, Chromium or private "
        "services; `make test-fast` leaves it out.",
        "",
        "| module | e2e | tests | seconds | share | cloud starts (s) | `boot()`s (s) | "
        "child processes (s) | sleeps (s) |",
        "|---|:-:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    modules = [(module, by_module[module]) for module in by_module_seconds(records)]
    for module, group in modules:
        spent = sum(total(r) for r in group)
        lines.append(
            f"| {module} | {'e2e' if any(r.get('e2e') for r in group) else ''} | "
            f"{len(group)} | {spent:,.1f} | {spent / summed:.1%} | "
            f"{counted(group, 'cloud_start')} | {counted(group, 'boot')} | "
            f"{seconds(sum(cost(r, 'subprocess') for r in group))} | "
            f"{seconds(sum(cost(r, 'sleep') for r in group))} |")
    slowest = sorted(records, key=total, reverse=True)[:25]
    lines += ["", "## The 25 slowest tests (setup + call + teardown)", "",
              "| test | seconds | setup | call | teardown |", "|---|---:|---:|---:|---:|"]
    for record in slowest:
        phases = record["phases"]
        lines.append(f"| {record['nodeid']} | {total(record):,.1f} | "
                     + " | ".join(f"{phases.get(p, 0.0):,.1f}"
                                  for p in ("setup", "call", "teardown")) + " |")
    e2e = [m for m, group in modules if any(r.get("e2e") for r in group)]
    lines += ["", f"## The e2e modules ({len(e2e)})", ""]
    lines += [f"- {module}" for module in sorted(e2e)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from", dest="source", type=Path,
                        help="render a recorded profile (JSON lines) instead of running pytest")
    parser.add_argument("--profile", type=Path, default=DEFAULT_PROFILE,
                        help=f"where the run records its profile (default: {DEFAULT_PROFILE})")
    parser.add_argument("--wall", type=float, help="with --from: the run's wall time in seconds")
    parser.add_argument("-o", "--out", type=Path, default=DEFAULT_OUT,
                        help="the Markdown file to write (default: docs/perf/test-durations.md)")
    parser.add_argument("pytest_args", nargs="*", help="arguments for pytest, after --")
    options = parser.parse_args(argv)
    code = 0
    wall = options.wall
    if options.source:
        records = load(options.source)
    else:
        wall, code = run_pytest(options.profile, options.pytest_args)
        records = load(options.profile)
    if not records:
        print("test_durations: the run recorded no test", file=sys.stderr)
        return code or 1
    options.out.write_text(render(records, wall, options.pytest_args))
    # tests/conftest.py starts the slowest modules first from this file.
    module_seconds = options.out.with_suffix(".json")
    module_seconds.write_text(json.dumps({"modules": by_module_seconds(records)}, indent=1)
                              + "\n")
    print(f"test_durations: {len(records)} tests, wrote {options.out} and {module_seconds}")
    return code


if __name__ == "__main__":
    sys.exit(main())
