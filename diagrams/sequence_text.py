"""Sequence diagrams as text for other tools: Mermaid and PlantUML.

Both get the same participants and numbered arrows as the SVG. Arrow syntax:

=========  ==========  ========
style      Mermaid     PlantUML
=========  ==========  ========
call       ``->>``     ``->``
answer     ``-->>``    ``-->``
message    ``-)``      ``->>``
=========  ==========  ========

Missing steps and notes become comments (``%%`` and ``'``), so the drawing
stays the trace's while the text still says what is absent.
"""

from __future__ import annotations

import re

from novalab.diagrams.flows.model import ASYNC, RETURN
from novalab.diagrams.hosts import label as host_label
from novalab.diagrams.sequence import SequenceDiagram

_MERMAID_WORDS = {"end", "loop", "alt", "opt", "par", "note", "participant", "actor", "box",
                  "rect", "critical", "break", "else", "and", "activate", "deactivate",
                  "title", "autonumber", "link", "links", "create", "destroy", "over", "as"}


def _ids(diagram: SequenceDiagram) -> dict[str, str]:
    """A unique identifier per participant: lowercase letters, digits and underscores."""
    ids: dict[str, str] = {}
    for p in diagram.participants:
        base = re.sub(r"[^a-z0-9]+", "_", p.name.lower()).strip("_") or "p"
        if base[0].isdigit() or base in _MERMAID_WORDS:
            base = "p_" + base
        name, n = base, 2
        while name in ids.values():
            name, n = f"{base}_{n}", n + 1
        ids[p.name] = name
    return ids


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _mermaid_text(text: str) -> str:
    """Mermaid message text: ``#`` and ``;`` are syntax there, so use its entity codes."""
    return _one_line(text).replace("#", "#35;").replace(";", "#59;")


def _label(arrow) -> str:
    mark = " (out of order)" if arrow.out_of_order else ""
    return f"{arrow.number}. {arrow.text}{mark} (+{arrow.offset_ms:.3f} ms)"


def render_mermaid(diagram: SequenceDiagram) -> str:
    ids = _ids(diagram)
    heads = {RETURN: "-->>", ASYNC: "-)"}
    out = ["sequenceDiagram",
           f"    %% {_one_line(diagram.title)}",
           f"    %% {_one_line(diagram.subtitle)}"]
    for p in diagram.participants:
        keyword = "actor" if p.kind == "actor" else "participant"
        name = f"{p.name} {host_label(p.hosts)}" if p.hosts else p.name
        out.append(f"    {keyword} {ids[p.name]} as {_mermaid_text(name)}")
    for arrow in diagram.arrows:
        head = heads.get(arrow.style, "->>")
        out.append(f"    {ids[arrow.source]}{head}{ids[arrow.target]}: "
                   f"{_mermaid_text(_label(arrow))}")
    for number, text in diagram.missing:
        out.append(f"    %% MISSING {number}. {_one_line(text)}")
    for number, text, why in diagram.not_expected:
        out.append(f"    %% NOT EXPECTED {number}. {_one_line(text)} ({_one_line(why)})")
    for arrow in diagram.arrows:
        for note in arrow.notes:
            out.append(f"    %% note {arrow.number}: {_one_line(note)}")
    for note in diagram.notes:
        out.append(f"    %% note: {_one_line(note)}")
    return "\n".join(out) + "\n"


def _plantuml_text(text: str) -> str:
    return _one_line(text).replace("\\", "\\\\")


def _plantuml_keyword(p) -> str:
    if p.kind == "actor":
        return "actor"
    lowered = p.name.lower()
    if p.kind == "infra" and ("database" in lowered or "store" in lowered):
        return "database"
    if p.kind == "infra" and ("rabbitmq" in lowered or "broker" in lowered):
        return "queue"
    return "participant"


def render_plantuml(diagram: SequenceDiagram) -> str:
    ids = _ids(diagram)
    heads = {RETURN: "-->", ASYNC: "->>"}
    out = ["@startuml",
           f"title {_plantuml_text(diagram.title)}",
           f"' {_one_line(diagram.subtitle)}"]
    for p in diagram.participants:
        name = _plantuml_text(p.name) + (f"\\n{host_label(p.hosts)}" if p.hosts else "")
        out.append(f'{_plantuml_keyword(p)} "{name}" as {ids[p.name]}')
    for arrow in diagram.arrows:
        head = heads.get(arrow.style, "->")
        colour = "[#c62828]" if arrow.out_of_order else ""
        shaft = head[0] + colour + head[1:]  # "-[#c62828]>": PlantUML's coloured arrow
        out.append(f"{ids[arrow.source]} {shaft} {ids[arrow.target]} : "
                   f"{_plantuml_text(_label(arrow))}")
    for number, text in diagram.missing:
        out.append(f"' MISSING {number}. {_one_line(text)}")
    for number, text, why in diagram.not_expected:
        out.append(f"' NOT EXPECTED {number}. {_one_line(text)} ({_one_line(why)})")
    for arrow in diagram.arrows:
        for note in arrow.notes:
            out.append(f"' note {arrow.number}: {_one_line(note)}")
    for note in diagram.notes:
        out.append(f"' note: {_one_line(note)}")
    out.append("@enduml")
    return "\n".join(out) + "\n"
