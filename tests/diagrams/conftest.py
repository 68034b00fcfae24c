"""Fixtures for the diagram tests: recorded traces, golden files, external tools.

Recorded traces (``fixtures/``), all from ``novalab boot``:

- ``boot-embedded.otlp.json``: the embedded cloud (memory broker, SQLite, one
  compute host) booting with no port and no volume, OTLP JSON as ``novalab
  boot`` writes it;
- ``boot-rabbitmq-postgresql.otlp.jsonl``: the same boot on RabbitMQ,
  PostgreSQL and two compute hosts, stored as OTLP JSON lines;
- ``boot-whole-cast.otlp.json``: a default boot, with a port and a volume.

Golden files live in ``goldens/``; ``NOVALAB_UPDATE_GOLDENS=1`` rewrites them
from the current output instead of comparing.

``whole_cast_doc`` is a *synthetic* trace: the recorded embedded boot plus
spans shaped by the tracing conventions for the hops that boot did not make
(neutron, cinder, ceph, the metadata path, the guest). Tests that need to
edit a hop precisely use it; it is never presented as a real trace.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
from pathlib import Path

import pytest

from novalab.diagrams.load import load_trace, spans_from_otlp
from novalab.diagrams.model import Trace

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures"
GOLDENS = HERE / "goldens"
EMBEDDED = FIXTURES / "boot-embedded.otlp.json"
RABBITMQ = FIXTURES / "boot-rabbitmq-postgresql.otlp.jsonl"
RECORDED_WHOLE_CAST = FIXTURES / "boot-whole-cast.otlp.json"

@pytest.fixture(scope="session")
def embedded_trace() -> Trace:
    return load_trace(EMBEDDED)


@pytest.fixture(scope="session")
def recorded_whole_cast_trace() -> Trace:
    """A real ``novalab boot`` of the whole cast: every one of the 58 steps happened."""
    return load_trace(RECORDED_WHOLE_CAST)


@pytest.fixture(scope="session")
def rabbitmq_trace() -> Trace:
    return load_trace(RABBITMQ)


@pytest.fixture(scope="session")
def embedded_doc() -> dict:
    return json.loads(EMBEDDED.read_text())


@pytest.fixture
def golden():
    """``golden(name, text_or_bytes)``: compare with ``goldens/name`` (or rewrite it)."""

    def compare(name: str, actual: str) -> None:
        path = GOLDENS / name
        if os.environ.get("NOVALAB_UPDATE_GOLDENS") == "1":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(actual, encoding="utf-8")
            return
        assert path.exists(), f"no golden {path}; run with NOVALAB_UPDATE_GOLDENS=1"
        expected = path.read_text(encoding="utf-8")
        if actual != expected:
            diff = "".join(list(difflib.unified_diff(
                expected.splitlines(True), actual.splitlines(True), f"golden/{name}",
                "actual", n=1))[:60])
            pytest.fail(f"{name} differs from its golden (NOVALAB_UPDATE_GOLDENS=1 to accept):"
                        f"\n{diff}")

    return compare


# -- the synthetic whole cast -----------------------------------------------------------------

KIND = {"INTERNAL": 1, "SERVER": 2, "CLIENT": 3, "PRODUCER": 4, "CONSUMER": 5}


def _value(value):
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    return {"stringValue": str(value)}


class Synth:
    """Add spans to an OTLP document, each placed inside its parent's time interval."""

    def __init__(self, doc: dict):
        self.doc = doc
        self.resources: dict[tuple[str, str | None], list] = {}
        self.spans: list[dict] = []
        for rs in doc["resourceSpans"]:
            res = {a["key"]: next(iter(a["value"].values())) for a in rs["resource"]["attributes"]}
            self.resources[(res["service.name"], res.get("host.name"))] = \
                rs["scopeSpans"][0]["spans"]
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    span["_service"] = res["service.name"]
                    self.spans.append(span)
        self.counter = 0
        self.trace_id = self.spans[0]["traceId"]

    def find(self, service: str, name: str) -> dict:
        found = [s for s in self.spans if s["_service"] == service and s["name"] == name]
        assert found, (service, name)
        return min(found, key=lambda s: int(s["startTimeUnixNano"]))

    def add(self, parent: dict, slot: tuple[int, int], service: str, name: str, kind: str,
            host: str | None = None, links: tuple[dict, ...] = (), detached: bool = False,
            **attributes) -> dict:
        start, end = int(parent["startTimeUnixNano"]), int(parent["endTimeUnixNano"])
        if detached:  # work the parent started but did not wait for: after its end
            start, end = end, end + 1_000_000
        width = (end - start) / slot[1]
        self.counter += 1
        span = {"traceId": self.trace_id, "spanId": f"5e{self.counter:014x}",
                "parentSpanId": parent["spanId"], "name": name, "kind": KIND[kind],
                "startTimeUnixNano": str(int(start + width * (slot[0] + 0.1))),
                "endTimeUnixNano": str(int(start + width * (slot[0] + 0.9))),
                "attributes": [{"key": k.replace("__", "."), "value": _value(v)}
                               for k, v in attributes.items()],
                "links": [{"traceId": self.trace_id, "spanId": ln["spanId"]} for ln in links],
                "status": {}, "_service": service}
        key = (service, host)
        if key not in self.resources:
            spans: list = []
            attrs = [{"key": "service.name", "value": {"stringValue": service}},
                     {"key": "service.namespace", "value": {"stringValue": "novalab"}}]
            if host:
                attrs.append({"key": "host.name", "value": {"stringValue": host}})
            self.doc["resourceSpans"].append({"resource": {"attributes": attrs},
                                              "scopeSpans": [{"scope": {"name": "synthetic"},
                                                              "spans": spans}]})
            self.resources[key] = spans
        self.resources[key].append(span)
        self.spans.append(span)
        return span

    def http(self, parent, slot, caller, callee, method, url, route, host=None,
             detached=False):
        """A CLIENT span in ``caller`` and the SERVER span in ``callee`` below it."""
        client = self.add(parent, slot, caller, method, "CLIENT", host=host, detached=detached,
                          http__request__method=method, url__full=url)
        server = self.add(client, (0, 1), callee, f"{method} {route}", "SERVER",
                          http__request__method=method, http__route=route,
                          url__path=url.split("//", 1)[-1].split("/", 1)[-1])
        return client, server

    def message(self, parent, slot, sender, receiver, method, style, topic):
        """A PRODUCER span in ``sender`` and the CONSUMER process span in ``receiver``."""
        self.counter += 1
        message_id = f"synthetic-message-{self.counter}"
        common = {"messaging__system": "novalab.memory", "rpc__system": "oslo.messaging",
                  "rpc__method": method, "novalab__rpc__style": style,
                  "messaging__message__id": message_id,
                  "messaging__rabbitmq__destination__routing_key": topic}
        send = self.add(parent, slot, sender, f"send {topic}", "PRODUCER",
                        messaging__operation__type="send", **common)
        process = self.add(send, (0, 1), receiver, f"process {topic}", "CONSUMER",
                           links=(send,), messaging__operation__type="process",
                           messaging__destination__name=topic, **common)
        return send, process

    def clean(self) -> dict:
        for span in self.spans:
            span.pop("_service", None)
        return self.doc


def whole_cast(doc: dict) -> dict:
    """The embedded boot plus synthetic spans for every service still to come."""
    s = Synth(copy.deepcopy(doc))
    compute, host = "nova-compute", "compute-1"
    nets = s.find(compute, "ComputeManager._build_networks_for_instance")
    # 26-38: ports, DHCP through dnsmasq, L2 through libvirt, the vif-plugged event.
    _, post = s.http(nets, (0, 2), compute, "neutron-server", "POST",
                     "http://127.0.0.1:9696/v2.0/ports", "/v2.0/ports", host)
    _, dhcp = s.message(post, (0, 1), "neutron-server", "neutron-dhcp-agent",
                        "port_create_end", "cast", "dhcp_agent.net-1")
    s.add(dhcp, (0, 2), "neutron-dhcp-agent", "dnsmasq.reload_allocations", "CLIENT",
          peer__service="dnsmasq")
    s.message(dhcp, (1, 2), "neutron-dhcp-agent", "neutron-server", "dhcp_ready_on_ports",
              "call", "q-plugin")
    _, put = s.http(nets, (1, 2), compute, "neutron-server", "PUT",
                    "http://127.0.0.1:9696/v2.0/ports/p-1", "/v2.0/ports/<port_id>", host)
    _, l2 = s.message(put, (0, 1), "neutron-server", "neutron-l2-agent", "port_update", "cast",
                      "q-agent-notifier-port-update")
    plug = s.add(l2, (0, 2), "neutron-l2-agent", "LinuxBridgeManager.plug_interface",
                 "INTERNAL", code__function__name="neutron.plugins.ml2.drivers.linuxbridge."
                 "agent.linuxbridge_neutron_agent.LinuxBridgeManager.plug_interface")
    s.add(plug, (0, 1), "neutron-l2-agent", "libvirt.networkUpdate", "CLIENT",
          rpc__system="libvirt", rpc__method="networkUpdate", peer__service="libvirt")
    _, up = s.message(l2, (1, 2), "neutron-l2-agent", "neutron-server", "update_device_up",
                      "call", "q-plugin")
    s.add(up, (0, 2), "neutron-server", "UPDATE neutron", "CLIENT", db__system__name="sqlite",
          db__query__text="UPDATE ports SET status=? WHERE ports.id = ?")
    s.http(up, (1, 2), "neutron-server", "nova-api", "POST",
           "http://127.0.0.1:8774/v2.1/os-server-external-events",
           "/v2.1/os-server-external-events")
    # 39-42: the volume, with cinder validating the token at keystone.
    resources = s.find(compute, "ComputeManager._build_resources")
    _, volume = s.http(resources, (2, 3), compute, "cinder-api", "GET",
                       "http://127.0.0.1:8776/v3/p/volumes/v-1",
                       "/v3/<project_id>/volumes/<volume_id>", host)
    s.http(volume, (0, 1), "cinder-api", "keystone", "GET",
           "http://127.0.0.1:5000/v3/auth/tokens", "/v3/auth/tokens")
    # 21-25: the cluster map and the image object through the gateway and an OSD.
    image = s.find(compute, "LibvirtDriver._create_image")
    mon = s.add(image, (1, 3), compute, "ceph.get_cluster_map", "CLIENT", host=host,
                rpc__system="ceph", rpc__service="mon", rpc__method="get_cluster_map",
                peer__service="ceph-mon")
    s.add(mon, (0, 1), "ceph-mon", "ceph.get_cluster_map", "SERVER", rpc__system="ceph",
          rpc__service="mon", rpc__method="get_cluster_map")
    _, rgw = s.http(image, (2, 3), compute, "ceph-rgw", "GET",
                    "http://127.0.0.1:7480/swift/v1/images/i-1",
                    "/swift/v1/<container>/<path:obj>", host)
    read = s.add(rgw, (0, 1), "ceph-rgw", "ceph.read", "CLIENT", rpc__system="ceph",
                 rpc__service="osd", rpc__method="read", peer__service="ceph-osd")
    s.add(read, (0, 1), "ceph-osd", "ceph.read", "SERVER", rpc__system="ceph",
          rpc__service="osd", rpc__method="read")
    # 48-51: the volume attached through libvirt, the hypervisor reading Ceph; 44: the VIFs.
    domain = s.find(compute, "LibvirtDriver._create_domain_and_network")
    connect = s.add(domain, (0, 4), compute, "LibvirtDriver._connect_volume", "INTERNAL",
                    host=host)
    attach = s.add(connect, (0, 1), compute, "libvirt.attachDeviceFlags", "CLIENT", host=host,
                   rpc__system="libvirt", rpc__method="attachDeviceFlags",
                   peer__service="libvirt")
    # The hypervisor (qemu-kvm, the stand-in's own service) opens the rbd disk.
    qemu = s.add(attach, (0, 1), "qemu-kvm", "qemu rbd open", "INTERNAL", host=host,
                 novalab__stand_in="qemu (libvirt test hypervisor)")
    map_call = s.add(qemu, (0, 2), "qemu-kvm", "ceph.get_cluster_map", "CLIENT", host=host,
                     rpc__system="ceph", rpc__service="mon", rpc__method="get_cluster_map",
                     peer__service="ceph-mon")
    s.add(map_call, (0, 1), "ceph-mon", "ceph.get_cluster_map", "SERVER", rpc__system="ceph",
          rpc__service="mon", rpc__method="get_cluster_map")
    open_call = s.add(qemu, (1, 2), "qemu-kvm", "ceph.open", "CLIENT", host=host,
                      rpc__system="ceph", rpc__service="osd", rpc__method="open",
                      peer__service="ceph-osd")
    s.add(open_call, (0, 1), "ceph-osd", "ceph.open", "SERVER", rpc__system="ceph",
          rpc__service="osd", rpc__method="open")
    vifs = s.add(domain, (3, 4), compute, "LibvirtDriver.plug_vifs", "INTERNAL", host=host)
    s.add(vifs, (0, 1), compute, "libvirt.updateDeviceFlags", "CLIENT", host=host,
          rpc__system="libvirt", rpc__method="updateDeviceFlags", peer__service="libvirt")
    # 52-54: once running, the guest asks the metadata proxy, which asks nova-api-metadata.
    start = s.find(compute, "libvirt.createWithFlags")
    _, proxy = s.http(start, (0, 1), "cloud-init", "neutron-metadata-proxy", "GET",
                      "http://169.254.169.254/openstack/latest/meta_data.json",
                      "/openstack/<path:path>", detached=True)
    s.http(proxy, (0, 1), "neutron-metadata-proxy", "nova-api-metadata", "GET",
           "http://127.0.0.1:8775/openstack/latest/meta_data.json", "/openstack/<path:path>")
    return s.clean()


@pytest.fixture(scope="session")
def whole_cast_doc(embedded_doc) -> dict:
    return whole_cast(embedded_doc)


@pytest.fixture(scope="session")
def whole_cast_trace(whole_cast_doc) -> Trace:
    return Trace.of(spans_from_otlp(whole_cast_doc))
