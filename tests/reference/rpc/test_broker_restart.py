"""RPC over RabbitMQ through a broker restart: reconnect, and lose no message sent after.

The test stops its broker, so the broker is a node of its own (``private_broker``), never
the machine's, which the tests running beside it use meanwhile.
"""

from __future__ import annotations

import logging
import time

import pytest
from reference.rpc.test_rpc import Recorder, _retry

from novalab.reference.common.context import RequestContext
from novalab.reference.rpc.transport import MessageDeliveryFailure

pytestmark = pytest.mark.e2e  # starts a RabbitMQ node of its own


@pytest.mark.amqp
def test_reconnects_after_broker_restart(private_broker, topic, caplog):
    rpc, broker = private_broker
    caplog.set_level(logging.INFO, logger="novalab.rpc")
    endpoint = Recorder()
    rpc.server([endpoint], topic=topic)
    client = rpc.client(topic=topic, timeout=5)
    ctxt = RequestContext()
    assert client.call(ctxt, "add", a=1, b=2) == 3

    broker.ctl("stop_app")
    try:  # while the broker is down a publish waits out its timeout, then says why
        with pytest.raises(MessageDeliveryFailure, match="reconnecting"):
            client.prepare(timeout=1).cast(ctxt, "record", n=0)
    finally:
        broker.ctl("start_app")

    deadline = time.monotonic() + 30
    _retry(lambda: client.cast(ctxt, "record", n=1), deadline)
    assert endpoint.cast_received.wait(max(0.0, deadline - time.monotonic()))
    assert _retry(lambda: client.call(ctxt, "add", a=2, b=3), deadline) == 5
    assert [kwargs for _, kwargs in endpoint.casts] == [{"n": 1}]  # n=0 was never sent
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("Lost the connection to RabbitMQ") for m in messages)
    assert any(m.startswith("Reconnected to RabbitMQ") for m in messages)
