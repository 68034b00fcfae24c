"""What a span *is*, in the words diagrams use: SQL, HTTP, messaging, peers, source code.

Small functions over one ``Span`` that read the OpenTelemetry semantic
conventions (stable names first, then the older ones) so that the rules, the
sequence diagrams and the call graph describe spans the same way.
"""

from __future__ import annotations

import re

from novalab.diagrams.model import Span

_SQL = re.compile(r"^\s*(?:SELECT\b.*?\bFROM|INSERT\s+INTO|UPDATE|DELETE\s+FROM|"
                  r"INSERT\s+OR\s+\w+\s+INTO|REPLACE\s+INTO)\s+[`\"\[]?(\w+)", re.I | re.S)


def sql_statement(span: Span) -> tuple[str, str] | None:
    """``("INSERT", "instances")`` for a database CLIENT span, else None."""
    if span.kind != "CLIENT" or not (span.get("db.system.name") or span.get("db.system")):
        return None
    text = str(span.get("db.query.text") or span.get("db.statement") or "")
    operation = (text.split(None, 1) or [""])[0].upper() or \
        str(span.get("db.operation.name") or span.name).split(" ", 1)[0].upper()
    table = span.get("db.collection.name")
    if not table:
        found = _SQL.match(text)
        table = found.group(1) if found else ""
    return operation, str(table).lower()


def http_method(span: Span) -> str:
    return str(span.get("http.request.method") or span.get("http.method") or "").upper()


def http_route(span: Span) -> str:
    """The route template of a SERVER span (``/v2.1/servers/<server_id>``), else its path."""
    route = span.get("http.route")
    if route:
        return str(route)
    parts = span.name.split(" ", 1)
    if len(parts) == 2 and parts[1].startswith("/"):
        return parts[1]
    return str(span.get("url.path") or span.get("http.target") or "")


def is_messaging(span: Span) -> bool:
    return bool(span.get("messaging.system")) and span.kind in ("PRODUCER", "CONSUMER")


def rpc_style(span: Span) -> str:
    """``cast``, ``call`` or ``reply`` (oslo.messaging's words) for a messaging span."""
    return str(span.get("novalab.rpc.style") or "")


def destination(span: Span) -> str:
    """Where a message went: the routing key, else the destination name."""
    return str(span.get("messaging.rabbitmq.destination.routing_key")
               or span.get("messaging.destination.name") or "")


def peer(span: Span) -> str:
    """The infrastructure a CLIENT or PRODUCER span talks to, in lifeline-neutral words."""
    if span.kind == "PRODUCER" or (span.kind == "CONSUMER" and is_messaging(span)):
        return "broker"
    if span.kind != "CLIENT":
        return ""
    if span.get("db.system.name") or span.get("db.system"):
        return "database"
    return str(span.get("peer.service") or "")




def messaging_operation(span: Span) -> str:
    """``send``, ``process`` or ``receive`` for a messaging span."""
    return str(span.get("messaging.operation.type") or span.get("messaging.operation.name")
               or span.name.split(" ", 1)[0])


def describe(span: Span) -> str:
    """A short label: ``INSERT instances``, ``cast run_instance``, ``POST /v2.1/servers``."""
    statement = sql_statement(span)
    if statement is not None:
        return f"{statement[0]} {statement[1]}".strip()
    if is_messaging(span):
        method = span.get("rpc.method") or destination(span)
        operation = messaging_operation(span)
        style = rpc_style(span)
        if span.kind == "PRODUCER":
            return f"{style or 'send'} {method}".strip()
        return f"{'reply' if operation == 'receive' else operation} {method}".strip()
    if span.get("rpc.system") and span.get("rpc.method") and span.kind in ("CLIENT", "SERVER"):
        return f"{span.get('rpc.system')}.{span.get('rpc.method')}"
    if span.kind == "CLIENT" and http_method(span):
        url = str(span.get("url.full") or "")
        path = re.sub(r"^[a-z]+://[^/]+", "", url).split("?", 1)[0]
        return f"{http_method(span)} {path}".strip()
    return span.name


UPSTREAM_URL = "novalab.upstream.url"


def upstream_of(span: Span, trace) -> Span | None:
    """The span that links ``span`` to upstream source code (``novalab.upstream.url``).

    The span itself if it has the link; else, for a SERVER or CONSUMER span,
    the first span below it in the same service that has one (the controller or
    manager method that handled it); else the nearest ancestor in the same
    service that has one (the method that made the call).
    """
    if span.get(UPSTREAM_URL):
        return span
    if span.kind in ("SERVER", "CONSUMER"):
        for below in trace.descendants(span):
            if below.service == span.service and below.get(UPSTREAM_URL):
                return below
    for above in trace.ancestors(span):
        if above.service != span.service:
            break
        if above.get(UPSTREAM_URL):
            return above
    return None
