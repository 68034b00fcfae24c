"""msgr: the wire between Ceph daemons and their clients, in small.

Real Ceph speaks its own binary messenger protocol (msgr2: banner, auth
handshake, typed messages such as ``MOSDOp``/``MOSDOpReply`` with encoded
structs). novalab's is a tiny framed protocol of its own over TCP, enough to
carry the same conversations. Each frame is::

    4 bytes   header length, big-endian
    N bytes   header: JSON {"op": ..., "args": {...}, "traceparent": ..., "tracestate": ...}
    8 bytes   payload length, big-endian
    M bytes   payload: the object bytes, never JSON-encoded

A reply is a frame too, its header ``{"ok": true, "result": {...}}`` or
``{"ok": false, "error": {"code": "ENOENT", "message": ...}}`` (Ceph answers a
negative errno; :mod:`errors` rebuilds the exception by name).

Every connection to a daemon started with ``auth`` (a :class:`auth.CephX`, which
every deployment passes) opens with cephx's proof before any op: the daemon sends
``{"auth": "cephx", "challenge": HEX}``, the client ``{"entity", "proof"}``, the
daemon ``{"ok": true}`` or an ``EACCES`` error and the end of the connection.

Tracing: there is no OpenTelemetry instrumentation for a protocol of our own
(nor for Ceph's messenger), so this module makes the spans by hand, following
the RPC conventions: the caller's :class:`Connection` a CLIENT span per op, with
the W3C ``traceparent``/``tracestate`` injected into the header; the daemon's
:class:`Server` a SERVER span per op, parented on the context it extracts. Both
are named ``ceph.<service>/<op>`` (``ceph.osd/read``), with ``rpc.system=ceph``,
``rpc.service`` the daemon kind (``mon``, ``osd``) and ``rpc.method`` the op.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import socketserver
import struct
import threading

from opentelemetry import trace

from novalab.reference.ceph import auth as cephx
from novalab.reference.ceph import errors
from novalab.tracing import attributes as attr
from novalab.tracing import propagation

LOG = logging.getLogger(__name__)

_HEADER_LEN = struct.Struct(">I")
_PAYLOAD_LEN = struct.Struct(">Q")
MAX_HEADER = 1 << 20
MAX_PAYLOAD = 256 << 20
# Before a client has proved it holds the key, a frame is a small header and no payload,
# answered within a few seconds, and only so many such clients wait at once: a stranger
# can make a daemon hold neither memory nor threads.
HANDSHAKE_HEADER = 4096
HANDSHAKE_TIMEOUT = 5.0
MAX_HANDSHAKES = 64

# Span vocabulary (tracing/attributes.py): rpc.*, peer.service, server.*,
# network.peer.* and error.type are OpenTelemetry names; ceph.* are novalab's own (no
# convention covers Ceph). The rpc.system of every Ceph span:
RPC_SYSTEM = "ceph"
# Callers name a span's placement group as ``msgr.CEPH_PG`` (tests/reference/ceph).
CEPH_PG = attr.CEPH_PG

# Errors that are the caller's business (the daemon did its job): no ERROR status on
# the SERVER span, as HTTP servers leave 4xx unmarked. The CLIENT span is marked.
_CALLER_ERRORS = {"ENOENT", "EEXIST", "EINVAL", "ENAMETOOLONG", "EOPNOTSUPP", "ESTALE"}


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


# Frames -------------------------------------------------------------------------------

def encode_frame(header: dict, payload: bytes = b"") -> bytes:
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    return b"".join((_HEADER_LEN.pack(len(head)), head, _PAYLOAD_LEN.pack(len(payload)),
                     payload))


def _recv_exact(sock: socket.socket, size: int, *, eof_ok: bool = False) -> bytes | None:
    buffer = bytearray(size)
    view = memoryview(buffer)
    received = 0
    while received < size:
        count = sock.recv_into(view[received:], min(size - received, 1 << 20))
        if count == 0:
            if eof_ok and received == 0:
                return None
            raise ConnectionError("peer closed the connection in the middle of a frame")
        received += count
    return bytes(buffer)


def read_frame(sock: socket.socket, max_header: int = MAX_HEADER,
               max_payload: int = MAX_PAYLOAD) -> tuple[dict, bytes] | None:
    """The next ``(header, payload)``; None if the peer closed cleanly between frames."""
    raw = _recv_exact(sock, _HEADER_LEN.size, eof_ok=True)
    if raw is None:
        return None
    (head_len,) = _HEADER_LEN.unpack(raw)
    if head_len > max_header:
        raise ConnectionError(f"frame header of {head_len} bytes is too large")
    header = json.loads(_recv_exact(sock, head_len))
    (payload_len,) = _PAYLOAD_LEN.unpack(_recv_exact(sock, _PAYLOAD_LEN.size))
    if payload_len > max_payload:
        raise ConnectionError(f"frame payload of {payload_len} bytes is too large")
    payload = _recv_exact(sock, payload_len) if payload_len else b""
    if not isinstance(header, dict):
        raise ConnectionError("frame header is not a JSON object")
    return header, payload


# The daemon's side --------------------------------------------------------------------

class _ThreadingServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class _FrameHandler(socketserver.BaseRequestHandler):
    """One thread per connection: read a frame, dispatch, answer, until the peer leaves."""

    def handle(self) -> None:
        owner: Server = self.server.owner
        sock: socket.socket = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        owner._track(sock)
        try:
            if owner.auth is not None and not owner.authenticate(sock, self.client_address):
                return
            while True:
                try:
                    frame = read_frame(sock)
                except (OSError, ValueError) as exc:
                    LOG.debug("%s: dropping connection from %s: %s", owner.name,
                              self.client_address, exc)
                    return
                if frame is None:
                    return
                reply = owner.dispatch(*frame, peer=self.client_address)
                try:
                    sock.sendall(reply)
                except OSError:
                    return
        finally:
            owner._untrack(sock)


class Server:
    """Serve ``handler``'s ``op_<name>(args, payload)`` methods on a TCP port.

    An op method returns a result dict, or ``(result, payload_bytes)``; it raises
    an :class:`errors.Error` to answer an errno. Port 0 picks a free port.
    """

    def __init__(self, handler, *, rpc_service: str, tracer: trace.Tracer,
                 host: str = "127.0.0.1", port: int = 0, name: str | None = None,
                 auth: cephx.CephX | None):
        self.handler = handler
        # Required, so no daemon is left open by a builder that forgot it; None is
        # Ceph's ``auth_cluster_required = none``, which only msgr's own tests use.
        self.auth = auth
        self.rpc_service = rpc_service
        self.tracer = tracer
        self.name = name or f"{RPC_SYSTEM}-{rpc_service}"
        try:
            self._server = _ThreadingServer((host, port), _FrameHandler)
        except OSError as exc:
            raise OSError(f"{self.name}: cannot listen on {host}:{port}: {exc.strerror}. "
                          "Is another daemon using that port?") from exc
        self._server.owner = self
        self.host, self.port = self._server.server_address[:2]
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._handshakes = threading.BoundedSemaphore(MAX_HANDSHAKES)
        # A daemon stops within one poll: 50 ms, not socketserver's 0.5 s, as a cloud
        # stops its OSDs one after another (a cluster has four such loops, a few us a poll).
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05},
                                        name=f"{self.name}-msgr", daemon=True)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> Server:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and cut every open connection (clients see the daemon go)."""
        started = self._thread.is_alive()
        if started:
            self._server.shutdown()
        self._server.server_close()
        with self._lock:
            connections = list(self._connections)
        for sock in connections:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if started:
            self._thread.join(timeout=5)

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._connections.add(sock)

    def _untrack(self, sock: socket.socket) -> None:
        with self._lock:
            self._connections.discard(sock)

    def authenticate(self, sock: socket.socket, peer) -> bool:
        """Challenge the client; answer and close if its proof is not the key's.

        Until it has proved itself, a client gets a small frame, a few seconds and one
        of :data:`MAX_HANDSHAKES` places: anything else ends the connection."""
        if not self._handshakes.acquire(blocking=False):
            return False
        challenge = cephx.challenge()
        try:
            sock.settimeout(HANDSHAKE_TIMEOUT)
            sock.sendall(encode_frame({"auth": "cephx", "challenge": challenge.hex()}))
            frame = read_frame(sock, max_header=HANDSHAKE_HEADER, max_payload=0)
            header = frame[0] if frame else {}
            if self.auth.accepts(header.get("entity"), challenge, header.get("proof")):
                sock.settimeout(None)
                sock.sendall(encode_frame({"ok": True}))
                return True
        except Exception as exc:  # noqa: BLE001 - whatever a stranger sends ends here
            LOG.debug("%s: handshake with %s failed: %s", self.name, peer, exc)
            return False
        finally:
            self._handshakes.release()
        LOG.warning("%s: refused a client at %s without the cluster's key", self.name, peer)
        with contextlib.suppress(OSError):
            sock.sendall(encode_frame({"ok": False, "error": {
                "code": errors.PermissionDenied.code,
                "message": f"{self.name} refused the client's cephx proof: it needs the "
                           "cluster's keyring"}}))
        return False

    def dispatch(self, header: dict, payload: bytes, peer=None) -> bytes:
        """Run one op in a SERVER span and return the encoded reply frame."""
        op = str(header.get("op", ""))
        args = header.get("args") or {}
        attributes = {attr.RPC_SYSTEM: RPC_SYSTEM, attr.RPC_SERVICE: self.rpc_service,
                      attr.RPC_METHOD: op, attr.SERVER_ADDRESS: self.host,
                      attr.SERVER_PORT: self.port}
        if peer:
            attributes[attr.NETWORK_PEER_ADDRESS] = peer[0]
            attributes[attr.NETWORK_PEER_PORT] = peer[1]
        if isinstance(args, dict):
            for key, name in (("pool", attr.CEPH_POOL), ("oid", attr.CEPH_OBJECT),
                              ("epoch", attr.CEPH_MAP_EPOCH)):
                if isinstance(args.get(key), str | int):
                    attributes[name] = args[key]
        # The span ends before the reply is sent, so a caller holding the reply can
        # already find the daemon's span (the send itself is not covered).
        with self.tracer.start_as_current_span(
                f"{RPC_SYSTEM}.{self.rpc_service}/{op}", context=propagation.extract(header),
                kind=trace.SpanKind.SERVER, attributes=attributes,
                record_exception=False, set_status_on_exception=False) as span:
            reply, data = self._run(op, args, payload, span)
        return encode_frame(reply, data)

    def _run(self, op: str, args, payload: bytes, span) -> tuple[dict, bytes]:
        method = getattr(self.handler, f"op_{op}", None) if op.isidentifier() else None
        try:
            if method is None:
                raise errors.NotSupported(f"{self.name} has no op '{op}'")
            if not isinstance(args, dict):
                raise errors.InvalidArgumentError("args must be a JSON object")
            result = method(args, payload)
        except errors.Error as exc:
            span.set_attribute(attr.ERROR_TYPE, exc.code)
            if exc.code not in _CALLER_ERRORS:
                span.set_status(trace.StatusCode.ERROR, str(exc))
            return {"ok": False, "error": {"code": exc.code, "message": str(exc)}}, b""
        except Exception as exc:
            LOG.exception("%s: op %s failed", self.name, op)
            span.record_exception(exc)
            span.set_attribute(attr.ERROR_TYPE, type(exc).__name__)
            span.set_status(trace.StatusCode.ERROR, f"{type(exc).__name__}: {exc}")
            return {"ok": False, "error": {"code": "EIO",
                                           "message": f"{type(exc).__name__}: {exc}"}}, b""
        data = b""
        if isinstance(result, tuple):
            result, data = result
        return {"ok": True, "result": result or {}}, data


# The caller's side --------------------------------------------------------------------

class Connection:
    """One client's socket to one daemon: ops go one at a time, in order.

    Thread-safe (a lock serialises the request/reply exchanges). A socket the peer
    has closed since its last use (the daemon restarted) is reconnected and the op
    sent again once; an op that fails on a fresh socket raises
    :class:`errors.ConnectionFailed`. That resend is at-least-once: an op that the
    old daemon ran before the connection broke runs again. Real Ceph's lossless
    sessions resend with sequence numbers so the OSD can drop duplicates.
    """

    def __init__(self, address: str, tracer: trace.Tracer, *, rpc_service: str,
                 peer_service: str, timeout: float = 30.0, auth: cephx.CephX | None = None):
        self.address = address
        self.auth = auth
        self.host, self.port = split_address(address)
        self.tracer = tracer
        self.rpc_service = rpc_service
        self.peer_service = peer_service
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()

    def call(self, op: str, args: dict | None = None, payload: bytes = b"",
             attributes: dict | None = None) -> tuple[dict, bytes]:
        """Send ``op`` and return ``(result, payload)``; raise the daemon's error."""
        span_attributes = {attr.RPC_SYSTEM: RPC_SYSTEM, attr.RPC_SERVICE: self.rpc_service,
                           attr.RPC_METHOD: op, attr.PEER_SERVICE: self.peer_service,
                           attr.SERVER_ADDRESS: self.host, attr.SERVER_PORT: self.port,
                           **(attributes or {})}
        with self.tracer.start_as_current_span(f"{RPC_SYSTEM}.{self.rpc_service}/{op}",
                                               kind=trace.SpanKind.CLIENT,
                                               attributes=span_attributes) as span:
            header = {"op": op, "args": args or {}}
            propagation.inject(header)  # traceparent/tracestate of this CLIENT span
            try:
                reply, data = self._exchange(encode_frame(header, payload))
                if not reply.get("ok"):
                    error = reply.get("error") or {}
                    raise errors.from_code(str(error.get("code", "EIO")),
                                           str(error.get("message", "")))
            except errors.Error as exc:
                span.set_attribute(attr.ERROR_TYPE, exc.code)
                raise
            return reply.get("result") or {}, data

    def _exchange(self, frame: bytes) -> tuple[dict, bytes]:
        with self._lock:
            for _attempt in range(2):
                fresh = self._sock is None
                if fresh:
                    self._sock = self._connect()
                try:
                    self._sock.sendall(frame)
                    reply = read_frame(self._sock)
                    if reply is None:
                        raise ConnectionError("connection closed by the peer")
                    if "auth" in reply[0]:  # a challenge: this client was made without a key
                        raise errors.PermissionDenied(
                            f"{self.peer_service} at {self.address} asks for cephx, and "
                            "this client holds no key of the cluster's keyring")
                    return reply
                except TimeoutError as exc:
                    self._close_socket()
                    raise errors.TimedOut(f"no reply from {self.peer_service} at "
                                          f"{self.address} in {self.timeout:g} s") from exc
                except errors.PermissionDenied:
                    self._close_socket()
                    raise
                except (OSError, ValueError) as exc:
                    self._close_socket()
                    if fresh:
                        raise errors.ConnectionFailed(
                            f"{self.peer_service} at {self.address}: {exc}") from exc
                    # A socket kept from earlier went stale: reconnect and resend once.
            raise AssertionError("unreachable")

    def _connect(self) -> socket.socket:
        try:
            sock = socket.create_connection((self.host, self.port),
                                            timeout=min(self.timeout, 5.0))
        except OSError as exc:
            raise errors.ConnectionFailed(
                f"cannot connect to {self.peer_service} at {self.address}: "
                f"{exc.strerror or exc}") from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(self.timeout)
        try:
            self._prove(sock)
        except errors.PermissionDenied:
            sock.close()
            raise
        except (OSError, ValueError) as exc:
            sock.close()
            raise errors.ConnectionFailed(f"{self.peer_service} at {self.address}: the cephx "
                                          f"handshake failed: {exc}") from exc
        return sock

    def _prove(self, sock: socket.socket) -> None:
        """Answer the daemon's cephx challenge. A daemon without auth sends none: after
        :data:`HANDSHAKE_TIMEOUT` that is a ConnectionFailed that says so."""
        if self.auth is None:
            return
        sock.settimeout(min(self.timeout, HANDSHAKE_TIMEOUT))
        try:
            frame = read_frame(sock, max_header=HANDSHAKE_HEADER, max_payload=0)
        except TimeoutError as exc:
            raise ConnectionError("it sent no cephx challenge: does it run without "
                                  "auth?") from exc
        challenge = (frame or ({}, b""))[0].get("challenge")
        if not isinstance(challenge, str):
            raise ConnectionError(f"{self.peer_service} sent no cephx challenge")
        proof = self.auth.proof(bytes.fromhex(challenge))
        sock.sendall(encode_frame({"entity": self.auth.entity, "proof": proof}))
        verdict = (read_frame(sock, max_header=HANDSHAKE_HEADER, max_payload=0)
                   or ({}, b""))[0]
        sock.settimeout(self.timeout)
        if not verdict.get("ok"):
            raise errors.PermissionDenied(
                f"{self.peer_service} at {self.address} refused {self.auth.entity}'s key: "
                f"is this host's keyring ({cephx.ENV_FILE} or STATE_DIR/ceph/keyring) "
                "the cluster's?")

    def _close_socket(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    def close(self) -> None:
        with self._lock:
            self._close_socket()


class ConnectionPool:
    """A client's connections, one per daemon address."""

    def __init__(self, tracer: trace.Tracer, *, rpc_service: str, peer_service: str,
                 timeout: float = 30.0, auth: cephx.CephX | None = None):
        self.tracer = tracer
        self.auth = auth
        self.rpc_service = rpc_service
        self.peer_service = peer_service
        self.timeout = timeout
        self._connections: dict[str, Connection] = {}
        self._lock = threading.Lock()

    def get(self, address: str) -> Connection:
        with self._lock:
            connection = self._connections.get(address)
            if connection is None:
                connection = Connection(address, self.tracer, rpc_service=self.rpc_service,
                                        peer_service=self.peer_service, timeout=self.timeout,
                                        auth=self.auth)
                self._connections[address] = connection
            return connection

    def close(self) -> None:
        with self._lock:
            connections = list(self._connections.values())
            self._connections.clear()
        for connection in connections:
            connection.close()
