"""The msgr wire: frames, errors by errno name, reconnects, and a span on each side."""

from __future__ import annotations

import socket

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from novalab.reference.ceph import errors, msgr


class Echo:
    def op_echo(self, args, payload):
        return {"args": args, "size": len(payload)}, payload[::-1]

    def op_missing(self, args, payload):
        raise errors.ObjectNotFound("no such thing")

    def op_crash(self, args, payload):
        raise RuntimeError("boom")


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("test"), exporter


@pytest.fixture
def server(spans):
    running = msgr.Server(Echo(), rpc_service="test", tracer=spans[0], auth=None).start()
    yield running
    running.stop()


def test_frame_layout():
    frame = msgr.encode_frame({"op": "x"}, b"abc")
    head_len = int.from_bytes(frame[:4], "big")
    assert frame[4:4 + head_len] == b'{"op":"x"}'
    assert int.from_bytes(frame[4 + head_len:12 + head_len], "big") == 3
    assert frame[12 + head_len:] == b"abc"


def test_call_carries_args_and_binary_payload(server, spans):
    conn = msgr.Connection(server.address, spans[0], rpc_service="test",
                           peer_service="ceph-test")
    payload = bytes(range(256)) * 4096  # 1 MiB, every byte value
    result, data = conn.call("echo", {"oid": "a", "n": 1}, payload)
    assert result == {"args": {"oid": "a", "n": 1}, "size": len(payload)}
    assert data == payload[::-1]
    conn.close()


def test_errors_come_back_by_errno_name(server, spans):
    tracer, exporter = spans
    conn = msgr.Connection(server.address, tracer, rpc_service="test",
                           peer_service="ceph-test")
    with pytest.raises(errors.ObjectNotFound, match="no such thing"):
        conn.call("missing")
    with pytest.raises(errors.NotSupported):
        conn.call("nope")
    with pytest.raises(errors.Error) as failure:
        conn.call("crash")
    assert failure.value.code == "EIO" and "RuntimeError: boom" in str(failure.value)
    by_name = {(s.name, s.kind): s for s in exporter.get_finished_spans()}
    # A missing object is the caller's business; a crash is the daemon's.
    missing_server = by_name[("ceph.test/missing", SpanKind.SERVER)]
    assert missing_server.status.status_code is StatusCode.UNSET
    assert missing_server.attributes["error.type"] == "ENOENT"
    assert by_name[("ceph.test/missing", SpanKind.CLIENT)].status.status_code is StatusCode.ERROR
    assert by_name[("ceph.test/crash", SpanKind.SERVER)].status.status_code is StatusCode.ERROR
    conn.close()


def test_client_and_server_spans_share_the_trace(server, spans):
    tracer, exporter = spans
    conn = msgr.Connection(server.address, tracer, rpc_service="test",
                           peer_service="ceph-test")
    with tracer.start_as_current_span("caller") as caller:
        conn.call("echo", {"pool": "p", "oid": "o"}, b"x", {msgr.CEPH_PG: "1.0"})
    finished = {s.kind: s for s in exporter.get_finished_spans() if s.name == "ceph.test/echo"}
    client, srv = finished[SpanKind.CLIENT], finished[SpanKind.SERVER]
    assert client.parent.span_id == caller.get_span_context().span_id
    assert srv.parent.span_id == client.context.span_id
    assert srv.context.trace_id == caller.get_span_context().trace_id
    assert client.attributes["rpc.system"] == "ceph"
    assert client.attributes["rpc.method"] == "echo"
    assert client.attributes["peer.service"] == "ceph-test"
    assert client.attributes["server.port"] == server.port
    assert client.attributes["ceph.pg"] == "1.0"
    assert srv.attributes["ceph.pool"] == "p" and srv.attributes["ceph.object"] == "o"
    conn.close()


def test_a_restarted_daemon_is_reconnected(spans):
    tracer = spans[0]
    first = msgr.Server(Echo(), rpc_service="test", tracer=tracer, auth=None).start()
    port = first.port
    conn = msgr.Connection(first.address, tracer, rpc_service="test",
                           peer_service="ceph-test")
    assert conn.call("echo", {}, b"1")[1] == b"1"
    first.stop()
    with pytest.raises(errors.ConnectionFailed):
        conn.call("echo", {}, b"2")
    second = msgr.Server(Echo(), rpc_service="test", tracer=tracer, port=port,
                         auth=None).start()
    try:
        assert conn.call("echo", {}, b"3")[1] == b"3"
    finally:
        second.stop()
        conn.close()


def test_a_stale_kept_socket_is_replaced_transparently(spans):
    """The daemon restarts between two calls: the second still succeeds."""
    tracer = spans[0]
    first = msgr.Server(Echo(), rpc_service="test", tracer=tracer, auth=None).start()
    conn = msgr.Connection(first.address, tracer, rpc_service="test",
                           peer_service="ceph-test")
    conn.call("echo")
    first.stop()
    second = msgr.Server(Echo(), rpc_service="test", tracer=tracer,
                         port=first.port, auth=None).start()
    try:
        assert conn.call("echo", {}, b"again")[1] == b"niaga"
    finally:
        second.stop()
        conn.close()


def test_a_garbled_frame_drops_only_that_connection(server, spans):
    with socket.create_connection((server.host, server.port)) as raw:
        raw.sendall((1 << 30).to_bytes(4, "big"))   # a header far over the limit
        assert raw.recv(1) == b""                     # the daemon hangs up
    conn = msgr.Connection(server.address, spans[0], rpc_service="test",
                           peer_service="ceph-test")
    assert conn.call("echo", {}, b"ok")[1] == b"ko"
    conn.close()
