"""Call graphs: components coloured by the seed legend, edges styled by interaction."""

from __future__ import annotations

import shutil

import pytest

from novalab.diagrams import callgraph
from novalab.diagrams.callgraph import COLOURS, CallGraph


@pytest.fixture(scope="module")
def graph(embedded_trace):
    return CallGraph(embedded_trace)


def _by_label(graph):
    return {c.label: c for c in graph.components.values()}


def test_components_are_coloured_by_the_legend(graph):
    found = _by_label(graph)
    expected = {"ServersController": "controller", "FilterScheduler": "scheduler",
                "HostManager": "scheduler", "scheduler/driver.py": "scheduler",
                "ComputeManager": "manager", "ConductorManager": "manager",
                "SchedulerManager": "manager", "compute.API": "manager",
                "ConductorAPI": "manager", "LibvirtDriver": "virt", "virt/images.py": "virt",
                "GlanceImageServiceV2": "client", "keystone": "service",
                "glance-api": "service", "libvirt": "infra", "Database (sqlite)": "infra",
                "novalab-client": "actor"}
    assert {label: found[label].category for label in expected} == expected
    assert found["ServersController"].cluster == "nova-api"
    assert found["LibvirtDriver"].url.startswith("https://opendev.org/openstack/nova/")


def test_one_component_per_service_it_runs_in(graph):
    clients = [c for c in graph.components.values() if c.label == "GlanceImageServiceV2"]
    assert sorted(c.cluster for c in clients) == ["nova-api", "nova-compute"]


def _edge(graph, source_label, target_label, kind):
    keys = {c.label: c.key for c in graph.components.values()
            if c.label in (source_label, target_label)}
    return graph.edges.get((keys[source_label], keys[target_label], kind))


def test_edges_by_interaction(graph):
    assert len(_edge(graph, "ConductorAPI", "ConductorManager", "amqp")) == 6
    assert len(_edge(graph, "SchedulerAPI", "SchedulerManager", "amqp")) == 1
    assert len(_edge(graph, "ComputeAPI", "ComputeManager", "amqp")) == 1
    assert len(_edge(graph, "ServersController", "compute.API", "python")) == 3
    rest = _edge(graph, "GlanceImageServiceV2", "glance-api", "rest")
    assert rest is not None and all(latency > 0 for latency in rest)
    assert _edge(graph, "LibvirtDriver", "libvirt", "python")
    assert _edge(graph, "novalab-client", "keystone", "rest")


def test_dot_golden(embedded_trace, golden):
    golden("callgraph.dot", callgraph.render(embedded_trace, "dot"))


def test_dot_styles(embedded_trace):
    dot = callgraph.render(embedded_trace, "dot")
    assert f'fillcolor="{COLOURS["controller"]}"' in dot
    assert 'color="#c0392b"' in dot and "style=dashed" in dot
    assert "6× · " in dot  # count and latency labels
    assert "subgraph \"cluster_nova-compute\"" in dot


def test_rendered_svg_and_png(embedded_trace):
    if shutil.which("dot") is None:
        pytest.skip("graphviz' dot is not installed (scripts/setup.sh installs graphviz)")
    svg = callgraph.render(embedded_trace, "svg")
    assert svg.lstrip().startswith("<?xml") and "ServersController" in svg
    png = callgraph.render(embedded_trace, "png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="svg, png, dot"):
        callgraph.render(embedded_trace, "mermaid")


def test_the_hypervisor_not_nova_compute_talks_to_ceph(recorded_whole_cast_trace):
    """The QEMU stand-in's spans are qemu-kvm's: a white infrastructure box whose wire
    calls reach the Ceph monitor and OSD as the guest's disk opens."""
    graph = CallGraph(recorded_whole_cast_trace)
    hypervisor = graph.components["infra/qemu-kvm"]
    assert (hypervisor.label, hypervisor.category) == ("qemu-kvm (hypervisor)", "infra")
    assert graph.edges[("infra/qemu-kvm", "service/ceph-mon", "wire")]
    assert graph.edges[("infra/qemu-kvm", "service/ceph-osd", "wire")]
    assert "service/qemu-kvm" not in graph.components
