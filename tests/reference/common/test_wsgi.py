"""The WSGI plumbing every service shares."""

from __future__ import annotations

import socket

import pytest
from flask import Flask

from novalab.reference.common.wsgi import ServerThread


def test_a_taken_port_is_an_error_that_names_the_service_not_an_exit():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match=rf"nova-api: cannot listen on 127.0.0.1:{port}"):
            ServerThread(Flask("x"), "127.0.0.1", port, name="nova-api")
