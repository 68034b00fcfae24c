"""A real boot projects onto all 58 steps, in causal order, over each broker."""

from __future__ import annotations

import pytest

from novalab.diagrams.check import check
from novalab.diagrams.flows import get_flow
from novalab.diagrams.load import load_trace
from novalab.reference.deploy.boot import BootRequest, boot


def _check(cloud):
    result = boot(cloud, BootRequest(name="vm-flow"))
    assert result.active, result.server
    report = check(load_trace(result.spans), get_flow())
    missing = [r.step.number for r in report.results if not r.matched]
    return report, missing


def test_memory_broker_58_of_58(cloud):
    report, missing = _check(cloud)
    assert missing == []
    assert report.summary == "58/58 steps matched, 0 out of order"


@pytest.mark.amqp
def test_rabbitmq_58_of_58(amqp_url, cloud_factory):
    report, missing = _check(cloud_factory(transport_url=amqp_url))
    assert missing == []
    assert report.summary == "58/58 steps matched, 0 out of order"
