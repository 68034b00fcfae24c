"""An in-process AMQP broker: the ``memory://`` transport (oslo's ``impl_fake``, but honest).

oslo.messaging's fake driver shortcuts the broker. This one keeps the AMQP model
so what a learner sees here is what RabbitMQ does:

* *topic exchanges* route a message to every queue whose binding key matches its
  routing key (``*`` matches one dot-separated word, ``#`` zero or more);
* the *default exchange* ``""`` routes to the queue named by the routing key;
* *queues* keep messages in order until a consumer takes them; a queue with
  several consumers hands each message to one of them, round-robin, from a
  single delivery thread, so each consumer sees its messages in order;
* each transport has a private *reply queue*, deleted when the transport closes.

Brokers are named (``memory:///name``) and live for the process: every transport
built from the same URL shares one, just as processes share one RabbitMQ.

The ``broker-unreachable`` fault (``reference/common/faults.py``) makes the
broker unreachable for publishing, and a publish then behaves as the RabbitMQ
transport's does while RabbitMQ is down: it waits up to its caller's timeout
for the broker to come back (the fault cleared), then fails with
``MessageDeliveryFailure`` and the same message.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import threading
import time
import urllib.parse
import uuid
from collections import deque

from novalab.reference.common.faults import NO_FAULTS
from novalab.reference.rpc.transport import (
    Callback,
    Message,
    MessageDeliveryFailure,
    MessageUndeliverable,
    Transport,
)

LOG = logging.getLogger("novalab.rpc")

UNREACHABLE = "broker-unreachable"  # the fault
PUBLISH_TIMEOUT = 30.0  # a publish without a caller's timeout (the pika transport's)


def _is_pattern(binding_key: str) -> bool:
    """Does the key hold a wildcard word (``*`` or ``#``)? Without one it matches only
    the routing key equal to it."""
    return any(word in ("*", "#") for word in binding_key.split("."))


def topic_matches(binding_key: str, routing_key: str) -> bool:
    """AMQP topic matching: ``*`` is exactly one word, ``#`` zero or more."""

    def match(pattern: list[str], words: list[str]) -> bool:
        if not pattern:
            return not words
        if pattern[0] == "#":
            return match(pattern[1:], words) or (bool(words) and match(pattern, words[1:]))
        if not words or pattern[0] not in ("*", words[0]):
            return False
        return match(pattern[1:], words[1:])

    return match(binding_key.split("."), routing_key.split("."))


class _Queue:
    """A named queue with one delivery thread feeding its consumers in order."""

    def __init__(self, name: str):
        self.name = name
        self._messages: deque[Message] = deque()
        self._consumers: dict[str, Callback] = {}
        self._turn = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._deleted = False

    def put(self, message: Message) -> None:
        with self._cond:
            if not self._deleted:
                self._messages.append(message)
                self._cond.notify()

    def add_consumer(self, tag: str, callback: Callback) -> None:
        with self._cond:
            self._consumers[tag] = callback
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._deliver, name=f"memory-queue-{self.name}", daemon=True)
                self._thread.start()
            self._cond.notify()

    def remove_consumer(self, tag: str) -> None:
        with self._cond:
            self._consumers.pop(tag, None)
            self._cond.notify()

    def delete(self) -> None:
        with self._cond:
            self._deleted = True
            self._messages.clear()
            self._consumers.clear()
            self._cond.notify()

    def _deliver(self) -> None:
        while True:
            with self._cond:
                while not (self._messages and self._consumers):
                    if not self._consumers or self._deleted:
                        self._thread = None  # the next consumer starts a new thread
                        return
                    self._cond.wait()
                message = self._messages.popleft()
                callbacks = list(self._consumers.values())
                callback = callbacks[next(self._turn) % len(callbacks)]
            try:
                callback(message)  # "acked" on receipt: a failing consumer loses it
            except Exception:
                LOG.exception("Consumer of memory queue %s failed", self.name)


class MemoryBroker:
    """Exchanges, bindings and queues of one named in-process broker."""

    def __init__(self, name: str):
        self.name = name
        self._lock = threading.Lock()
        self._queues: dict[str, _Queue] = {}
        # Bindings, indexed as RabbitMQ's topic exchange indexes them (a trie) so a
        # publish does not test every binding: a key without wildcards matches only
        # its own routing key, so it is found by a dict lookup; only keys with ``*``
        # or ``#`` are tested one by one. A cloud of 1,000 compute hosts has 2,000
        # plain keys (``compute``, ``compute.HOST``) on the nova exchange.
        self._exact: dict[str, dict[str, set[str]]] = {}  # exchange -> key -> queues
        self._patterns: dict[str, set[tuple[str, str]]] = {}  # exchange -> {(key, queue)}
        self._bound: dict[str, set[tuple[str, str]]] = {}  # queue -> {(exchange, key)}

    def declare_queue(self, name: str) -> _Queue:
        with self._lock:
            return self._queues.setdefault(name, _Queue(name))

    def delete_queue(self, name: str) -> None:
        with self._lock:
            queue = self._queues.pop(name, None)
            for exchange, key in self._bound.pop(name, ()):
                if _is_pattern(key):
                    self._patterns[exchange].discard((key, name))
                else:
                    self._exact[exchange][key].discard(name)
        if queue is not None:
            queue.delete()

    def bind(self, exchange: str, queue: str, binding_key: str) -> None:
        with self._lock:
            if _is_pattern(binding_key):
                self._patterns.setdefault(exchange, set()).add((binding_key, queue))
            else:
                self._exact.setdefault(exchange, {}).setdefault(binding_key, set()).add(queue)
            self._bound.setdefault(queue, set()).add((exchange, binding_key))

    def publish(self, exchange: str, routing_key: str, message: Message) -> int:
        """Route a copy of ``message`` to each matching queue; return how many."""
        with self._lock:
            if exchange == "":
                names = {routing_key} if routing_key in self._queues else set()
            else:
                names = set(self._exact.get(exchange, {}).get(routing_key, ()))
                names.update(queue for key, queue in self._patterns.get(exchange, ())
                             if topic_matches(key, routing_key))
            queues = [self._queues[name] for name in names if name in self._queues]
        for queue in queues:
            queue.put(dataclasses.replace(message, headers=dict(message.headers),
                                          exchange=exchange, routing_key=routing_key))
        return len(queues)


_BROKERS: dict[str, MemoryBroker] = {}
_BROKERS_LOCK = threading.Lock()


def get_broker(name: str) -> MemoryBroker:
    """The process-wide broker called ``name``, created on first use."""
    with _BROKERS_LOCK:
        return _BROKERS.setdefault(name, MemoryBroker(name))


class MemoryTransport(Transport):
    """A transport on a named in-process broker; ``memory:///name`` picks the broker."""

    system = "novalab.memory"

    def __init__(self, url: str = "memory://"):
        super().__init__()
        self.url = url
        parts = urllib.parse.urlsplit(url)
        self.broker = get_broker((parts.netloc + parts.path).strip("/") or "default")
        self._lock = threading.Lock()
        self._consumers: dict[str, _Queue] = {}
        self._closed = False
        self.faults = NO_FAULTS  # the deployment's, set by Wiring.transport
        self._reply_queue = f"reply_{uuid.uuid4().hex}"
        self._add_consumer(self.broker.declare_queue(self._reply_queue), self._deliver_reply)

    @property
    def reply_queue(self) -> str:
        return self._reply_queue

    def publish(self, exchange, routing_key, message, *, persistent=True, mandatory=False,
                timeout=None) -> None:
        if self._closed:
            raise MessageDeliveryFailure(url=self.url, reason="the transport is closed")
        fault = self.faults.fire(UNREACHABLE)
        if fault is not None:
            self._wait_for_broker(PUBLISH_TIMEOUT if timeout is None else timeout,
                                  once=bool(fault.get("once")))
        routed = self.broker.publish(exchange, routing_key, message)
        if mandatory and not routed:
            raise MessageUndeliverable(exchange=exchange, routing_key=routing_key)

    def _wait_for_broker(self, timeout: float, once: bool) -> None:
        """The broker is unreachable: wait for it as a pika publish waits for a reconnect.

        Returns when the fault is cleared within ``timeout`` (the publish then goes
        through); a ``--once`` fault is this one publish's outage, so it fails.
        """
        deadline = time.monotonic() + timeout
        while not self._closed:
            if not once and not self.faults.is_injected(UNREACHABLE):
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise MessageDeliveryFailure(
                    url=self.url,
                    reason=f"not confirmed within {timeout:g}s; the broker is unreachable "
                           "and the transport is reconnecting. The in-memory broker is down "
                           f"(fault {UNREACHABLE}).")
            time.sleep(min(0.1, left))
        raise MessageDeliveryFailure(url=self.url, reason="the transport is closed")

    def consume(self, exchange, queue, binding_key, callback) -> str:
        declared = self.broker.declare_queue(queue)
        self.broker.bind(exchange, queue, binding_key)
        return self._add_consumer(declared, callback)

    def _add_consumer(self, queue: _Queue, callback: Callback) -> str:
        tag = f"ctag-{uuid.uuid4().hex}"
        with self._lock:
            self._consumers[tag] = queue
        queue.add_consumer(tag, callback)
        return tag

    def cancel(self, tag: str) -> None:
        with self._lock:
            queue = self._consumers.pop(tag, None)
        if queue is not None:
            queue.remove_consumer(tag)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            tags = list(self._consumers)
        for tag in tags:
            self.cancel(tag)
        self.broker.delete_queue(self._reply_queue)
        self._fail_replies(MessageDeliveryFailure(url=self.url, reason="the transport closed"))
