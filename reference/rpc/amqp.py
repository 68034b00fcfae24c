"""RabbitMQ through pika's BlockingConnection: the shape of oslo.messaging's ``impl_rabbit``.

**One I/O thread.** A pika ``BlockingConnection`` is not thread-safe, yet RPC
clients and server workers publish from many threads. So each transport runs one
I/O thread that owns the connection: it loops on ``process_data_events`` (which
also answers heartbeats and delivers messages to consumers). Other threads queue
a piece of work, wake the loop with ``add_callback_threadsafe`` (the only
thread-safe pika method) and wait on a ``Future`` for the result.

**Topology**, as oslo declares it: a durable *topic exchange* per target
exchange (``nova``); durable queues ``topic`` and ``topic.server`` bound with the
same routing keys; persistent requests (``delivery_mode=2``) so a broker restart
does not lose them; *publisher confirms*, so ``publish`` returns only once the
broker has the message; and a private exclusive, auto-delete reply queue
``reply_<uuid>`` reached through the default exchange, with ``reply_to`` and
``correlation_id`` telling the server where to answer and the caller which call
the answer is for. Requests are acked on receipt, before dispatch, as oslo does:
a request is never run twice, even if the server dies half-way (at most once).

**Reconnect.** When the broker goes away (restart, ``StreamLostError``,
``ConnectionClosedByBroker``) the I/O thread reconnects with backoff (0.2 s
doubling to 5 s) and declares everything again: exchanges, queues, consumers,
the reply queue. Work queued meanwhile waits for the reconnect, up to each
caller's timeout. A publish cut off mid-flight is sent again (at least once).
"""

from __future__ import annotations

import functools
import logging
import threading
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

import pika
import pika.exceptions

from novalab.reference.rpc.transport import (
    Callback,
    Message,
    MessageDeliveryFailure,
    MessageUndeliverable,
    Transport,
    TransportUnavailable,
    mask_url,
)

LOG = logging.getLogger("novalab.rpc")

BACKOFF_START = 0.2
BACKOFF_MAX = 5.0
PREFETCH = 64
CONNECT_TIMEOUT = 5.0
DECLARE_TIMEOUT = 30.0

# The connection is gone: requeue the work, reconnect, run it again.
_CONNECTION_LOST = (
    pika.exceptions.AMQPConnectionError,
    pika.exceptions.ChannelWrongStateError,
    OSError,
)
HOW_TO_START = ("Is RabbitMQ running? Start it with `rabbitmq-server -detached` "
                "(or `systemctl start rabbitmq-server`).")
CHECK_CREDENTIALS = "Check the user, password and vhost in the transport URL."
_REFUSED = (pika.exceptions.ProbableAuthenticationError, pika.exceptions.AuthenticationError,
            pika.exceptions.ProbableAccessDeniedError)


@dataclass
class _Consumer:
    """A consumer as the application asked for it, re-declared on each reconnect."""

    tag: str
    exchange: str
    queue: str
    binding_key: str
    callback: Callback
    pika_tag: str | None = None
    generation: int = -1  # the connection it was declared on


@dataclass
class _Work:
    """One operation handed to the I/O thread, and what its caller knows of it.

    ``in_flight`` while the I/O thread runs it; ``abandoned`` once its caller
    has timed out with nothing in flight, after which it never runs (no replay
    after a reconnect: the caller may retry, and must not send twice).
    """

    fn: Callable[[], Any]
    future: Future = field(default_factory=Future)
    lock: threading.Lock = field(default_factory=threading.Lock)
    in_flight: bool = False
    abandoned: bool = False


def _describe(exc: BaseException) -> str:
    """``Name: detail``; pika nests the socket error (connection refused) in ``args``."""
    detail = str(exc) or "; ".join(repr(arg) for arg in exc.args)
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


def _noop() -> None:
    """Wakes the I/O loop so it runs queued work."""


class PikaTransport(Transport):
    """A RabbitMQ connection owned by one I/O thread, shared by clients and servers."""

    system = "rabbitmq"

    def __init__(self, url: str, *, prefetch: int = PREFETCH,
                 connect_timeout: float = CONNECT_TIMEOUT):
        super().__init__()
        self.url = url
        self.display_url = mask_url(url)
        if url.startswith("rabbit://"):  # oslo's scheme for the same thing
            url = "amqp://" + url[len("rabbit://"):]
        self._params = pika.URLParameters(url)
        self._params.connection_attempts = 1
        self._params.socket_timeout = connect_timeout
        self._params.stack_timeout = connect_timeout
        self.server_address = self._params.host
        self.server_port = self._params.port
        self._prefetch = prefetch
        self._reply_queue = f"reply_{uuid.uuid4().hex}"

        self._lock = threading.Lock()
        self._work: deque[_Work] = deque()
        self._consumers: dict[str, _Consumer] = {}
        self._connection: pika.BlockingConnection | None = None
        self._channel = None
        self._generation = 0
        self._exchanges: set[str] = set()
        self._closing = threading.Event()
        self._stopped = False  # the I/O thread has exited

        started: Future = Future()
        self._thread = threading.Thread(target=self._run, args=(started,), daemon=True,
                                        name=f"amqp-io-{self._reply_queue[6:14]}")
        self._thread.start()
        started.result()  # TransportUnavailable if the first connect failed

    @property
    def reply_queue(self) -> str:
        return self._reply_queue

    # -- the public interface: each call hands work to the I/O thread ---------------

    def publish(self, exchange, routing_key, message, *, persistent=True, mandatory=False,
                timeout=None) -> None:
        properties = pika.BasicProperties(
            content_type="application/json",
            content_encoding="utf-8",
            headers=dict(message.headers),
            delivery_mode=2 if persistent else 1,
            message_id=message.message_id,
            correlation_id=message.correlation_id,
            reply_to=message.reply_to,
        )

        def work():
            self._declare_exchange(exchange)
            try:  # with confirms on, this returns once the broker has the message
                self._channel.basic_publish(exchange, routing_key, message.body, properties,
                                            mandatory=mandatory)
            except pika.exceptions.UnroutableError:
                raise MessageUndeliverable(exchange=exchange, routing_key=routing_key) from None
            except pika.exceptions.NackError:
                raise MessageDeliveryFailure(url=self.display_url,
                                             reason="the broker refused it (nack)") from None

        self._submit(work, DECLARE_TIMEOUT if timeout is None else timeout)

    def consume(self, exchange, queue, binding_key, callback) -> str:
        consumer = _Consumer(f"ctag-{uuid.uuid4().hex}", exchange, queue, binding_key, callback)
        with self._lock:
            self._consumers[consumer.tag] = consumer
        try:
            self._submit(functools.partial(self._declare_consumer, consumer), DECLARE_TIMEOUT)
        except Exception:
            with self._lock:
                self._consumers.pop(consumer.tag, None)
            raise
        return consumer.tag

    def cancel(self, tag: str) -> None:
        with self._lock:
            consumer = self._consumers.pop(tag, None)
            connected = self._connection is not None
        if consumer is None or self._closing.is_set() or not connected:
            return  # while disconnected the broker has already forgotten the consumer

        def work():
            if consumer.generation == self._generation:  # else it died with its connection
                self._channel.basic_cancel(consumer.pika_tag)

        try:
            self._submit(work, DECLARE_TIMEOUT)
        except MessageDeliveryFailure:
            pass  # disconnected: the broker already forgot the consumer

    def close(self) -> None:
        if self._closing.is_set():
            return
        self._closing.set()
        with self._lock:
            connection = self._connection
        self._wake(connection)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=10)

    # -- handing work to the I/O thread ---------------------------------------------

    def _submit(self, fn: Callable[[], Any], timeout: float) -> Any:
        if threading.current_thread() is self._thread:
            return fn()  # already on the I/O thread (a consumer callback)
        work = _Work(fn)
        with self._lock:
            if self._stopped or self._closing.is_set():
                raise MessageDeliveryFailure(url=self.display_url,
                                             reason="the transport is closed")
            self._work.append(work)
            connection = self._connection
        self._wake(connection)
        try:
            return work.future.result(timeout)
        except FutureTimeout:
            pass
        # Out of time. An attempt on the wire right now may still be confirmed: its
        # outcome, not our clock, says whether the message was sent, so wait for it.
        # Otherwise give the work up for good, so a caller that retries never sends
        # the message twice (once by its retry, once by a replay after a reconnect).
        while True:
            with work.lock:
                if not (work.future.done() or work.in_flight):
                    work.abandoned = True
                    break
            try:
                return work.future.result(0.1)
            except FutureTimeout:
                continue
        raise MessageDeliveryFailure(
            url=self.display_url,
            reason=f"not confirmed within {timeout:g}s; the broker is unreachable "
                   f"and the transport is reconnecting. {HOW_TO_START}",
        )

    @staticmethod
    def _wake(connection) -> None:
        if connection is not None:
            try:
                connection.add_callback_threadsafe(_noop)
            except pika.exceptions.ConnectionWrongStateError:
                pass  # closed: the I/O thread runs the work once reconnected

    def _run_pending_work(self) -> None:
        while True:
            with self._lock:
                if not self._work:
                    return
                work = self._work.popleft()
            with work.lock:
                if work.abandoned or work.future.done():  # the caller gave up
                    continue
                work.in_flight = True
            try:
                result = work.fn()
            except _CONNECTION_LOST:
                with work.lock:
                    work.in_flight = False
                    replay = not work.abandoned
                if replay:  # once reconnected, unless its caller gives up first
                    with self._lock:
                        self._work.appendleft(work)
                raise
            except pika.exceptions.ChannelClosed as exc:  # the broker refused this operation
                self._settle(work, exc=exc)
                raise  # a closed channel is useless: reconnect for a fresh one
            except Exception as exc:
                self._settle(work, exc=exc)
            else:
                self._settle(work, result=result)

    @staticmethod
    def _settle(work: _Work, result: Any = None, exc: BaseException | None = None) -> None:
        with work.lock:
            work.in_flight = False
            if work.future.done():
                return
            if exc is not None:
                work.future.set_exception(exc)
            else:
                work.future.set_result(result)

    # -- the I/O thread ---------------------------------------------------------------

    def _run(self, started: Future) -> None:
        try:
            self._connect()
        except Exception as exc:
            hint = CHECK_CREDENTIALS if isinstance(exc, _REFUSED) else HOW_TO_START
            started.set_exception(TransportUnavailable(
                url=self.display_url, reason=f"{_describe(exc)}. {hint}"))
            return
        started.set_result(None)
        delay = BACKOFF_START
        while not self._closing.is_set():
            if self._connection is None:
                if self._closing.wait(delay):
                    break
                try:
                    self._connect()
                except Exception as exc:
                    delay = min(delay * 2, BACKOFF_MAX)
                    LOG.info("RabbitMQ at %s still unreachable (%s); retrying in %.1f s",
                             self.display_url, _describe(exc), delay)
                    continue
                LOG.warning("Reconnected to RabbitMQ at %s", self.display_url)
                delay = BACKOFF_START
            try:
                self._run_pending_work()
                self._connection.process_data_events(time_limit=1.0)
            except Exception as exc:
                if self._closing.is_set():
                    break
                lost = isinstance(exc, _CONNECTION_LOST)
                LOG.warning("%s RabbitMQ at %s (%s); reconnecting",
                            "Lost the connection to" if lost else "Resetting the connection to",
                            self.display_url, _describe(exc))
                self._drop_connection()
        self._drop_connection()
        self._fail_all(MessageDeliveryFailure(url=self.display_url,
                                              reason="the transport closed"))

    def _connect(self) -> None:
        """Open connection and channel, then declare the reply queue and all consumers."""
        connection = pika.BlockingConnection(self._params)
        try:
            channel = connection.channel()
            channel.confirm_delivery()
            channel.basic_qos(prefetch_count=self._prefetch)
            channel.queue_declare(self._reply_queue, exclusive=True, auto_delete=True)
            channel.basic_consume(self._reply_queue, self._on_reply, auto_ack=True)
            with self._lock:
                self._connection, self._channel = connection, channel
                self._generation += 1
                self._exchanges = set()
                consumers = list(self._consumers.values())
            for consumer in consumers:
                self._declare_consumer(consumer)
        except Exception:
            self._drop_connection(connection)
            raise

    def _drop_connection(self, connection=None) -> None:
        with self._lock:
            if connection is None:
                connection = self._connection
            if connection is self._connection:
                self._connection, self._channel = None, None
        if connection is not None and connection.is_open:
            try:
                connection.close()  # the broker drops the exclusive reply queue with it
            except Exception:
                pass

    def _fail_all(self, exc: Exception) -> None:
        with self._lock:
            self._stopped = True
            work, self._work = self._work, deque()
        for item in work:
            self._settle(item, exc=exc)
        self._fail_replies(exc)

    def _declare_exchange(self, exchange: str) -> None:
        if exchange and exchange not in self._exchanges:
            self._channel.exchange_declare(exchange, exchange_type="topic", durable=True)
            self._exchanges.add(exchange)

    def _declare_consumer(self, consumer: _Consumer) -> None:
        if consumer.generation == self._generation or consumer.tag not in self._consumers:
            return  # declared on this connection already, or cancelled meanwhile
        self._declare_exchange(consumer.exchange)
        self._channel.queue_declare(consumer.queue, durable=True)
        self._channel.queue_bind(consumer.queue, consumer.exchange,
                                 routing_key=consumer.binding_key)
        consumer.pika_tag = self._channel.basic_consume(
            consumer.queue, functools.partial(self._on_message, consumer))
        consumer.generation = self._generation

    # -- deliveries (on the I/O thread, inside process_data_events) --------------------

    def _on_message(self, consumer: _Consumer, channel, method, properties, body) -> None:
        if consumer.tag not in self._consumers:  # cancelled: leave it for another server
            channel.basic_reject(method.delivery_tag, requeue=True)
            return
        channel.basic_ack(method.delivery_tag)  # before dispatch, as oslo.messaging does
        try:
            consumer.callback(_to_message(method, properties, body))
        except Exception:
            LOG.exception("Consumer of %s failed", consumer.queue)

    def _on_reply(self, channel, method, properties, body) -> None:
        self._deliver_reply(_to_message(method, properties, body))


def _to_message(method, properties, body: bytes) -> Message:
    return Message(
        body=body,
        headers={k: v if isinstance(v, str) else str(v)
                 for k, v in (properties.headers or {}).items()},
        message_id=properties.message_id,
        correlation_id=properties.correlation_id,
        reply_to=properties.reply_to,
        exchange=method.exchange,
        routing_key=method.routing_key,
    )
