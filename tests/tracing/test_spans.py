"""``@upstream``: spans named after the upstream function, with code attributes."""

from __future__ import annotations

import pytest
from opentelemetry.trace import StatusCode

from novalab.tracing.setup import Telemetry
from novalab.tracing.spans import upstream, upstream_url


class Manager:
    def __init__(self, tracer):
        self.tracer = tracer

    @upstream("nova/compute/manager.py", "ComputeManager._build_resources")
    def build(self, value):
        return value * 2

    @upstream("nova/scheduler/manager.py", "SchedulerManager.run_instance", ref="grizzly-eol")
    def fail(self):
        raise RuntimeError("boom")


def test_span_carries_upstream_code_attributes():
    telemetry = Telemetry(memory=True, otlp=False)
    assert Manager(telemetry.tracer("nova-compute")).build(21) == 42
    (span,) = telemetry.finished_spans()
    assert span.name == "ComputeManager._build_resources"
    assert span.attributes["code.function.name"] == \
        "nova.compute.manager.ComputeManager._build_resources"
    assert span.attributes["code.file.path"] == "nova/compute/manager.py"
    assert span.attributes["novalab.upstream.url"] == \
        "https://opendev.org/openstack/nova/src/branch/master/nova/compute/manager.py"


def test_exceptions_are_recorded_and_reraised():
    telemetry = Telemetry(memory=True, otlp=False)
    with pytest.raises(RuntimeError):
        Manager(telemetry.tracer("nova-scheduler")).fail()
    (span,) = telemetry.finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert span.events[0].name == "exception"
    assert "/src/tag/grizzly-eol/" in span.attributes["novalab.upstream.url"]


def test_upstream_url_per_project():
    assert upstream_url("keystone/token/provider.py").startswith(
        "https://opendev.org/openstack/keystone/")
