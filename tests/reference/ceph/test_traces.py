"""What a Ceph conversation looks like in a trace: every hop its own service."""

from __future__ import annotations

import uuid

from opentelemetry.trace import SpanKind

from novalab.reference.ceph import crush
from novalab.reference.ceph.rados import Rados


def service_of(span) -> str:
    return span.resource.attributes["service.name"]


def host_of(span) -> str:
    return span.resource.attributes["host.name"]


def one(spans, name, kind, service=None):
    found = [s for s in spans if s.name == name and s.kind is kind
             and (service is None or service_of(s) == service)]
    assert len(found) == 1, [(s.name, s.kind) for s in spans]
    return found[0]


def test_a_rados_read_is_a_client_span_of_the_caller_and_a_server_span_of_the_osd(ceph):
    tracer = ceph.w.tracer("nova-compute", host="compute-1")
    client = Rados(ceph.w.urls["ceph-mon"], tracer, auth=ceph.key)
    try:
        with tracer.start_as_current_span("caller") as root:
            io = client.connect().open_ioctx("volumes")
            io.write_full("traced-object", b"x" * 10)
            assert io.read("traced-object") == b"x" * 10
        trace_id = root.get_span_context().trace_id
        placement = crush.locate(client.cluster_map, "volumes", "traced-object")
        spans = ceph.telemetry.finished_spans(trace_id)
    finally:
        client.shutdown()

    # The map comes from ceph-mon. (An OSD whose map is older than the client's
    # fetches the new one too, inside its SERVER span: more get_cluster_map spans.)
    mon_client = one(spans, "ceph.mon/get_cluster_map", SpanKind.CLIENT, "nova-compute")
    mon_server = next(s for s in spans if s.parent and s.parent.span_id
                      == mon_client.context.span_id)
    assert mon_server.name == "ceph.mon/get_cluster_map" and mon_server.kind is SpanKind.SERVER
    assert service_of(mon_server) == "ceph-mon"
    assert mon_client.attributes["peer.service"] == "ceph-mon"

    read_client = one(spans, "ceph.osd/read", SpanKind.CLIENT)
    read_server = one(spans, "ceph.osd/read", SpanKind.SERVER)
    assert service_of(read_client) == "nova-compute" and host_of(read_client) == "compute-1"
    assert service_of(read_server) == "ceph-osd"
    assert host_of(read_server) == f"osd.{placement.primary}"
    assert read_server.parent.span_id == read_client.context.span_id
    assert read_client.parent.span_id == root.get_span_context().span_id
    for span in (read_client, read_server):
        assert span.attributes["rpc.system"] == "ceph"
        assert span.attributes["rpc.service"] == "osd"
        assert span.attributes["rpc.method"] == "read"
        assert span.attributes["ceph.pool"] == "volumes"
        assert span.attributes["ceph.object"] == "traced-object"
        assert span.attributes["ceph.pg"] == placement.pgid
        assert span.attributes["ceph.osd"] == placement.primary
    assert read_client.attributes["peer.service"] == "ceph-osd"
    address = crush.osd_address(client.cluster_map, placement.primary)
    assert f"{read_client.attributes['server.address']}:{read_client.attributes['server.port']}" \
        == address

    # The write: primary applies, then forwards to the replica, inside its SERVER span.
    write_server = one(spans, "ceph.osd/write_full", SpanKind.SERVER)
    forward = one(spans, "ceph.osd/replica_write", SpanKind.CLIENT)
    replica = one(spans, "ceph.osd/replica_write", SpanKind.SERVER)
    assert forward.parent.span_id == write_server.context.span_id
    assert replica.parent.span_id == forward.context.span_id
    assert host_of(forward) == f"osd.{placement.primary}"
    assert host_of(replica) == f"osd.{placement.replicas[0]}"


def test_an_rgw_get_goes_flask_then_rados_then_osd(ceph):
    base = f"{ceph.w.urls['ceph-rgw']}/swift/v1"
    auth = {"X-Auth-Token": ceph.token("demo")}
    container = f"t-{uuid.uuid4().hex[:8]}"
    ceph.http.put(f"{base}/{container}", headers=auth)
    ceph.http.put(f"{base}/{container}/image", content=b"bytes of an image", headers=auth)

    tracer = ceph.w.tracer("novalab-client")
    http = ceph.w.http("novalab-client")                 # instrumented: injects traceparent
    with tracer.start_as_current_span("fetch image") as root:
        response = http.get(f"{base}/{container}/image", headers=auth)
    assert response.content == b"bytes of an image"
    trace_id = root.get_span_context().trace_id

    def complete(spans):
        return any(s.kind is SpanKind.SERVER and service_of(s) == "ceph-rgw" for s in spans)

    spans = ceph.wait_for_spans(trace_id, complete)
    by_id = {s.context.span_id: s for s in spans}
    osd_server = next(s for s in spans if s.name == "ceph.osd/read" and s.kind is SpanKind.SERVER
                      and s.attributes["ceph.object"] == f"{container}/image")
    chain = [osd_server]
    while chain[-1].parent is not None and chain[-1].parent.span_id in by_id:
        chain.append(by_id[chain[-1].parent.span_id])
    hops = [(s.name, s.kind, service_of(s)) for s in chain]
    assert hops[:4] == [
        ("ceph.osd/read", SpanKind.SERVER, "ceph-osd"),
        ("ceph.osd/read", SpanKind.CLIENT, "ceph-rgw"),
        ("RGWGetObj::execute", SpanKind.INTERNAL, "ceph-rgw"),
        ("GET /swift/v1/<container>/<path:obj>", SpanKind.SERVER, "ceph-rgw"),
    ], hops
    assert hops[-1] == ("fetch image", SpanKind.INTERNAL, "novalab-client")
    rgw_op = chain[2]
    assert rgw_op.attributes["code.function.name"] == "RGWGetObj::execute"
    assert rgw_op.attributes["novalab.upstream.url"].startswith("https://github.com/ceph/ceph/")
