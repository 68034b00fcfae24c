"""End-to-end boots on the embedded cloud: state, trace shape, and every wiring.

The same boot runs over the in-memory broker with SQLite, over a real RabbitMQ,
and against PostgreSQL and MariaDB; each must end ACTIVE with one complete trace.
"""

from __future__ import annotations

import json

import pytest
from opentelemetry.trace import SpanKind

from novalab.reference.deploy.boot import BootRequest, boot
from novalab.tracing.otlp_json import to_otlp_dict

EXPECTED_SERVICES = {"novalab-client", "keystone", "nova-api", "nova-scheduler",
                     "nova-conductor", "nova-compute", "glance-api", "ceph-mon", "ceph-rgw",
                     "ceph-osd", "neutron-server", "neutron-dhcp-agent", "neutron-l2-agent",
                     "neutron-metadata-proxy", "nova-api-metadata", "cinder-api",
                     "cinder-volume", "cloud-init"}


def service_of(span) -> str:
    return span.resource.attributes["service.name"]


def ancestors(span, by_id):
    parent = span.parent
    while parent is not None and parent.span_id in by_id:
        span = by_id[parent.span_id]
        yield span
        parent = span.parent


def check_boot_trace(result):
    """The shape every boot's trace must have, whatever the wiring."""
    spans = result.spans
    assert {s.context.trace_id for s in spans} == {result.trace_id}
    by_id = {s.context.span_id: s for s in spans}
    roots = [s for s in spans if s.parent is None]
    assert [r.name for r in roots] == ["openstack server create"]
    assert service_of(roots[0]) == "novalab-client"
    assert EXPECTED_SERVICES <= {service_of(s) for s in spans}

    # Every span but the root hangs off a span of this same trace: nothing orphaned.
    assert all(s.parent.span_id in by_id for s in spans if s.parent is not None)

    # The leaf: libvirt createWithFlags, reached from the client's root.
    launch = [s for s in spans if s.name == "libvirt.createWithFlags"]
    assert len(launch) == 1 and launch[0].kind is SpanKind.CLIENT
    chain = [a.name for a in ancestors(launch[0], by_id)]
    for hop in ("LibvirtDriver._create_domain", "LibvirtDriver.spawn",
                "ComputeManager._build_and_run_instance", "ComputeManager.build_and_run_instance",
                "process compute.compute-1", "send compute.compute-1",
                "SchedulerManager.run_instance", "process scheduler", "send scheduler",
                "API.create",
                "ServersController.create", "POST /v2.1/servers", "openstack server create"):
        assert hop in chain, f"{hop} is not an ancestor of createWithFlags: {chain}"

    # Messaging: each PRODUCER send has its CONSUMER process, parented on it and linked.
    sends = [s for s in spans if s.kind is SpanKind.PRODUCER]
    processes = [s for s in spans if s.kind is SpanKind.CONSUMER and s.name.startswith("process")]
    casts = [s for s in sends if s.attributes.get("novalab.rpc.style") == "cast"]
    calls = [s for s in sends if s.attributes.get("novalab.rpc.style") == "call"]
    cast_methods = {(service_of(s), s.attributes["rpc.method"]) for s in casts}
    assert {("nova-api", "run_instance"), ("nova-scheduler", "build_and_run_instance"),
            ("nova-api", "external_instance_event"), ("neutron-server", "port_create_end"),
            ("neutron-server", "port_update"), ("cinder-api", "create_volume")} <= cast_methods
    conductor_calls = [s for s in calls if service_of(s) == "nova-compute" and
                       s.attributes["rpc.service"] == "conductor"]
    assert len(conductor_calls) >= 6  # read once, save the states, volumes and ports
    for send in casts + calls:
        consumers = [p for p in processes if p.parent.span_id == send.context.span_id]
        assert len(consumers) == 1, send.name
        assert [link.context.span_id for link in consumers[0].links] == [send.context.span_id]
    replies = [s for s in sends if s.attributes.get("novalab.rpc.style") == "reply"]
    assert len(replies) == len(calls)

    # The database shows up through CLIENT spans of the services that own a handle,
    # and nova-compute never opens it.
    db_spans = [s for s in spans if s.kind is SpanKind.CLIENT and
                ("db.system.name" in s.attributes or "db.system" in s.attributes)]
    db_services = {service_of(s) for s in db_spans}
    assert {"keystone", "nova-api", "nova-scheduler", "nova-conductor"} <= db_services
    assert "nova-compute" not in db_services

    # A span's service is the service that made it: a change of service only ever
    # happens across a CLIENT/PRODUCER -> SERVER/CONSUMER edge.
    for span in spans:
        if span.parent is None:
            continue
        parent = by_id[span.parent.span_id]
        if service_of(parent) != service_of(span) and \
                "novalab.stand_in" not in span.attributes:  # the guest: guest/cloud_init.py
            assert parent.kind in (SpanKind.CLIENT, SpanKind.PRODUCER), (parent.name, span.name)
            assert span.kind in (SpanKind.SERVER, SpanKind.CONSUMER), (parent.name, span.name)
    assert result.dropped == {}


def test_boot_memory_sqlite(cloud):
    result = boot(cloud, BootRequest(name="vm-memory"))
    assert result.active, result.server
    server = result.server
    assert server["OS-EXT-STS:vm_state"] == "active"
    assert server["OS-EXT-STS:task_state"] is None
    assert server["OS-EXT-STS:power_state"] == 1
    check_boot_trace(result)
    # the guest really runs in libvirt
    compute = cloud.computes[0]
    assert compute.driver.get_info({"uuid": server["id"]}).state == 1


def test_trace_file_is_otlp_json(cloud, tmp_path):
    result = boot(cloud, BootRequest(name="vm-file"))
    doc = json.loads(json.dumps(to_otlp_dict(result.spans)))
    spans = [s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    assert len(spans) == len(result.spans)
    assert {s["traceId"] for s in spans} == {result.trace_id_hex}
    assert all(len(s["spanId"]) == 16 and int(s["spanId"], 16) for s in spans)
    assert all(isinstance(s["kind"], int) for s in spans)
    names = {a["value"]["stringValue"] for rs in doc["resourceSpans"]
             for a in rs["resource"]["attributes"] if a["key"] == "service.name"}
    assert EXPECTED_SERVICES <= names


def test_several_computes_spread(cloud_factory):
    cloud = cloud_factory(computes=2)
    hosts = set()
    for index in range(2):
        result = boot(cloud, BootRequest(name=f"spread-{index}", flavor="m1.small"))
        assert result.active, result.server
        process = [s for s in result.spans if s.name.startswith("process compute.")]
        hosts.add(process[0].name.removeprefix("process compute."))
    # The RAM weigher prefers the emptier host: two m1.small land on two hosts.
    assert hosts == {"compute-1", "compute-2"}


@pytest.mark.amqp
def test_boot_over_rabbitmq(amqp_url, cloud_factory):
    cloud = cloud_factory(transport_url=amqp_url)
    result = boot(cloud, BootRequest(name="vm-amqp"))
    assert result.active, result.server
    check_boot_trace(result)
    send = next(s for s in result.spans if s.name == "send scheduler")
    assert send.attributes["messaging.system"] == "rabbitmq"
    assert send.attributes["server.address"] == "127.0.0.1"


@pytest.mark.postgresql
def test_boot_on_postgresql(postgres_url, cloud_factory):
    cloud = cloud_factory(db_url=postgres_url)
    result = boot(cloud, BootRequest(name="vm-pg"))
    assert result.active, result.server
    check_boot_trace(result)
    systems = {s.attributes.get("db.system.name") or s.attributes.get("db.system")
               for s in result.spans if s.kind is SpanKind.CLIENT}
    assert "postgresql" in systems


@pytest.mark.mariadb
def test_boot_on_mariadb(mariadb_url, cloud_factory):
    cloud = cloud_factory(db_url=mariadb_url)
    result = boot(cloud, BootRequest(name="vm-maria"))
    assert result.active, result.server
    check_boot_trace(result)
