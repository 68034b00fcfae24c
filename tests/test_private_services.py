"""The helpers that give a test servers of its own (tests/private_services.py)."""

from __future__ import annotations

import socket

import private_services


def test_a_free_port_is_outside_the_ephemeral_range_and_free():
    """A private RabbitMQ restarted while a cloud's services reconnect lost its
    distribution port to one of their outgoing connections ("dist_port_already_used",
    seen under pytest-xdist): a port the kernel never hands out to them cannot be."""
    ephemeral = private_services.ephemeral_ports()
    ports = {private_services.free_port() for _ in range(20)}
    assert not ports & set(ephemeral)
    for port in ports:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))
