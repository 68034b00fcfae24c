"""The dnsmasq driver against the stand-in and, where it can run, the real dnsmasq."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from opentelemetry import trace

from novalab.reference.neutron.agent.linux.dhcp import Dnsmasq, DnsmasqError

SUBNET = {"id": "sub-1", "cidr": "10.0.0.0/24", "gateway_ip": "10.0.0.1", "enable_dhcp": True,
          "dns_nameservers": [], "ip_version": 4}


def port(port_id, mac, ip, owner="compute:nova"):
    return {"id": port_id, "mac_address": mac, "device_owner": owner,
            "fixed_ips": [{"subnet_id": "sub-1", "ip_address": ip}]}


def network(*ports):
    return {"id": "net-1", "subnets": [SUBNET],
            "ports": [port("dhcp", "fa:16:3e:00:00:02", "10.0.0.2", "network:dhcp"), *ports]}


@pytest.fixture
def driver_factory(tmp_path):
    drivers = []

    def make(real=False):
        driver = Dnsmasq(network(), tmp_path / "dhcp", trace.NoOpTracer(), real=real)
        drivers.append(driver)
        return driver

    yield make
    for driver in drivers:
        driver.disable()


def test_standin_loads_and_reloads_on_sighup(driver_factory):
    driver = driver_factory()
    driver.enable()
    status_file = driver.get_conf_file_name("status.json")
    first = json.loads(status_file.read_text())
    assert first["loads"] == 1
    assert [h["ip"] for h in first["hosts"]] == ["10.0.0.2"]
    assert first["ranges"] == ["set:subnet-sub-1,10.0.0.0,static,255.255.255.0,86400s"]

    driver.network = network(port("p1", "fa:16:3e:aa:bb:cc", "10.0.0.5"))
    pid = driver.process.pid
    driver.reload_allocations()
    second = json.loads(status_file.read_text())
    assert second["loads"] == 2 and second["pid"] == pid  # a reload, not a restart
    assert {"mac": "fa:16:3e:aa:bb:cc", "name": "host-10-0-0-5.openstacklocal",
            "ip": "10.0.0.5"} in second["hosts"]
    assert "fa:16:3e:aa:bb:cc,host-10-0-0-5.openstacklocal,10.0.0.5" in \
        driver.get_conf_file_name("host").read_text().splitlines()
    assert "static lease 10.0.0.5 for fa:16:3e:aa:bb:cc" in \
        driver.get_conf_file_name("log").read_text()
    assert "option:router,10.0.0.1" in driver.get_conf_file_name("opts").read_text()


def test_disable_stops_the_process_and_removes_files(driver_factory):
    driver = driver_factory()
    driver.enable()
    process = driver.process
    driver.disable()
    assert process.poll() is not None
    assert not driver.network_conf_dir.exists()


def test_a_dnsmasq_that_dies_is_reported(driver_factory, tmp_path):
    driver = driver_factory()
    driver._build_cmdline = lambda: ["/bin/sh", "-c", "echo 'cannot start' >&2; exit 5"]
    with pytest.raises(DnsmasqError, match="cannot start"):
        driver.enable()


@pytest.mark.skipif(shutil.which("dnsmasq") is None, reason="dnsmasq is not installed")
@pytest.mark.skipif(os.geteuid() != 0,
                    reason="dnsmasq needs CAP_NET_ADMIN to serve DHCP (run as root)")
def test_real_dnsmasq_reads_and_rereads(driver_factory, monkeypatch):
    monkeypatch.setenv("NOVALAB_REAL_DNSMASQ", "1")
    driver = driver_factory(real=None)
    assert driver.real
    driver.enable()
    assert os.path.basename(os.readlink(f"/proc/{driver.process.pid}/exe")) == "dnsmasq"
    before = driver._reads()
    driver.network = network(port("p1", "fa:16:3e:aa:bb:cc", "10.0.0.5"))
    driver.reload_allocations()
    assert driver._reads() == before + 1
    assert driver.process.poll() is None


def test_the_reload_span_names_the_hosts_dnsmasq_is_given(tmp_path):
    """The agent's CLIENT span to dnsmasq says which MAC gets which address (a lab reads
    a port's line there)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from novalab.tracing import attributes as attr

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    driver = Dnsmasq(network(), tmp_path / "dhcp", provider.get_tracer("t"), real=False)
    try:
        driver.enable()
        driver.network = network(port("p1", "fa:16:3e:aa:bb:cc", "10.0.0.5"))
        driver.reload_allocations()
    finally:
        driver.disable()
    reload = next(s for s in exporter.get_finished_spans() if s.name == "dnsmasq reload")
    assert reload.attributes[attr.NOVALAB_DNSMASQ_HOSTS] == 2
    assert tuple(reload.attributes[attr.NOVALAB_DNSMASQ_HOST_ENTRIES]) == (
        "fa:16:3e:00:00:02,host-10-0-0-2.openstacklocal,10.0.0.2",
        "fa:16:3e:aa:bb:cc,host-10-0-0-5.openstacklocal,10.0.0.5")
