"""The transport: what the RPC layer needs from a message broker, and how to pick one.

oslo.messaging separates the RPC semantics (client, server, dispatcher) from the
broker driver (``impl_rabbit``, ``impl_fake``, ...) chosen by the
``transport_url``. So does novalab: ``memory://`` gives an in-process AMQP
emulation for tests and the embedded cloud, ``amqp://user:pass@host:port/vhost``
(or oslo's ``rabbit://``) a RabbitMQ connection. Both speak the same AMQP model:

* a *topic exchange* routes each message by its routing key to bound queues;
* the *default exchange* (``""``) routes straight to the queue named by the key,
  which is how replies reach the caller's private reply queue;
* a message carries ``message_id``, ``correlation_id``, ``reply_to`` and headers
  (where the W3C trace context travels).
"""

from __future__ import annotations

import abc
import threading
import urllib.parse
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from novalab.reference.common.exception import NovaLabException


class TransportUnavailable(NovaLabException):
    """The broker could not be reached when the transport was created."""

    msg_fmt = "Cannot connect to the message broker at %(url)s: %(reason)s"


class MessageDeliveryFailure(NovaLabException):
    """A publish was not confirmed by the broker in time (it was down or refused it)."""

    msg_fmt = "Could not deliver a message to %(url)s: %(reason)s"


class MessageUndeliverable(NovaLabException):
    """A mandatory message matched no queue (a reply whose caller has gone)."""

    msg_fmt = "No queue bound for routing key %(routing_key)s on exchange '%(exchange)s'"


@dataclass
class Message:
    """One AMQP message: a body plus the properties the RPC layer uses."""

    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    message_id: str | None = None
    correlation_id: str | None = None
    reply_to: str | None = None
    exchange: str = ""
    routing_key: str = ""


Callback = Callable[[Message], None]


class Transport(abc.ABC):
    """A connection to one broker, shared by the clients and servers built on it.

    Subclasses implement publishing and consuming; the table of calls waiting
    for a reply (keyed by correlation id) is common and lives here.
    """

    system: str = ""
    url: str = ""
    server_address: str | None = None
    server_port: int | None = None

    def __init__(self) -> None:
        self._replies: dict[str, Future] = {}
        self._replies_lock = threading.Lock()

    @property
    @abc.abstractmethod
    def reply_queue(self) -> str:
        """This transport's private queue that replies to its calls come back on."""

    @abc.abstractmethod
    def publish(self, exchange: str, routing_key: str, message: Message, *,
                persistent: bool = True, mandatory: bool = False,
                timeout: float | None = None) -> None:
        """Send ``message``; return once the broker has it, or raise."""

    @abc.abstractmethod
    def consume(self, exchange: str, queue: str, binding_key: str, callback: Callback) -> str:
        """Declare ``queue`` bound to ``exchange`` by ``binding_key``; feed it to
        ``callback`` (acked on receipt). Returns a tag for :meth:`cancel`."""

    @abc.abstractmethod
    def cancel(self, tag: str) -> None:
        """Stop the consumer ``tag``; its durable queue stays."""

    @abc.abstractmethod
    def close(self) -> None:
        """Cancel consumers, drop the reply queue, disconnect."""

    # Replies: a call registers its correlation id before publishing, then waits.
    def expect_reply(self, correlation_id: str) -> Future:
        future: Future = Future()
        with self._replies_lock:
            self._replies[correlation_id] = future
        return future

    def forget_reply(self, correlation_id: str) -> None:
        with self._replies_lock:
            self._replies.pop(correlation_id, None)

    def _deliver_reply(self, message: Message) -> None:
        """Hand a reply to its waiting call; late replies (timed out) are dropped."""
        with self._replies_lock:
            future = self._replies.pop(message.correlation_id or "", None)
        if future is not None:
            future.set_result(message)

    def _fail_replies(self, exc: Exception) -> None:
        with self._replies_lock:
            waiting, self._replies = self._replies, {}
        for future in waiting.values():
            future.set_exception(exc)


def mask_url(url: str) -> str:
    """``url`` with its password replaced by ``***``, fit for messages and logs."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}"
    if parts.port:
        netloc += f":{parts.port}"
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def get_transport(url: str | None = None) -> Transport:
    """The transport for ``url`` (oslo's ``get_rpc_transport(conf, url)``).

    ``None``, ``memory://`` or ``memory:///name`` give an in-process broker of
    that name (the same name in one process is the same broker, so a client and
    a server built from one URL talk); ``amqp://`` or ``rabbit://`` URLs give RabbitMQ.
    """
    scheme = urllib.parse.urlsplit(url).scheme if url else "memory"
    if scheme == "memory":
        from novalab.reference.rpc.memory import MemoryTransport

        return MemoryTransport(url or "memory://")
    if scheme in ("amqp", "rabbit"):
        from novalab.reference.rpc.amqp import PikaTransport

        return PikaTransport(url)
    raise ValueError(
        f"unsupported transport URL {mask_url(url)!r}: use memory://[/name] "
        "or amqp://user:pass@host:port/vhost"
    )
