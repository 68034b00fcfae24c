"""The caller's side of RPC: ``cast`` sends and forgets, ``call`` waits for the reply.

Like ``oslo_messaging.RPCClient`` (Nova wraps one in each ``rpcapi.py``), a client
is bound to a transport and a target; ``prepare()`` gives a copy aimed elsewhere
(one server, another topic, another timeout). A call:

1. registers a correlation id with the transport, so the reply can find it;
2. publishes ``{"method", "args", "context"}`` with ``reply_to`` = our reply queue;
3. waits; no reply in time raises ``MessagingTimeout`` (the request may still run);
4. returns the result, or re-raises the remote failure: a class from
   ``novalab.reference.common.exception`` is rebuilt as itself (so the API can
   turn ``InstanceNotFound`` into a 404), anything else becomes ``RemoteError``.

Tracing, per the OpenTelemetry messaging conventions: a PRODUCER ``send <key>``
span around the publish (its context injected into the message headers); for a
call, then a CONSUMER ``receive <reply queue>`` span covering the wait, linked to
the PRODUCER span of the reply the server sent.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from opentelemetry import trace

from novalab.reference.common import exception
from novalab.reference.common.context import RequestContext
from novalab.reference.rpc import serializer
from novalab.reference.rpc.target import Target
from novalab.reference.rpc.transport import Message, Transport
from novalab.tracing import attributes as attr
from novalab.tracing import propagation

RPC_SYSTEM = "oslo.messaging"


def span_attributes(transport: Transport, *, operation: str, destination: str,
                    routing_key: str | None, message: Message, service: str, method: str,
                    style: str, context: dict) -> dict[str, Any]:
    """The messaging and rpc attributes of a send, process or receive span.

    ``context`` is the request context as it travels: its request ids go on the
    span, so a trace and a service's logs (or ``server event list``) meet.
    """
    values = {
        attr.MESSAGING_SYSTEM: transport.system,
        attr.MESSAGING_OPERATION_NAME: operation,
        attr.MESSAGING_OPERATION_TYPE: operation,
        attr.MESSAGING_DESTINATION_NAME: destination,  # "" is the default exchange
        attr.MESSAGING_ROUTING_KEY: routing_key or None,
        attr.MESSAGING_MESSAGE_ID: message.message_id,
        attr.MESSAGING_CONVERSATION_ID: message.correlation_id,
        attr.MESSAGING_BODY_SIZE: len(message.body),
        attr.RPC_SYSTEM: RPC_SYSTEM,
        attr.RPC_SERVICE: service,
        attr.RPC_METHOD: method,
        attr.NOVALAB_RPC_STYLE: style,
        attr.OPENSTACK_REQUEST_ID: context.get("request_id"),
        attr.OPENSTACK_GLOBAL_REQUEST_ID: context.get("global_request_id"),
        attr.SERVER_ADDRESS: transport.server_address,
        attr.SERVER_PORT: transport.server_port,
    }
    return {key: value for key, value in values.items() if value is not None}


def context_dict(ctxt: RequestContext | dict | None) -> dict:
    """The request context as it travels: a plain dict."""
    if ctxt is None:
        return {}
    return ctxt.to_dict() if isinstance(ctxt, RequestContext) else dict(ctxt)


def rebuild_exception(failure: dict) -> Exception:
    """The caller-side exception for a failure the server sent back."""
    name = failure.get("class", "Exception")
    message = failure.get("message", "")
    cls = exception.find(name)
    if cls is not None:
        return cls(message, **failure.get("kwargs", {}))
    return exception.RemoteError(exc_type=name, value=message)


class RPCClient:
    """Sends casts and calls to a :class:`Target` over a :class:`Transport`."""

    def __init__(self, transport: Transport, target: Target, *,
                 tracer: trace.Tracer | None = None, timeout: float = 60):
        self.transport = transport
        self.target = target
        self.tracer = tracer or trace.NoOpTracer()
        self.timeout = timeout

    def prepare(self, server: str | None = None, topic: str | None = None,
                timeout: float | None = None) -> RPCClient:
        """A copy of this client aimed at another server, topic or timeout."""
        target = dataclasses.replace(
            self.target,
            topic=topic or self.target.topic,
            server=server if server is not None else self.target.server,
        )
        return RPCClient(self.transport, target, tracer=self.tracer,
                         timeout=self.timeout if timeout is None else timeout)

    def cast(self, ctxt: RequestContext | dict, method: str, **kwargs) -> None:
        """Send ``method(ctxt, **kwargs)`` to one server; do not wait for it to run."""
        self._send(ctxt, method, kwargs, style="cast", timeout=self.timeout)

    def call(self, ctxt: RequestContext | dict, method: str, **kwargs) -> Any:
        """Run ``method(ctxt, **kwargs)`` on one server and return its result."""
        deadline = time.monotonic() + self.timeout
        correlation_id = uuid.uuid4().hex
        reply_queue = self.transport.reply_queue
        pending = self.transport.expect_reply(correlation_id)  # before the reply can come
        try:
            request = self._send(ctxt, method, kwargs, style="call", timeout=self.timeout,
                                 correlation_id=correlation_id, reply_to=reply_queue)
            wait_start = time.time_ns()
            try:
                reply = pending.result(timeout=max(0.0, deadline - time.monotonic()))
            except FutureTimeout:
                reply = None
        finally:
            self.transport.forget_reply(correlation_id)
        return self._receive(request, reply, reply_queue, method, context_dict(ctxt),
                             wait_start)

    def _send(self, ctxt, method: str, kwargs: dict, *, style: str, timeout: float,
              correlation_id: str | None = None, reply_to: str | None = None) -> Message:
        context = context_dict(ctxt)
        message = Message(
            body=serializer.dumps({"method": method, "args": kwargs, "context": context}),
            message_id=uuid.uuid4().hex,
            correlation_id=correlation_id,
            reply_to=reply_to,
        )
        target = self.target
        attributes = span_attributes(
            self.transport, operation="send", destination=target.exchange,
            routing_key=target.routing_key, message=message, service=target.topic,
            method=method, style=style, context=context)
        with self.tracer.start_as_current_span(f"send {target.routing_key}",
                                               kind=trace.SpanKind.PRODUCER,
                                               attributes=attributes):
            propagation.inject(message.headers)  # the PRODUCER span is current here
            self.transport.publish(target.exchange, target.routing_key, message,
                                   timeout=timeout)
        return message

    def _receive(self, request: Message, reply: Message | None, reply_queue: str,
                 method: str, context: dict, wait_start: int) -> Any:
        """End the wait: a CONSUMER span from ``wait_start``, linked to the reply's sender.

        The span is made once the reply is here, because a link is best added at
        creation (samplers see it); ``start_time`` backdates it to the wait's start.
        """
        links = []
        if reply is not None:
            sender = trace.get_current_span(propagation.extract(reply.headers))
            if sender.get_span_context().is_valid:
                links.append(trace.Link(sender.get_span_context()))
        attributes = span_attributes(
            self.transport, operation="receive", destination=reply_queue, routing_key=None,
            message=reply or dataclasses.replace(request, message_id=None),
            service=self.target.topic, method=method, style="reply", context=context)
        if reply is None:  # nothing was received: no size to report
            del attributes[attr.MESSAGING_BODY_SIZE]
        span = self.tracer.start_span(f"receive {reply_queue}", kind=trace.SpanKind.CONSUMER,
                                      attributes=attributes, links=links,
                                      start_time=wait_start)
        with trace.use_span(span, end_on_exit=True):
            if reply is None:
                raise exception.MessagingTimeout(msg_id=request.message_id)
            body = serializer.loads(reply.body)
            if "failure" in body:
                raise rebuild_exception(body["failure"])
            return body.get("result")
