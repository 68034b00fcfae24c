"""CLIENT spans for calls into libvirt.

There is no OpenTelemetry instrumentation for libvirt-python, so novalab wraps
the objects instead: ``TracedConnection`` stands in front of a ``virConnect``
and ``TracedDomain`` in front of a ``virDomain``. Every method call becomes a
CLIENT span ``libvirt.<method>`` (``libvirt.defineXML``, ``libvirt.createWithFlags``)
carrying the ``rpc.*`` attributes, because each call is a request to libvirtd
(over its RPC protocol, or in-process for ``test:///``) that emits no spans of
its own. A failing call records the ``libvirtError``, sets status ERROR and
re-raises. Non-callable attributes pass straight through.
"""

from __future__ import annotations

import contextlib
import functools

import libvirt
from opentelemetry import trace

from novalab.tracing import attributes as attr


@contextlib.contextmanager
def client_span(tracer: trace.Tracer, method: str, uri: str):
    """A CLIENT span for one libvirt call (the SDK records exceptions and sets ERROR)."""
    attributes = {
        attr.RPC_SYSTEM: "libvirt",
        attr.RPC_METHOD: method,
        attr.PEER_SERVICE: "libvirt",
        attr.SERVER_ADDRESS: uri,
    }
    with tracer.start_as_current_span(f"libvirt.{method}", kind=trace.SpanKind.CLIENT,
                                      attributes=attributes) as span:
        yield span


# Calls that start a domain: what the hypervisor does while starting it happens
# inside their span (see ``on_domain_start``).
_STARTS = ("create", "createWithFlags")


class _TracedProxy:
    """Forwards attribute access to ``_target``, wrapping method calls in spans.

    ``on_domain_start(domain)``, if given, runs inside the span of a call that
    starts a domain, after libvirt returned: the place for work the hypervisor
    does as a guest starts (novalab's stand-in for QEMU opening network disks
    on a hypervisor that runs no QEMU).
    """

    def __init__(self, target, tracer: trace.Tracer, uri: str, on_domain_start=None):
        self._target = target
        self._tracer = tracer
        self._uri = uri
        self._on_domain_start = on_domain_start

    def __getattr__(self, name):
        if name.startswith("__") or name in ("_target", "_tracer", "_uri", "_on_domain_start"):
            raise AttributeError(name)  # no span for copy/pickle probes; no recursion
        value = getattr(self._target, name)
        if not callable(value):
            return value

        @functools.wraps(value)
        def call(*args, **kwargs):
            with client_span(self._tracer, name, self._uri):
                result = self._wrap(value(*args, **kwargs))
                if name in _STARTS and self._on_domain_start is not None:
                    self._on_domain_start(self._target)
                return result

        return call

    def _wrap(self, result):
        """Domains handed out by libvirt come back traced too."""
        if isinstance(result, libvirt.virDomain):
            return TracedDomain(result, self._tracer, self._uri, self._on_domain_start)
        if isinstance(result, list) and result and isinstance(result[0], libvirt.virDomain):
            return [TracedDomain(dom, self._tracer, self._uri, self._on_domain_start)
                    for dom in result]
        return result

    def __repr__(self):
        return f"<{type(self).__name__} {self._target!r} {self._uri}>"


class TracedConnection(_TracedProxy):
    """A ``virConnect`` whose method calls are CLIENT spans."""

    def __init__(self, conn: libvirt.virConnect, tracer: trace.Tracer, uri: str,
                 on_domain_start=None):
        super().__init__(conn, tracer, uri, on_domain_start)


class TracedDomain(_TracedProxy):
    """A ``virDomain`` whose method calls are CLIENT spans."""

    def __init__(self, domain: libvirt.virDomain, tracer: trace.Tracer, uri: str,
                 on_domain_start=None):
        super().__init__(domain, tracer, uri, on_domain_start)
