"""What a trace shows to those who do not run the cloud: no one's address.

A SERVER span records who called it (OpenTelemetry's ``client.address`` and
``network.peer.address``, as the Flask instrumentation sets them). That is
normal, and an operator needs it; but on the metadata proxy the caller's
address *is* the guest's identity: the proxy finds the instance from the
address a request comes from (``reference/common/metadata_secret.py``). On one
machine, any local user who learns a guest's loopback address can bind it and
read that guest's ``user_data``. So admins see every attribute, and everyone
else sees these replaced by :data:`REDACTED`:

* the caller's address and port on SERVER and CONSUMER spans (``client.*``,
  ``network.peer.*`` and their older names): the one who called;
* anything that vouches for a guest to nova-api-metadata, wherever it is
  recorded: the headers ``X-Forwarded-For`` and ``X-Instance-ID-Signature``
  (``http.request.header.*``, when an instrumentation records headers).

The value is replaced, not dropped, so the page still shows that the
attribute exists. The flow check runs on what the viewer is given, and matches
no step on these attributes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from novalab.tracing import attributes as attr
from novalab.tracing.model import Span, frozen

REDACTED = "[admins only]"
# Who called a SERVER or CONSUMER span: current semantic conventions, then the names
# older instrumentations used.
CALLER = frozenset({attr.CLIENT_ADDRESS, "client.port", attr.NETWORK_PEER_ADDRESS,
                    attr.NETWORK_PEER_PORT, "net.peer.ip", "net.peer.port",
                    "net.sock.peer.addr", "net.sock.peer.port", "http.client_ip"})
# The metadata proxy's headers that say which guest asks (nova/api/metadata/handler.py).
GUEST_HEADERS = ("x-forwarded-for", "x-instance-id-signature")
HEADER_PREFIXES = ("http.request.header.", "http.response.header.")


def hidden(key: str, kind: str) -> bool:
    """Whether attribute ``key`` of a span of ``kind`` is for admins only."""
    if kind in ("SERVER", "CONSUMER") and key in CALLER:
        return True
    lowered = key.lower().replace("_", "-")
    return lowered.startswith(HEADER_PREFIXES) and lowered.endswith(GUEST_HEADERS)


def redacted(spans: Iterable[Span]) -> list[Span]:
    """``spans`` as a non-admin may see them (each span unchanged unless it must be)."""
    out = []
    for span in spans:
        keys = [k for k in span.attributes if hidden(k, span.kind)]
        if keys:
            span = dataclasses.replace(span, attributes=frozen(
                {**span.attributes, **dict.fromkeys(keys, REDACTED)}))
        out.append(span)
    return out
