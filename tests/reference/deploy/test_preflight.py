"""preflight.ensure_vhost: cell1's virtual host, made as DevStack makes it, or a clear error."""

from __future__ import annotations

import uuid

import loopback
import pytest

from novalab.reference.deploy import preflight


def test_a_missing_vhost_without_rabbitmqctl_says_what_to_run(monkeypatch):
    def refused(url, timeout=5.0):
        raise preflight.PreflightError("RabbitMQ refused it: ProbableAccessDeniedError")

    monkeypatch.setattr(preflight, "check_broker", refused)
    monkeypatch.setattr(preflight.shutil, "which", lambda name: None)
    with pytest.raises(preflight.PreflightError) as error:
        preflight.ensure_vhost("amqp://guest:guest@127.0.0.1:5672/nova_cell1")
    message = str(error.value)
    assert "rabbitmqctl add_vhost nova_cell1" in message
    assert "set_permissions -p nova_cell1 guest" in message


def test_the_memory_broker_needs_no_vhost():
    assert preflight.ensure_vhost("memory:///x_nova_cell1") is None


@pytest.mark.amqp
def test_a_missing_vhost_is_created_and_then_reachable():
    loopback.require_rabbitmq()
    if not loopback.rabbitmqctl("list_vhosts"):
        pytest.skip("rabbitmqctl cannot reach the machine's RabbitMQ")
    vhost = f"novalab-test-{uuid.uuid4().hex[:8]}_cell1"
    url = f"{loopback.AMQP_URL.rstrip('/')}/{vhost}"
    try:
        assert preflight.ensure_vhost(url) == vhost
        assert preflight.ensure_vhost(url) is None  # there now: nothing to do
        preflight.check_broker(url)
    finally:
        loopback.rabbitmqctl("delete_vhost", vhost)
