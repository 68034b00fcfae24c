"""The service's side of RPC: consume the target's queues, dispatch, reply.

An ``oslo_messaging`` RPC server listens on two queues of its target: ``topic``
(shared by every server of the service, so each request goes to one of them) and
``topic.server`` (this host only). Each request names a method; the
:class:`RPCDispatcher` finds it on the *endpoints* (Nova's ``ComputeManager``,
``ConductorManager``...) and calls it with the caller's ``RequestContext``.
Requests run in a thread pool, so a slow one does not hold up the queue. For a
call, the result (or the failure: class, module, message) is published back to
the caller's ``reply_to`` queue with its ``correlation_id``.

Tracing: each request runs in a CONSUMER ``process <queue>`` span whose parent is
the sender's context (extracted from the headers) and which also links to it, so
the endpoint's own spans nest under it; the reply is sent in a PRODUCER
``send <reply queue>`` span whose context travels back in the reply's headers.
"""

from __future__ import annotations

import functools
import logging
import threading
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from novalab.reference.common.context import RequestContext
from novalab.reference.common.exception import NovaLabException
from novalab.reference.rpc import serializer
from novalab.reference.rpc.client import span_attributes
from novalab.reference.rpc.target import Target
from novalab.reference.rpc.transport import (
    Message,
    MessageDeliveryFailure,
    MessageUndeliverable,
    Transport,
)
from novalab.tracing import propagation

LOG = logging.getLogger("novalab.rpc")

REPLY_TIMEOUT = 30.0


class NoSuchMethod(AttributeError):
    """No endpoint has a public method of that name (``oslo_messaging.NoSuchMethod``)."""

    def __init__(self, method: str):
        super().__init__(f"Endpoint does not support RPC method {method}")
        self.method = method


class RPCDispatcher:
    """Maps a method name to the first endpoint that has it, and calls it."""

    def __init__(self, endpoints: Iterable[object]):
        self.endpoints = list(endpoints)

    def lookup(self, method: str) -> Callable[..., Any]:
        if method and not method.startswith("_"):  # private methods are not RPC API
            for endpoint in self.endpoints:
                func = getattr(endpoint, method, None)
                if callable(func):
                    return func
        raise NoSuchMethod(method)

    def dispatch(self, context: dict, method: str, args: dict) -> Any:
        return self.lookup(method)(RequestContext.from_dict(context), **args)


def failure_of(exc: BaseException) -> dict:
    """What a caller needs to re-raise ``exc``: class name, module, message, kwargs."""
    failure = {"class": type(exc).__name__, "module": type(exc).__module__,
               "message": str(exc)}
    if isinstance(exc, NovaLabException) and exc.kwargs:
        failure["kwargs"] = exc.kwargs
    return failure


def _encode_reply(reply: dict) -> bytes:
    try:
        return serializer.dumps(reply)
    except TypeError as exc:  # a result or exception kwarg JSON cannot carry
        if "failure" in reply:
            reply["failure"].pop("kwargs", None)
            return serializer.dumps(reply)
        return serializer.dumps({"failure": failure_of(exc)})


class RPCServer:
    """Consumes ``topic`` and ``topic.server`` and dispatches to ``endpoints``."""

    def __init__(self, transport: Transport, target: Target, endpoints: Iterable[object], *,
                 tracer: trace.Tracer | None = None, max_workers: int = 8):
        self.transport = transport
        self.target = target
        self.dispatcher = RPCDispatcher(endpoints)
        self.tracer = tracer or trace.NoOpTracer()
        self.max_workers = max_workers
        self._executor: ThreadPoolExecutor | None = None
        self._tags: list[str] = []
        self._lock = threading.Lock()

    @property
    def queues(self) -> list[str]:
        """``topic``, and ``topic.server`` when the target names this server."""
        topic, server = self.target.topic, self.target.server
        return [topic, f"{topic}.{server}"] if server else [topic]

    def start(self) -> RPCServer:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    self.max_workers, thread_name_prefix=f"rpc-{self.target.routing_key}")
            if not self._tags:
                for queue in self.queues:  # the queue name is also its binding key
                    self._tags.append(self.transport.consume(
                        self.target.exchange, queue, queue,
                        functools.partial(self._on_message, queue)))
        return self

    def stop(self) -> None:
        """Stop taking requests; those already running carry on (see :meth:`wait`)."""
        with self._lock:
            tags, self._tags = self._tags, []
        for tag in tags:
            self.transport.cancel(tag)

    def wait(self) -> None:
        """Wait for the running requests to finish; call after :meth:`stop`."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)

    def _on_message(self, queue: str, message: Message) -> None:
        """Called by the transport's delivery thread: hand the request to the pool."""
        executor = self._executor
        try:
            if executor is None:
                raise RuntimeError("server stopped")
            executor.submit(self._process, queue, message)
        except RuntimeError:
            LOG.warning("Server for %s stopped: dropping message %s", queue, message.message_id)

    def _process(self, queue: str, message: Message) -> None:
        try:
            request = serializer.loads(message.body)
            method, context = request["method"], request.get("context") or {}
            args = request.get("args") or {}
        except (ValueError, KeyError, TypeError):
            LOG.error("Dropping malformed message %s on %s", message.message_id, queue)
            return
        try:
            self._run(queue, message, method, context, args)
        except Exception:
            LOG.exception("Failed to handle %s on %s", method, queue)

    def _run(self, queue: str, message: Message, method: str, context: dict,
             args: dict) -> None:
        style = "call" if message.reply_to else "cast"
        sender_context = propagation.extract(message.headers)
        sender = trace.get_current_span(sender_context).get_span_context()
        attributes = span_attributes(
            self.transport, operation="process", destination=queue,
            routing_key=message.routing_key, message=message, service=self.target.topic,
            method=method, style=style, context=context)
        with self.tracer.start_as_current_span(
                f"process {queue}", context=sender_context, kind=trace.SpanKind.CONSUMER,
                links=[trace.Link(sender)] if sender.is_valid else [],
                attributes=attributes, record_exception=False,
                set_status_on_exception=False) as span:
            try:
                reply = {"result": self.dispatcher.dispatch(context, method, args)}
            except Exception as exc:
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
                reply = {"failure": failure_of(exc)}
                if style == "cast":  # nobody else will hear of it
                    LOG.exception("RPC cast %s on %s failed", method, queue)
                else:
                    LOG.debug("RPC call %s on %s raised %r", method, queue, exc)
            if message.reply_to:
                self._reply(message, method, reply, context)

    def _reply(self, request: Message, method: str, reply: dict, context: dict) -> None:
        """Publish the reply to the caller's queue through the default exchange."""
        message = Message(body=_encode_reply(reply), message_id=uuid.uuid4().hex,
                          correlation_id=request.correlation_id)
        attributes = span_attributes(
            self.transport, operation="send", destination="", routing_key=request.reply_to,
            message=message, service=self.target.topic, method=method, style="reply",
            context=context)
        with self.tracer.start_as_current_span(f"send {request.reply_to}",
                                               kind=trace.SpanKind.PRODUCER,
                                               attributes=attributes) as span:
            propagation.inject(message.headers)
            try:
                # Transient and mandatory: the reply queue dies with its caller, and
                # if it is gone the broker says so instead of dropping the reply.
                self.transport.publish("", request.reply_to, message, persistent=False,
                                       mandatory=True, timeout=REPLY_TIMEOUT)
            except (MessageUndeliverable, MessageDeliveryFailure) as exc:
                span.set_status(Status(StatusCode.ERROR, str(exc)))
                LOG.warning("Reply to %s for %s not delivered (caller gone?): %s",
                            request.reply_to, method, exc)
