"""What checks are given: a grade reads each boot's trace once, however many checks ask."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from novalab.labs.cloud import Cloud
from novalab.labs.course import find
from novalab.labs.grading import Context, Fail
from novalab.tracing.model import Span
from novalab.tracing.store import NoTrace


class Store:
    """A trace store that counts its reads."""

    def __init__(self, spans=None):
        self.spans, self.reads = spans, 0

    def select(self, **words):
        self.reads += 1
        if self.spans is None:
            raise NoTrace("nothing yet")
        return SimpleNamespace(spans=self.spans)


def context(store: Store) -> Context:
    ctx = Context(lab=find("00"), cloud=Cloud("lab", Path("/nonexistent"), {}, "pw"),
                  user="demo", password="pw", project="demo", workdir=Path("/nonexistent"))
    ctx.__dict__["store"] = store  # the cached property, as the checks see it
    ctx.server = lambda name: {"id": "a5c1d7e0", "name": name}
    return ctx


def test_each_boot_is_read_once_per_grade():
    span = Span("ab" * 16, "cd" * 8, None, "POST /v2.1/servers", "SERVER", "nova-api", 1, 2)
    store = Store([span])
    ctx = context(store)
    assert ctx.boot("vm").trace_id == "ab" * 16
    assert ctx.flow("vm") is ctx.flow("vm")
    assert store.reads == 1


def test_a_boot_without_a_trace_fails_every_check_that_asks_but_is_looked_for_once():
    store = Store(None)
    ctx = context(store)
    for _ in range(3):
        with pytest.raises(Fail, match="no trace of the boot of vm"):
            ctx.flow("vm")
    assert store.reads == 1
