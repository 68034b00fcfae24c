"""``GET /servers?name=...``: a regular expression, matched without backtracking.

Upstream hands the ``name`` filter to the database's regular expression operator
(``REGEXP``, PostgreSQL's ``~``, or Python's ``re`` on SQLite). Python's engine
backtracks: a server named ``aaaa…`` and ``?name=(a|aa)*$b`` keep a worker
busy for longer than the universe is old, and ``.*.*.*…x`` for a polynomial
as bad. So novalab accepts the part of the syntax that names are searched with
(``openstack server list --name web``, ``^web``, ``-1$``, ``w.b``, ``web.*-1``,
``\\.`` for a literal dot) and matches it in time linear in the name times the
pattern; anything else (groups, classes, ``|``, ``+``, ``?``, braces) is a 400
saying what is supported.
"""

from __future__ import annotations

from collections.abc import Callable

ANY = None  # "." : any one character
SUPPORTED = "literal text, '.', '.*', a leading '^' and a trailing '$'"
_SPECIAL = set("*+?{}()[]|^$")


class UnsupportedPattern(ValueError):
    pass


def compile_filter(pattern: str) -> Callable[[str], bool]:
    """A predicate telling whether a name matches ``pattern`` somewhere (as re.search)."""
    anchored_start = pattern.startswith("^")
    body = pattern[1:] if anchored_start else pattern
    anchored_end = body.endswith("$") and not body.endswith("\\$")
    if anchored_end:
        body = body[:-1]
    segments = _segments(body, pattern)
    return lambda name: _matches(segments, anchored_start, anchored_end, name)


def _segments(body: str, pattern: str) -> list[list[str | None]]:
    """The pattern between its ``.*``s: each a list of characters or ``ANY``."""
    segments: list[list[str | None]] = [[]]
    index = 0
    while index < len(body):
        char = body[index]
        if char == "\\":
            if index + 1 == len(body) or body[index + 1].isalnum():
                raise UnsupportedPattern(
                    f"name filter {pattern[:80]!r}: only punctuation may be escaped; "
                    f"supported are {SUPPORTED}")
            segments[-1].append(body[index + 1])
            index += 2
        elif char == "." and body[index + 1:index + 2] == "*":
            segments.append([])
            index += 2
        elif char == ".":
            segments[-1].append(ANY)
            index += 1
        elif char in _SPECIAL:
            raise UnsupportedPattern(
                f"name filter {pattern[:80]!r}: {char!r} is not supported; supported are "
                f"{SUPPORTED}")
        else:
            segments[-1].append(char)
            index += 1
    return segments


def _fits(segment, name: str, at: int) -> bool:
    return at + len(segment) <= len(name) and all(
        want is ANY or want == name[at + offset] for offset, want in enumerate(segment))


def _find(segment, name: str, start: int, stop: int) -> int:
    """The first position in ``[start, stop - len(segment)]`` where ``segment`` fits."""
    for at in range(start, stop - len(segment) + 1):
        if _fits(segment, name, at):
            return at
    return -1


def _matches(segments, anchored_start: bool, anchored_end: bool, name: str) -> bool:
    if len(segments) == 1 and anchored_start and anchored_end:
        return len(name) == len(segments[0]) and _fits(segments[0], name, 0)
    first, middle = (segments[0], segments[1:]) if anchored_start else ([], segments)
    last, middle = (middle[-1], middle[:-1]) if anchored_end else ([], middle)
    if not _fits(first, name, 0):
        return False
    position, stop = len(first), len(name) - len(last)
    if stop < position:
        return False
    # Between the two ends, the leftmost place for each piece is never a worse choice.
    for segment in middle:
        found = _find(segment, name, position, stop)
        if found < 0:
            return False
        position = found + len(segment)
    return _fits(last, name, stop)
