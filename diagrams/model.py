"""The trace model the diagrams are drawn from: ``Span``, ``Trace`` and friends.

It lives in ``novalab.tracing.model``, below both the trace store and the
diagrams, so that every reader of spans (``trace list``, ``flow check``, the
diagrams, the web page) shares one span record; this module names it for the
diagram code.
"""

from novalab.tracing.model import EMPTY, KINDS, Event, Link, Span, Trace, frozen

__all__ = ["EMPTY", "KINDS", "Event", "Link", "Span", "Trace", "frozen"]
