"""Where each learner of a class stands in the course: ``GET /v1/class`` (admins only).

One row per learner and lab they tried, built from the attempts' records (newest
first): how many attempts, the newest grade of any of them, and whether the lab
is done (``passed``: some attempt passed), ``in progress`` or not (``no``). A
learner who tried nothing yet has one row, lab ``-``. ``novalab class status``
prints these rows; the trace site's class page (``/class``) shows them.
"""

from __future__ import annotations

from collections import defaultdict


def _state(attempts: list[dict]) -> str:
    if any(a["passed_at"] for a in attempts):
        return "passed"
    return "in progress" if any(a["finished_at"] is None for a in attempts) else "no"


def rows(learners: list[str], attempts: list[dict]) -> list[dict]:
    """The class's rows, by learner then lab; ``attempts`` newest first."""
    tried: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for attempt in attempts:
        tried[(attempt["user_name"], attempt["lab"])].append(attempt)
    found = []
    for user, lab in sorted(tried):
        mine = tried[(user, lab)]
        last = next((a["last_grade"] for a in mine if a.get("last_grade")), None)
        found.append({"learner": user, "lab": lab, "attempts": len(mine), "done": _state(mine),
                      "last_grade": last})
    idle = sorted(set(learners) - {user for user, _ in tried})
    found += [{"learner": name, "lab": "-", "attempts": 0, "done": "no", "last_grade": None}
              for name in idle]
    return found
