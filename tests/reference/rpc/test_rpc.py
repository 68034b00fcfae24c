"""The RPC layer, the same tests on ``memory://`` and on RabbitMQ (``-m amqp``)."""

from __future__ import annotations

import datetime
import logging
import socket
import threading
import time
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from novalab.reference.common import exception
from novalab.reference.common.context import RequestContext
from novalab.reference.rpc import RPCClient, Target, get_transport, serializer
from novalab.reference.rpc.memory import MemoryBroker, MemoryTransport, topic_matches
from novalab.reference.rpc.transport import Message, MessageDeliveryFailure, TransportUnavailable
from novalab.tracing import attributes as attr

WAIT = 10  # seconds; generous bounds for events that normally take milliseconds


class Recorder:
    """An endpoint that remembers its casts and answers calls."""

    def __init__(self, name: str = "host1"):
        self.name = name
        self.casts: list[tuple[RequestContext, dict]] = []
        self.calls: list[str] = []
        self.cast_received = threading.Event()
        self._lock = threading.Lock()

    def record(self, ctxt, **kwargs):
        with self._lock:
            self.casts.append((ctxt, kwargs))
        self.cast_received.set()

    def add(self, ctxt, a, b):
        return a + b

    def echo(self, ctxt, value, delay=0.0):
        time.sleep(delay)  # lets later calls overtake earlier ones
        return value

    def whoami(self, ctxt):
        with self._lock:
            self.calls.append(ctxt.request_id)
        return self.name

    def instance_missing(self, ctxt, instance_id):
        raise exception.InstanceNotFound(instance_id=instance_id)

    def broken(self, ctxt):
        raise ValueError("boom")

    def _private(self, ctxt):
        return "not RPC API"


# -- both transports ----------------------------------------------------------------


def test_cast_delivers_context_and_kwargs(rpc, topic):
    endpoint = Recorder()
    rpc.server([endpoint], topic=topic)
    ctxt = RequestContext(user_id="u1", project_id="p1", roles=["member"])
    ident = uuid.uuid4()

    rpc.client(topic=topic).cast(
        ctxt, "record", flavor="m1.small", when=datetime.datetime(2024, 1, 2, 3, 4, 5),
        ident=ident, tags={"b", "a"})

    assert endpoint.cast_received.wait(WAIT)
    got_ctxt, kwargs = endpoint.casts[0]
    assert isinstance(got_ctxt, RequestContext)
    assert got_ctxt.to_dict() == ctxt.to_dict()
    assert kwargs == {"flavor": "m1.small", "when": "2024-01-02T03:04:05",
                      "ident": str(ident), "tags": ["a", "b"]}


def test_call_returns_value(rpc, topic):
    rpc.server([Recorder()], topic=topic)
    client = rpc.client(topic=topic)
    assert client.call(RequestContext(), "add", a=2, b=3) == 5
    value = {"id": 7, "names": ["a", "b"], "nested": {"ok": True, "none": None}}
    assert client.call({"request_id": "req-dict-context"}, "echo", value=value) == value


def test_call_to_one_server_reaches_only_that_server(rpc, topic):
    host1, host2 = Recorder("host1"), Recorder("host2")
    rpc.server([host1], topic=topic, server="host1")
    rpc.server([host2], topic=topic, server="host2")
    client = rpc.client(topic=topic)

    to_host2 = client.prepare(server="host2")
    assert to_host2.target == Target(topic, server="host2")
    assert [to_host2.call(RequestContext(), "whoami") for _ in range(5)] == ["host2"] * 5
    assert host1.calls == [] and len(host2.calls) == 5
    assert client.prepare(server="host1").call(RequestContext(), "whoami") == "host1"


def test_remote_novalab_exception_is_reraised_as_its_class(rpc, topic):
    rpc.server([Recorder()], topic=topic)
    with pytest.raises(exception.InstanceNotFound) as raised:
        rpc.client(topic=topic).call(RequestContext(), "instance_missing", instance_id="abc")
    assert str(raised.value) == "Instance abc could not be found."
    assert raised.value.kwargs == {"instance_id": "abc"}
    assert raised.value.code == 404


def test_other_remote_exceptions_become_remote_error(rpc, topic):
    rpc.server([Recorder()], topic=topic)
    client = rpc.client(topic=topic)
    with pytest.raises(exception.RemoteError) as raised:
        client.call(RequestContext(), "broken")
    assert raised.value.kwargs == {"exc_type": "ValueError", "value": "boom"}

    for method in ("no_such_method", "_private"):
        with pytest.raises(exception.RemoteError) as raised:
            client.call(RequestContext(), method)
        assert raised.value.kwargs["exc_type"] == "NoSuchMethod"
        assert method in raised.value.kwargs["value"]


def test_cast_of_unknown_method_is_logged(rpc, topic, caplog):
    caplog.set_level(logging.ERROR, logger="novalab.rpc")
    rpc.server([Recorder()], topic=topic)
    rpc.client(topic=topic).cast(RequestContext(), "no_such_method")
    deadline = time.monotonic() + WAIT
    while not any("no_such_method" in r.getMessage() for r in caplog.records):
        assert time.monotonic() < deadline, "the failed cast was not logged"
        time.sleep(0.01)


def test_call_times_out(rpc, topic):
    client = rpc.client(topic=topic, timeout=0.5)  # no server listens on this topic
    start = time.monotonic()
    with pytest.raises(exception.MessagingTimeout):
        client.call(RequestContext(), "add", a=1, b=2)
    elapsed = time.monotonic() - start
    assert 0.5 <= elapsed < 0.5 + WAIT


def test_trace_continues_across_send_process_reply_receive(rpc, topic):
    exporter = InMemorySpanExporter()

    def tracer(service):
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        return provider.get_tracer("test")

    caller_tracer, server_tracer = tracer("caller"), tracer("server")

    class Doubler:
        def double(self, ctxt, x):
            with server_tracer.start_as_current_span("Doubler.double"):
                return 2 * x

    server = rpc.server([Doubler()], topic=topic, tracer=server_tracer)
    client = rpc.client(topic=topic, tracer=caller_tracer)
    # A request that came with a caller's id: both ids ride on every span.
    ctxt = RequestContext(global_request_id="req-00000000-1111-2222-3333-444444444444")
    with caller_tracer.start_as_current_span("caller") as root:
        assert client.call(ctxt, "double", x=21) == 42
    server.stop()
    server.wait()  # the server's spans have ended once its workers are done

    spans = exporter.get_finished_spans()
    by_name = {s.name: s for s in spans}
    send, process = by_name[f"send {topic}"], by_name[f"process {topic}"]
    endpoint = by_name["Doubler.double"]
    [reply] = [s for s in spans if s.name.startswith("send reply_")]
    [receive] = [s for s in spans if s.name.startswith("receive reply_")]
    root_id = root.get_span_context().span_id

    assert {s.context.trace_id for s in spans} == {root.get_span_context().trace_id}
    assert (send.kind, process.kind, reply.kind, receive.kind) == (
        SpanKind.PRODUCER, SpanKind.CONSUMER, SpanKind.PRODUCER, SpanKind.CONSUMER)
    assert send.parent.span_id == root_id
    assert process.parent.span_id == send.context.span_id
    assert [link.context.span_id for link in process.links] == [send.context.span_id]
    assert endpoint.parent.span_id == process.context.span_id
    assert reply.parent.span_id == process.context.span_id
    assert receive.parent.span_id == root_id
    assert [link.context.span_id for link in receive.links] == [reply.context.span_id]
    assert receive.start_time >= send.end_time

    transport = client.transport
    assert send.attributes[attr.MESSAGING_SYSTEM] == transport.system
    assert send.attributes[attr.MESSAGING_OPERATION_NAME] == "send"
    assert send.attributes[attr.MESSAGING_DESTINATION_NAME] == "nova"
    assert send.attributes[attr.MESSAGING_ROUTING_KEY] == topic
    assert send.attributes[attr.RPC_SYSTEM] == "oslo.messaging"
    assert send.attributes[attr.RPC_SERVICE] == topic
    assert send.attributes[attr.RPC_METHOD] == "double"
    assert send.attributes[attr.NOVALAB_RPC_STYLE] == "call"
    for span in (send, process, reply, receive):
        assert span.attributes[attr.OPENSTACK_REQUEST_ID] == ctxt.request_id
        assert span.attributes[attr.OPENSTACK_GLOBAL_REQUEST_ID] == ctxt.global_request_id
    assert send.attributes[attr.MESSAGING_BODY_SIZE] > 0
    assert send.attributes.get(attr.SERVER_ADDRESS) == transport.server_address
    assert process.attributes[attr.MESSAGING_OPERATION_TYPE] == "process"
    assert process.attributes[attr.MESSAGING_DESTINATION_NAME] == topic
    assert process.attributes[attr.MESSAGING_MESSAGE_ID] == (
        send.attributes[attr.MESSAGING_MESSAGE_ID])
    assert reply.attributes[attr.NOVALAB_RPC_STYLE] == "reply"
    assert reply.attributes[attr.MESSAGING_DESTINATION_NAME] == ""  # the default exchange
    assert receive.attributes[attr.MESSAGING_OPERATION_NAME] == "receive"
    conversation = {s.attributes[attr.MESSAGING_CONVERSATION_ID]
                    for s in (send, process, reply, receive)}
    assert len(conversation) == 1


def test_concurrent_calls_each_get_their_own_reply(rpc, topic):
    rpc.server([Recorder()], topic=topic)
    client = rpc.client(topic=topic)

    def call(i):
        return client.call(RequestContext(), "echo", value=i, delay=(i % 4) * 0.005)

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(call, range(20))) == list(range(20))


# -- RabbitMQ only --------------------------------------------------------------------


def _retry(fn, deadline: float):
    """``fn()`` until it stops failing with a messaging error or ``deadline`` passes."""
    while True:
        try:
            return fn()
        except (exception.MessagingTimeout, MessageDeliveryFailure):
            if time.monotonic() > deadline:
                raise


class StallingProxy:
    """A TCP relay to RabbitMQ that can hold every byte back for a while.

    Holding bytes keeps the connection open but delays the broker's answer, as a
    congested network or a busy broker does: the way to have a publish still
    waiting for its confirm when its caller's timeout runs out.
    """

    def __init__(self, target: tuple[str, int]):
        self.target = target
        self.flowing = threading.Event()
        self.flowing.set()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = [self.listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            upstream = socket.create_connection(self.target)
            self.sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source, sink):
        try:
            while data := source.recv(65536):
                self.flowing.wait()
                sink.sendall(data)
        except OSError:
            pass
        finally:
            sink.close()

    def close(self):
        self.flowing.set()
        for sock in self.sockets:
            sock.close()


@pytest.mark.amqp
def test_a_publish_confirmed_after_its_timeout_counts_as_sent(amqp_rpc, topic):
    """The caller waits for an attempt already on the wire instead of calling it lost.

    Otherwise the caller would retry a message the broker did take, and the
    consumer would see it twice.
    """
    endpoint = Recorder()
    amqp_rpc.server([endpoint], topic=topic)  # consumes over a direct connection
    parts = urllib.parse.urlsplit(amqp_rpc.url)
    proxy = StallingProxy((parts.hostname, parts.port or 5672))
    try:
        proxied = parts._replace(netloc=f"{parts.username}:{parts.password}@127.0.0.1:"
                                        f"{proxy.port}").geturl()
        client = RPCClient(get_transport(proxied), Target(topic), timeout=1)
        proxy.flowing.clear()
        threading.Timer(2.0, proxy.flowing.set).start()  # the confirm comes 1 s too late
        started = time.monotonic()
        client.cast(RequestContext(), "record", n=1)  # returns: the broker took it
        assert time.monotonic() - started >= 1.5
        assert endpoint.cast_received.wait(WAIT)
        time.sleep(0.5)  # a second copy would arrive by now
        assert [kwargs for _, kwargs in endpoint.casts] == [{"n": 1}]
        client.transport.close()
    finally:
        proxy.close()


# -- no broker needed -----------------------------------------------------------------


def test_get_transport_picks_the_broker_by_url():
    name = f"memory:///shared-{uuid.uuid4().hex}"
    first, second = get_transport(name), get_transport(name)
    assert isinstance(first, MemoryTransport) and first.broker is second.broker
    assert get_transport(None).broker is get_transport("memory://").broker
    assert get_transport(f"memory:///other-{uuid.uuid4().hex}").broker is not first.broker
    assert (first.system, first.server_address, first.server_port) == (
        "novalab.memory", None, None)
    with pytest.raises(ValueError, match="unsupported transport URL 'kafka://h:1/'"):
        get_transport("kafka://h:1/")


def test_unreachable_rabbitmq_names_the_url_and_how_to_start_it():
    with pytest.raises(TransportUnavailable) as raised:
        get_transport("amqp://guest:s3cret@127.0.0.1:1/")  # nothing listens on port 1
    message = str(raised.value)
    assert "amqp://guest:***@127.0.0.1:1/" in message and "s3cret" not in message
    assert "rabbitmq-server -detached" in message


def test_target_routing_key():
    assert Target("compute").routing_key == "compute"
    assert Target("compute", server="host1").routing_key == "compute.host1"
    assert Target("compute").exchange == "nova"


def test_topic_exchange_matching():
    assert topic_matches("compute", "compute")
    assert topic_matches("compute.*", "compute.host1")
    assert not topic_matches("compute.*", "compute")
    assert topic_matches("compute.#", "compute") and topic_matches("#", "a.b.c")
    assert not topic_matches("compute", "compute.host1")


def test_broker_routes_plain_and_wildcard_bindings_and_forgets_deleted_queues():
    """The broker indexes plain binding keys (a dict lookup, not a scan of every
    binding: a cloud of 1,000 hosts has 2,000 on the nova exchange) and still tests
    wildcard keys one by one; a deleted queue's bindings go with it."""
    broker = MemoryBroker("index-test")
    for queue, key in (("compute", "compute"), ("compute.h1", "compute.h1"),
                       ("compute.h2", "compute.h2"), ("audit", "compute.*"),
                       ("everything", "#")):
        broker.declare_queue(queue)
        broker.bind("nova", queue, key)

    def routed(routing_key):
        return broker.publish("nova", routing_key, Message(body=b"{}"))

    assert routed("compute.h1") == 3  # compute.h1, audit (compute.*), everything (#)
    assert routed("compute") == 2     # compute, everything
    assert routed("scheduler") == 1   # everything
    broker.delete_queue("compute.h1")
    broker.delete_queue("everything")
    assert routed("compute.h1") == 1  # audit only
    assert routed("compute.h2") == 2  # compute.h2, audit


def test_serializer_makes_primitives():
    when = datetime.datetime(2024, 5, 6, 7, 8, 9)
    ident = uuid.uuid4()
    body = serializer.dumps({"when": when, "id": ident, "tags": {2, 1}, "day": when.date()})
    assert serializer.loads(body) == {"when": "2024-05-06T07:08:09", "id": str(ident),
                                      "tags": [1, 2], "day": "2024-05-06"}
    with pytest.raises(TypeError, match="object is not JSON serializable"):
        serializer.dumps({"x": object()})
