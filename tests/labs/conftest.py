"""Report what the course costs the suite: the labs' share of CI time, every run."""

from __future__ import annotations

import sys


def pytest_terminal_summary(terminalreporter):
    course = sys.modules.get("test_course") or next(
        (m for name, m in sys.modules.items() if name.endswith("test_course")
         and hasattr(m, "TIMINGS")), None)
    timings = getattr(course, "TIMINGS", None)
    if not timings:
        return
    total = sum(sum(t.values()) for t in timings.values())
    terminalreporter.section("the lab course")
    terminalreporter.write_line(f"{len(timings)} labs in {total:.1f} s")
    for name, parts in timings.items():
        terminalreporter.write_line(f"  {name}: {sum(parts.values()):.1f} s ("
                                    + ", ".join(f"{k} {v:.1f} s" for k, v in parts.items())
                                    + ")")
