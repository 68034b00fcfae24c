"""Diagrams of a trace that crosses hosts (issue 13, item 4): who ran where.

The recorded RabbitMQ boot is re-labelled as ``novalab service`` on two hosts
would label it (controller 198.18.0.1, compute-1 198.18.0.2): the lifelines and
the call graph's clusters then name their hosts. The recording as it is (one
machine: no host.ip) draws as before.
"""

from __future__ import annotations

import dataclasses

import pytest

from novalab.diagrams import callgraph, hosts, sequence
from novalab.diagrams.model import Trace
from novalab.tracing import attributes as attr

ADDRESSES = {"controller": "198.18.0.1", "compute-1": "198.18.0.2"}


@pytest.fixture(scope="module")
def spread(rabbitmq_trace) -> Trace:
    def moved(span):
        if span.service == "novalab-client":
            return span  # the user's machine, no --advertise-address
        host = "compute-1" if span.host == "compute-1" else "controller"
        resource = dict(span.resource, **{attr.HOST_NAME: host,
                                          attr.HOST_IP: [ADDRESSES[host]]})
        return dataclasses.replace(span, host=host, resource=resource)

    return Trace.of(moved(span) for span in rabbitmq_trace)


def test_one_machine_draws_no_hosts(rabbitmq_trace):
    assert hosts.by_service(rabbitmq_trace) == {}
    diagram = sequence.from_trace(rabbitmq_trace)
    assert all(p.hosts == () for p in diagram.participants)
    assert "cluster_host_" not in callgraph.CallGraph(rabbitmq_trace).to_dot()


def test_lifelines_name_their_host(spread):
    assert hosts.addresses(spread) == {"controller": ("198.18.0.1",),
                                       "compute-1": ("198.18.0.2",)}
    on = {p.name: p.hosts for p in sequence.from_trace(spread).participants}
    assert on["nova-compute"] == ("compute-1",)
    assert on["nova-api"] == on["keystone"] == ("controller",)
    mermaid = sequence.render(sequence.from_trace(spread), "mermaid")
    assert "nova-compute @ compute-1" in mermaid
    assert '<text class="host"' in sequence.render(sequence.from_trace(spread), "svg")


def test_call_graph_clusters_by_host(spread):
    dot = callgraph.CallGraph(spread).to_dot()
    assert "cluster_host_controller" in dot and 'label="host compute-1 (198.18.0.2)"' in dot
    # nova-compute's classes sit in compute-1's cluster, the scheduler's in the controller's
    compute_host = dot.index("cluster_host_compute-1")
    assert dot.index("cluster_nova-compute", compute_host) > compute_host


def test_jaeger_export_keeps_host_ip(spread):
    from novalab.diagrams.jaeger import to_jaeger

    processes = to_jaeger(spread)["data"][0]["processes"]
    tags = [{t["key"]: t["value"] for t in p["tags"]} for p in processes.values()]
    assert {"host.name": "compute-1", "host.ip": '["198.18.0.2"]'}.items() <= \
        next(t for t in tags if t.get("host.name") == "compute-1").items()
