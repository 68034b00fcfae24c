"""Fixtures that run the same RPC tests on the in-memory broker and on RabbitMQ."""

from __future__ import annotations

import os
import uuid

import pika
import private_services
import pytest

from novalab.reference.rpc import RPCClient, RPCServer, Target, get_transport
from novalab.reference.rpc.transport import Transport, TransportUnavailable

AMQP_URL = os.environ.get("NOVALAB_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")


def _amqp_connection(url: str) -> pika.BlockingConnection:
    params = pika.URLParameters(url)
    params.connection_attempts = 1
    params.socket_timeout = params.stack_timeout = 3
    return pika.BlockingConnection(params)


def require_rabbitmq(url: str = AMQP_URL) -> str:
    """``url`` if RabbitMQ answers there; else skip (fail with NOVALAB_REQUIRE_SERVICES=1)."""
    try:
        get_transport(url).close()
    except TransportUnavailable as exc:  # its message names the URL and how to start RabbitMQ
        reason = f"RabbitMQ needed: {exc}"
        if os.environ.get("NOVALAB_REQUIRE_SERVICES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return url


class RPCHarness:
    """Builds transports, servers and clients for one test, and tears them all down.

    Each server and client gets its own transport, as separate processes would.
    Durable queues left on RabbitMQ by the test's servers are deleted at the end.
    """

    def __init__(self, url: str):
        self.url = url
        self.transports: list[Transport] = []
        self.servers: list[RPCServer] = []

    def transport(self) -> Transport:
        transport = get_transport(self.url)
        self.transports.append(transport)
        return transport

    def server(self, endpoints, *, topic: str, server: str = "host1", tracer=None,
               max_workers: int = 8) -> RPCServer:
        rpc_server = RPCServer(self.transport(), Target(topic, server=server), endpoints,
                               tracer=tracer, max_workers=max_workers)
        self.servers.append(rpc_server)
        return rpc_server.start()

    def client(self, *, topic: str, tracer=None, timeout: float = 10) -> RPCClient:
        return RPCClient(self.transport(), Target(topic), tracer=tracer, timeout=timeout)

    def close(self) -> None:
        for rpc_server in self.servers:
            rpc_server.stop()
            rpc_server.wait()
        for transport in self.transports:
            transport.close()
        queues = {queue for rpc_server in self.servers for queue in rpc_server.queues}
        if queues and not self.url.startswith("memory"):
            try:
                connection = _amqp_connection(self.url)
                channel = connection.channel()
                for queue in sorted(queues):
                    channel.queue_delete(queue)
                connection.close()
            except Exception as exc:  # a leftover queue is harmless; say so and go on
                print(f"could not delete test queues {sorted(queues)}: {exc!r}")


@pytest.fixture(params=[
    pytest.param("memory", id="memory"),
    pytest.param("amqp", id="amqp", marks=pytest.mark.amqp),
])
def transport_url(request) -> str:
    if request.param == "memory":
        return f"memory:///test-{uuid.uuid4().hex}"
    return require_rabbitmq()


@pytest.fixture
def rpc(transport_url):
    harness = RPCHarness(transport_url)
    yield harness
    harness.close()


@pytest.fixture
def amqp_rpc():
    harness = RPCHarness(require_rabbitmq())
    yield harness
    harness.close()


@pytest.fixture
def topic() -> str:
    """A topic no other test uses, so queues never collide."""
    return f"test_{uuid.uuid4().hex[:12]}"


@pytest.fixture
def private_broker():
    """A RabbitMQ node of the test's own, and RPC over it: the test stops its broker,
    which must never be the machine's, used meanwhile by the tests beside it."""
    with private_services.private_rabbitmq() as node:
        harness = RPCHarness(node.url)
        yield harness, node
        harness.close()
