"""Check a reported pitfall: does opentelemetry-instrumentation-pika double an RPC round trip?

The report: with a ``BlockingConnection``, opentelemetry-instrumentation-pika 0.66b1
made two nested PRODUCER spans per ``basic_publish`` and roughly doubled an RPC
round trip (0.6 -> 1.4 ms). This script measures, in one run against the local
RabbitMQ, a plain pika request/reply round trip (client publishes to a queue
with ``reply_to`` + ``correlation_id``, a server thread answers on the default
exchange) in three set-ups, each with its own connections and queues:

* ``plain``: no instrumentation;
* ``instrument_channel``: ``PikaInstrumentor.instrument_channel(channel,
  tracer_provider=...)`` on the client's and the server's channel;
* ``instrument()``: the global ``PikaInstrumentor().instrument(tracer_provider=...)``,
  which wraps ``BlockingConnection.channel`` *and* ``Connection.channel``.

Spans go to an in-memory exporter (SimpleSpanProcessor), so the cost measured is
the instrumentation's, not an exporter's. Rounds run interleaved in blocks, so
drift in the machine's load hits every set-up alike. For comparison it also
times ``novalab.reference.rpc`` calls (which make their own messaging spans)
with a no-op and with an SDK tracer.

Run: ``.venv/bin/python benchmarks/pika_instrumentation.py [--rounds 300] [--url URL]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import uuid
from importlib.metadata import version

import pika
from opentelemetry.instrumentation.pika import PikaInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracer, SpanKind

DEFAULT_URL = "amqp://guest:guest@127.0.0.1:5672/"
BODY = json.dumps({"method": "instance_get_by_uuid", "args": {"instance_uuid": str(uuid.uuid4())},
                   "context": {"request_id": f"req-{uuid.uuid4()}", "user_id": "u" * 32,
                               "project_id": "p" * 32, "roles": ["member", "reader"]}}).encode()


def _params(url: str) -> pika.URLParameters:
    params = pika.URLParameters(url)
    params.connection_attempts = 1
    params.socket_timeout = params.stack_timeout = 3
    return params


class EchoServer(threading.Thread):
    """A pika RPC server: consumes its queue, replies with the request body."""

    def __init__(self, url: str, queue: str, instrument=None):
        super().__init__(daemon=True, name=f"echo-{queue}")
        self.url, self.queue, self.instrument = url, queue, instrument
        self.publishes = 0
        self.ready = threading.Event()

    def run(self) -> None:
        self.connection = pika.BlockingConnection(_params(self.url))
        self.channel = self.connection.channel()
        if self.instrument:
            self.instrument(self.channel)
        self.channel.queue_declare(self.queue, auto_delete=True)
        self.channel.basic_consume(self.queue, self._on_request, auto_ack=True)
        self.ready.set()
        self.channel.start_consuming()
        self.connection.close()

    def _on_request(self, channel, method, properties, body) -> None:
        channel.basic_publish("", properties.reply_to, body,
                              pika.BasicProperties(correlation_id=properties.correlation_id))
        self.publishes += 1

    def stop(self) -> None:
        self.connection.add_callback_threadsafe(self.channel.stop_consuming)
        self.join(10)


class Client:
    """A pika RPC client with an exclusive reply queue; ``round_trip`` times one call."""

    def __init__(self, url: str, queue: str, instrument=None):
        self.queue = queue
        self.connection = pika.BlockingConnection(_params(url))
        self.channel = self.connection.channel()
        if instrument:
            instrument(self.channel)
        self.reply_queue = self.channel.queue_declare("", exclusive=True).method.queue
        self.channel.basic_consume(self.reply_queue, self._on_reply, auto_ack=True)
        self.publishes = 0
        self._answered: str | None = None

    def _on_reply(self, channel, method, properties, body) -> None:
        self._answered = properties.correlation_id

    def round_trip(self) -> float:
        correlation_id = uuid.uuid4().hex
        start = time.perf_counter()
        self.channel.basic_publish("", self.queue, BODY, pika.BasicProperties(
            reply_to=self.reply_queue, correlation_id=correlation_id))
        while self._answered != correlation_id:
            self.connection.process_data_events(time_limit=None)
        elapsed = time.perf_counter() - start
        self.publishes += 1
        return elapsed

    def close(self) -> None:
        self.connection.close()


class Setup:
    """A client, a server and (when instrumented) an in-memory exporter."""

    def __init__(self, name: str, url: str, instrument=None,
                 exporter: InMemorySpanExporter | None = None):
        self.name, self.exporter = name, exporter
        queue = f"bench_{name.replace('()', '').replace(' ', '_')}_{uuid.uuid4().hex[:8]}"
        self.server = EchoServer(url, queue, instrument)
        self.server.start()
        self.server.ready.wait(10)
        self.client = Client(url, queue, instrument)
        self.samples: list[float] = []

    def run(self, rounds: int, keep: bool = True) -> None:
        for _ in range(rounds):
            elapsed = self.client.round_trip()
            if keep:
                self.samples.append(elapsed)

    def close(self) -> None:
        self.client.close()
        self.server.stop()

    def span_counts(self) -> dict[str, float] | None:
        if self.exporter is None:
            return None
        spans = self.exporter.get_finished_spans()
        producers = [s for s in spans if s.kind == SpanKind.PRODUCER]
        producer_ids = {s.context.span_id for s in producers}
        publishes = self.client.publishes + self.server.publishes  # one delivery each
        return {
            "producer_per_publish": len(producers) / publishes,
            "nested_producers": sum(1 for s in producers
                                    if s.parent and s.parent.span_id in producer_ids),
            "consumer_per_delivery": sum(1 for s in spans if s.kind == SpanKind.CONSUMER)
            / publishes,
            "publishes": publishes,
        }


def _provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _ms(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure_pika(url: str, rounds: int, block: int, warmup: int) -> list[Setup]:
    channel_provider, channel_exporter = _provider()
    setups = [
        Setup("plain", url),
        Setup("instrument_channel", url, lambda ch: PikaInstrumentor.instrument_channel(
            ch, tracer_provider=channel_provider), channel_exporter),
    ]
    # Global instrumentation wraps channel creation; set it up last, and undo it
    # once its channels exist, so the other set-ups stay as they were.
    global_provider, global_exporter = _provider()
    instrumentor = PikaInstrumentor()
    instrumentor.instrument(tracer_provider=global_provider)
    try:
        setups.append(Setup("instrument()", url, exporter=global_exporter))
    finally:
        instrumentor.uninstrument()

    for setup in setups:
        setup.run(warmup, keep=False)
    while any(len(s.samples) < rounds for s in setups):
        for setup in setups:
            setup.run(min(block, rounds - len(setup.samples)))
    for setup in setups:
        setup.close()
    return setups


def measure_novalab(url: str, rounds: int, block: int, warmup: int) -> dict[str, list[float]]:
    """novalab RPC calls over RabbitMQ, untraced (NoOpTracer) and traced (SDK)."""
    from novalab.reference.common.context import RequestContext
    from novalab.reference.rpc import RPCClient, RPCServer, Target, get_transport

    class Echo:
        def echo(self, ctxt, value):
            return value

    provider, _exporter = _provider()
    tracers = {"NoOpTracer": NoOpTracer(), "SDK tracer": provider.get_tracer("bench")}
    transports, servers, clients = [], [], {}
    for name, tracer in tracers.items():
        topic = f"bench_novalab_{uuid.uuid4().hex[:8]}"
        server_transport, client_transport = get_transport(url), get_transport(url)
        transports += [server_transport, client_transport]
        servers.append(RPCServer(server_transport, Target(topic, server="bench"), [Echo()],
                                 tracer=tracer).start())
        clients[name] = RPCClient(client_transport, Target(topic), tracer=tracer, timeout=10)
    samples: dict[str, list[float]] = {name: [] for name in clients}
    ctxt = RequestContext()

    def run(name: str, n: int, keep: bool = True) -> None:
        for _ in range(n):
            start = time.perf_counter()
            clients[name].call(ctxt, "echo", value=BODY.decode())
            if keep:
                samples[name].append(time.perf_counter() - start)

    try:
        for name in clients:
            run(name, warmup, keep=False)
        while any(len(v) < rounds for v in samples.values()):
            for name in clients:
                run(name, min(block, rounds - len(samples[name])))
    finally:
        for server in servers:
            server.stop()
            server.wait()
        for transport in transports:
            transport.close()
        _delete_queues(url, [q for server in servers for q in server.queues])
    return samples


def _delete_queues(url: str, queues: list[str]) -> None:
    connection = pika.BlockingConnection(_params(url))
    channel = connection.channel()
    for queue in queues:
        channel.queue_delete(queue)
    connection.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--block", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=30)
    args = parser.parse_args()
    try:
        pika.BlockingConnection(_params(args.url)).close()
    except Exception as exc:
        host = pika.URLParameters(args.url)
        print(f"RabbitMQ is not reachable at {host.host}:{host.port} ({type(exc).__name__}); "
              "nothing to measure. Start it with `rabbitmq-server -detached` and run again.")
        return 0

    params = pika.URLParameters(args.url)
    print(f"RabbitMQ {params.host}:{params.port}; pika {version('pika')}, "
          f"opentelemetry-instrumentation-pika {version('opentelemetry-instrumentation-pika')}, "
          f"opentelemetry-sdk {version('opentelemetry-sdk')}; Python {sys.version.split()[0]}")
    print(f"{args.rounds} round trips per set-up, interleaved in blocks of {args.block}, "
          f"after {args.warmup} warm-up; request body {len(BODY)} bytes\n")

    setups = measure_pika(args.url, args.rounds, args.block, args.warmup)
    plain = statistics.median(setups[0].samples)
    print("plain pika request/reply (BlockingConnection, no confirms)")
    print(f"{'set-up':<20}{'median ms':>10}{'p90 ms':>9}{'vs plain':>10}"
          f"{'PRODUCER/publish':>18}{'nested PRODUCER':>17}{'CONSUMER/delivery':>19}")
    for setup in setups:
        median = statistics.median(setup.samples)
        counts = setup.span_counts()
        spans = ("" if counts is None else
                 f"{counts['producer_per_publish']:>18.2f}{counts['nested_producers']:>17}"
                 f"{counts['consumer_per_delivery']:>19.2f}")
        print(f"{setup.name:<20}{1000 * median:>10.3f}{_ms(setup.samples, 0.9):>9.3f}"
              f"{median / plain:>9.2f}x{spans}")

    samples = measure_novalab(args.url, args.rounds, args.block, args.warmup)
    untraced = statistics.median(samples["NoOpTracer"])
    print("\nnovalab RPCClient.call over RabbitMQ (publisher confirms, one I/O thread per "
          "transport; the RPC layer's own send/process/reply/receive spans)")
    print(f"{'tracer':<20}{'median ms':>10}{'p90 ms':>9}{'vs NoOp':>10}")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"{name:<20}{1000 * median:>10.3f}{_ms(values, 0.9):>9.3f}{median / untraced:>9.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
