"""cephx in small: the cluster's daemons talk only to holders of its key.

Every local user reaches the monitor's and the OSDs' loopback ports. Before this,
anyone could read or overwrite any object there: another project's volume, a
private image's bytes. Each connection now opens with a challenge the client
answers with the keyring's key (reference/ceph/auth.py).
"""

from __future__ import annotations

import os
import socket
import stat
import struct

import pytest

from novalab.reference.ceph import auth, crush, errors, msgr
from novalab.reference.ceph.rados import Rados


def _object_on_an_osd(ceph) -> tuple[str, str]:
    """(its primary OSD's address, the pool) of an object the cluster now holds."""
    ceph.rados.open_ioctx("volumes").write_full("secret-object", b"another project's bytes")
    cluster_map = ceph.rados.cluster_map
    placement = crush.locate(cluster_map, "volumes", "secret-object")
    return crush.osd_address(cluster_map, placement.primary), "volumes"


def test_a_client_without_the_key_reads_and_writes_nothing(ceph):
    address, pool = _object_on_an_osd(ceph)
    stranger = msgr.Connection(address, ceph.w.tracer("stranger"), rpc_service="osd",
                               peer_service="ceph-osd", timeout=5)
    with pytest.raises(errors.PermissionDenied):
        stranger.call("read", {"pool": pool, "oid": "secret-object"})
    with pytest.raises(errors.PermissionDenied):
        stranger.call("write_full", {"pool": pool, "oid": "secret-object"}, b"overwritten")
    assert ceph.rados.open_ioctx(pool).read("secret-object") == b"another project's bytes"
    monitor = msgr.Connection(ceph.w.urls["ceph-mon"], ceph.w.tracer("stranger"),
                              rpc_service="mon", peer_service="ceph-mon", timeout=5)
    with pytest.raises(errors.PermissionDenied):
        monitor.call("osd_down", {"id": 0})


def test_a_wrong_key_is_refused_and_names_the_keyring(ceph):
    guess = auth.CephX(auth.ENTITY, b"0" * 32)
    with pytest.raises(errors.PermissionDenied) as refused:
        Rados(ceph.w.urls["ceph-mon"], ceph.w.tracer("stranger"), auth=guess).connect()
    assert "keyring" in str(refused.value)


def test_no_span_is_made_for_a_client_that_did_not_prove_itself(ceph):
    """A stranger's traceparent never joins a trace: the daemon closes the
    connection before any op, so nothing is parented on what it sent."""
    stranger = msgr.Connection(ceph.w.urls["ceph-mon"], ceph.w.tracer("stranger"),
                               rpc_service="mon", peer_service="ceph-mon", timeout=5)
    with pytest.raises(errors.PermissionDenied):
        stranger.call("get_cluster_map")
    servers = [s for s in ceph.telemetry.finished_spans()
               if s.resource.attributes.get("service.name") == "ceph-mon"
               and s.parent is not None and s.attributes.get("rpc.method") ==
               "get_cluster_map" and s.context.trace_id in {
                   c.context.trace_id for c in ceph.telemetry.finished_spans()
                   if c.resource.attributes.get("service.name") == "stranger"}]
    assert servers == []


def test_the_keyring_is_cephs_own_format_made_once_and_the_owners_alone(tmp_path):
    made = auth.of(tmp_path, create=True)
    again = auth.of(tmp_path, create=True)
    assert made == again and made.entity == "client.admin" and len(made.key) >= 16
    path = tmp_path / "ceph" / "keyring"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text()
    assert text.startswith("[client.admin]\n") and "\tkey = " in text


def test_a_host_without_the_keyring_says_which_file_to_copy(tmp_path, monkeypatch):
    monkeypatch.delenv(auth.ENV_FILE, raising=False)
    with pytest.raises(auth.MissingKeyring) as missing:
        auth.of(tmp_path)
    assert "keyring" in str(missing.value) and auth.ENV_FILE in str(missing.value)
    elsewhere = tmp_path / "copied"
    made = auth.of(tmp_path / "controller", create=True)
    elsewhere.write_bytes((tmp_path / "controller" / "ceph" / "keyring").read_bytes())
    monkeypatch.setenv(auth.ENV_FILE, str(elsewhere))
    assert auth.of(tmp_path) == made
    assert not os.path.exists(tmp_path / "ceph" / "keyring")


def _raw(address: str) -> socket.socket:
    host, port = msgr.split_address(address)
    sock = socket.create_connection((host, port), timeout=10)
    msgr.read_frame(sock)  # the challenge
    return sock


def test_a_stranger_cannot_make_a_daemon_hold_memory_before_it_proves_itself(ceph):
    """Reviewer's finding: a handshake frame announcing a 256 MiB payload made the
    daemon allocate it; before the proof, a frame is a few KiB and nothing more."""
    sock = _raw(ceph.w.urls["ceph-mon"])
    head = b"{}"
    sock.sendall(struct.pack(">I", len(head)) + head + struct.pack(">Q", 256 << 20))
    sock.settimeout(5)
    assert sock.recv(1) == b""  # closed at once, nothing read of the payload
    sock.close()


def test_a_malformed_proof_is_refused_in_words_not_a_dead_thread(ceph):
    sock = _raw(ceph.w.urls["ceph-mon"])
    sock.sendall(msgr.encode_frame({"entity": "client.admin", "proof": "é" * 64}))
    reply = msgr.read_frame(sock)
    assert reply is not None and reply[0]["error"]["code"] == "EACCES"
    sock.close()


def test_a_silent_stranger_is_dropped_after_the_handshake_timeout(ceph, monkeypatch):
    monkeypatch.setattr(msgr, "HANDSHAKE_TIMEOUT", 0.3)
    sock = _raw(ceph.w.urls["ceph-mon"])
    sock.settimeout(10)
    assert sock.recv(1) == b""  # the daemon gave up on it; its thread is free
    sock.close()
