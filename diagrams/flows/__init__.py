"""Flows: a table of numbered steps as data, with a rule per step that finds its span.

``get_flow("classic")`` is the 58-step "launch an instance" table. A new flow
is a module that builds a ``Flow`` (see ``model.py``) and one line here.
"""

from __future__ import annotations

from novalab.diagrams.flows.model import Flow


def _classic() -> Flow:
    from novalab.diagrams.flows.classic import FLOW

    return FLOW


FLOWS = {"classic": _classic}


def get_flow(name: str = "classic") -> Flow:
    try:
        return FLOWS[name]()
    except KeyError:
        raise KeyError(f"unknown flow {name!r}; known: {', '.join(sorted(FLOWS))}") from None
