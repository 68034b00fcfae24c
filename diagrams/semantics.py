"""What a span *is*, in the words diagrams use: SQL, HTTP, messaging, peers, source code.

Small functions over one ``Span`` that read the OpenTelemetry semantic
conventions (stable names first, then the older ones) so that the rules, the
sequence diagrams and the call graph describe spans the same way.
"""

from __future__ import annotations

import re

from novalab.diagrams.model import Span
from novalab.tracing import attributes as attr

_SQL = re.compile(r"^\s*(?:SELECT\b.*?\bFROM|INSERT\s+INTO|UPDATE|DELETE\s+FROM|"
                  r"INSERT\s+OR\s+\w+\s+INTO|REPLACE\s+INTO)\s+[`\"\[]?(\w+)", re.I | re.S)


def sql_statement(span: Span) -> tuple[str, str] | None:
    """``("INSERT", "instances")`` for a database CLIENT span, else None."""
    if span.kind != "CLIENT" or not (span.get(attr.DB_SYSTEM_NAME) or span.get(attr.DB_SYSTEM)):
        return None
    text = str(span.get(attr.DB_QUERY_TEXT) or span.get(attr.DB_STATEMENT) or "")
    operation = (text.split(None, 1) or [""])[0].upper() or \
        str(span.get(attr.DB_OPERATION_NAME) or span.name).split(" ", 1)[0].upper()
    table = span.get(attr.DB_COLLECTION_NAME)
    if not table:
        found = _SQL.match(text)
        table = found.group(1) if found else ""
    return operation, str(table).lower()


def http_method(span: Span) -> str:
    return str(span.get(attr.HTTP_REQUEST_METHOD) or span.get(attr.HTTP_METHOD) or "").upper()


def http_route(span: Span) -> str:
    """The route template of a SERVER span (``/v2.1/servers/<server_id>``), else its path."""
    route = span.get(attr.HTTP_ROUTE)
    if route:
        return str(route)
    parts = span.name.split(" ", 1)
    if len(parts) == 2 and parts[1].startswith("/"):
        return parts[1]
    return str(span.get(attr.URL_PATH) or span.get(attr.HTTP_TARGET) or "")


def is_messaging(span: Span) -> bool:
    return bool(span.get(attr.MESSAGING_SYSTEM)) and span.kind in ("PRODUCER", "CONSUMER")


def rpc_style(span: Span) -> str:
    """``cast``, ``call`` or ``reply`` (oslo.messaging's words) for a messaging span."""
    return str(span.get(attr.NOVALAB_RPC_STYLE) or "")


def destination(span: Span) -> str:
    """Where a message went: the routing key, else the destination name."""
    return str(span.get(attr.MESSAGING_ROUTING_KEY)
               or span.get(attr.MESSAGING_DESTINATION_NAME) or "")


# Services that are infrastructure with spans of their own rather than OpenStack services:
# the hypervisor (the QEMU/KVM process libvirt runs for a guest; novalab's stand-in for it).
HYPERVISOR_SERVICES = ("qemu-kvm",)


def is_hypervisor(service: str) -> bool:
    """Do ``service``'s spans stand for the hypervisor (QEMU) rather than a service?"""
    return service in HYPERVISOR_SERVICES


def peer(span: Span) -> str:
    """The infrastructure a CLIENT or PRODUCER span talks to, in lifeline-neutral words."""
    if span.kind == "PRODUCER" or (span.kind == "CONSUMER" and is_messaging(span)):
        return "broker"
    if span.kind != "CLIENT":
        return ""
    if span.get(attr.DB_SYSTEM_NAME) or span.get(attr.DB_SYSTEM):
        return "database"
    return str(span.get(attr.PEER_SERVICE) or "")




def messaging_operation(span: Span) -> str:
    """``send``, ``process`` or ``receive`` for a messaging span."""
    return str(span.get(attr.MESSAGING_OPERATION_TYPE) or span.get(attr.MESSAGING_OPERATION_NAME)
               or span.name.split(" ", 1)[0])


def describe(span: Span) -> str:
    """A short label: ``INSERT instances``, ``cast run_instance``, ``POST /v2.1/servers``."""
    statement = sql_statement(span)
    if statement is not None:
        return f"{statement[0]} {statement[1]}".strip()
    if is_messaging(span):
        method = span.get(attr.RPC_METHOD) or destination(span)
        operation = messaging_operation(span)
        style = rpc_style(span)
        if span.kind == "PRODUCER":
            return f"{style or 'send'} {method}".strip()
        return f"{'reply' if operation == 'receive' else operation} {method}".strip()
    system, method = span.get(attr.RPC_SYSTEM), span.get(attr.RPC_METHOD)
    if system and method and span.kind in ("CLIENT", "SERVER"):
        return f"{system}.{method}"
    if span.kind == "CLIENT" and http_method(span):
        url = str(span.get(attr.URL_FULL) or "")
        path = re.sub(r"^[a-z]+://[^/]+", "", url).split("?", 1)[0]
        return f"{http_method(span)} {path}".strip()
    return span.name


def upstream_of(span: Span, trace) -> Span | None:
    """The span that links ``span`` to upstream source code (``novalab.upstream.url``).

    The span itself if it has the link; else, for a SERVER or CONSUMER span,
    the first span below it in the same service that has one (the controller or
    manager method that handled it); else the nearest ancestor in the same
    service that has one (the method that made the call).
    """
    if span.get(attr.UPSTREAM_URL):
        return span
    if span.kind in ("SERVER", "CONSUMER"):
        for below in trace.descendants(span):
            if below.service == span.service and below.get(attr.UPSTREAM_URL):
                return below
    for above in trace.ancestors(span):
        if above.service != span.service:
            break
        if above.get(attr.UPSTREAM_URL):
            return above
    return None
