"""`novalab trace show --attributes`: a span's attributes and its events, under it."""

from __future__ import annotations

from novalab.tracing.cli import format_tree
from novalab.tracing.model import Event, Span, Trace

MS = 1_000_000


def test_events_are_printed_with_their_attributes_under_their_span():
    """The scheduler's decision is in the events of FilterScheduler._schedule: a learner
    reads which hosts each filter passed and how they were weighed from the CLI."""
    root = Span("t" * 32, "a" * 16, None, "FilterScheduler._schedule", "INTERNAL",
                "nova-scheduler", 0, 10 * MS, attributes={"nova.scheduler.hosts_considered": 2},
                events=(Event("filter", 2 * MS, {"nova.scheduler.filter": "RamFilter",
                                                 "nova.scheduler.passed_hosts":
                                                     ("compute-1", "compute-2")}),
                        Event("weigh", 3 * MS, {"nova.scheduler.chosen_host": "compute-2"})))
    lines = format_tree(Trace.of([root]), with_attributes=True).splitlines()
    assert lines[1].endswith(f"FilterScheduler._schedule  span {'a' * 16}")
    assert lines[2].strip() == "nova.scheduler.hosts_considered = 2"
    assert lines[3].strip() == "event filter at 2.0 ms"
    assert lines[4].strip() == "nova.scheduler.filter = RamFilter"
    assert lines[5].strip() == "nova.scheduler.passed_hosts = ('compute-1', 'compute-2')"
    assert lines[6].strip() == "event weigh at 3.0 ms"
    assert lines[7].strip() == "nova.scheduler.chosen_host = compute-2"
    # Nested deeper than the event line, which is as deep as the span's attributes.
    assert lines[4].index("nova") > lines[3].index("event") == lines[2].index("nova")
    assert "event" not in format_tree(Trace.of([root]))
    assert "span " + "a" * 16 not in format_tree(Trace.of([root]))
