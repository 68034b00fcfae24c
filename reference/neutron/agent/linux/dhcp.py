"""The DHCP agent's driver: one dnsmasq per network, fed through files.

Upstream: ``neutron/agent/linux/dhcp.py``.

dnsmasq learns which MAC gets which address from ``--dhcp-hostsfile``
(``fa:16:3e:..,host-10-0-0-5.openstacklocal,10.0.0.5`` per port), the options
(router, metadata route) from ``--dhcp-optsfile`` and the names from
``--addn-hosts``. When ports change the agent rewrites the files and sends
``SIGHUP``, on which dnsmasq reads them again. That is the whole protocol
between Neutron and dnsmasq.

Which dnsmasq runs:

* the real one when ``NOVALAB_REAL_DNSMASQ=1`` and ``dnsmasq`` is on the PATH.
  It serves DHCP on the loopback interface only (``--interface=lo
  --bind-interfaces``), with DNS off (``--port=0``) and on dnsmasq's alternate
  DHCP ports (1067/1068), so it touches nothing else. Serving DHCP at all needs
  ``CAP_NET_ADMIN``: as a user without it dnsmasq refuses to start ("process is
  missing required capability NET_ADMIN"), and the agent reports that error.
* otherwise a stand-in (``python -m novalab.reference.neutron.agent.linux.dnsmasq_standin``)
  that takes the same command line, reads the same files, re-reads them on
  ``SIGHUP``, logs the leases it would hand out and writes what it loaded to a
  status file. It answers no DHCP packets: on loopback no guest would send any.

Both log ``read <hostsfile>`` each time they load the hosts file; the driver
waits for that line after a ``SIGHUP``, so the CLIENT span ``dnsmasq reload``
lasts until the reload really happened.

dnsmasq has no tracing of its own and no way to carry a trace context, so its
part of the trace is the agent's CLIENT spans, with ``peer.service=dnsmasq``.
"""

from __future__ import annotations

import getpass
import ipaddress
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from opentelemetry import trace

from novalab.reference.neutron import constants
from novalab.tracing import attributes as attr
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)

STANDIN_MODULE = "novalab.reference.neutron.agent.linux.dnsmasq_standin"
LEASE_TIME = "86400s"
READY_TIMEOUT = 10.0


class DnsmasqError(RuntimeError):
    pass


def use_real_dnsmasq() -> bool:
    return os.environ.get("NOVALAB_REAL_DNSMASQ") == "1" and shutil.which("dnsmasq") is not None


def hostname_for(ip_address: str) -> str:
    return "host-" + ip_address.replace(".", "-")


class Dnsmasq:
    """dnsmasq for one network: its files, its process, and reloads."""

    def __init__(self, network: dict, confs_dir: str | os.PathLike, tracer,
                 real: bool | None = None):
        self.network = network
        self.tracer = tracer
        self.real = use_real_dnsmasq() if real is None else real
        self.network_conf_dir = Path(confs_dir) / network["id"]
        self.process: subprocess.Popen | None = None

    # Files -------------------------------------------------------------------------------

    def get_conf_file_name(self, kind: str) -> Path:
        return self.network_conf_dir / kind

    def _dhcp_subnets(self) -> list[dict]:
        return [s for s in self.network.get("subnets", []) if s["enable_dhcp"]]

    def _iter_hosts(self):
        """(port, ip, fqdn) for every address of the network on a DHCP subnet."""
        dhcp_subnets = {s["id"] for s in self._dhcp_subnets()}
        for port in sorted(self.network.get("ports", []), key=lambda p: p["id"]):
            for ip in port["fixed_ips"]:
                if ip["subnet_id"] in dhcp_subnets:
                    name = f"{hostname_for(ip['ip_address'])}.{constants.DNS_DOMAIN}"
                    yield port, ip["ip_address"], name

    def _dhcp_server_ip(self, subnet_id: str) -> str | None:
        for port in self.network.get("ports", []):
            if port["device_owner"] == constants.DEVICE_OWNER_DHCP:
                for ip in port["fixed_ips"]:
                    if ip["subnet_id"] == subnet_id:
                        return ip["ip_address"]
        return None

    @upstream("neutron/agent/linux/dhcp.py", "Dnsmasq._output_hosts_file")
    def _output_hosts_file(self) -> list[str]:
        """``mac,fqdn,ip`` per line: which MAC gets which address. Returns the lines."""
        lines = [f"{port['mac_address']},{name},{ip}" for port, ip, name in self._iter_hosts()]
        _replace_file(self.get_conf_file_name("host"), lines)
        return lines

    def _output_addn_hosts_file(self) -> None:
        lines = [f"{ip}\t{name} {name.split('.')[0]}" for _port, ip, name in self._iter_hosts()]
        _replace_file(self.get_conf_file_name("addn_hosts"), lines)

    def _output_opts_file(self) -> None:
        """Per subnet: the router, the route to the metadata address, DNS servers."""
        lines = []
        for subnet in self._dhcp_subnets():
            tag = f"tag:subnet-{subnet['id']}"
            gateway = subnet.get("gateway_ip")
            dhcp_ip = self._dhcp_server_ip(subnet["id"])
            if subnet.get("dns_nameservers"):
                lines.append(f"{tag},option:dns-server,{','.join(subnet['dns_nameservers'])}")
            routes = []
            if dhcp_ip:  # isolated metadata: 169.254.169.254 through the DHCP port
                routes.append(f"169.254.169.254/32,{dhcp_ip}")
            if gateway:
                routes.append(f"0.0.0.0/0,{gateway}")
                lines.append(f"{tag},option:router,{gateway}")
            if routes:
                lines.append(f"{tag},option:classless-static-route,{','.join(routes)}")
                lines.append(f"{tag},249,{','.join(routes)}")
        _replace_file(self.get_conf_file_name("opts"), lines)

    def _output_config_files(self) -> list[str]:
        """Write every file dnsmasq reads; returns the hosts file's lines."""
        self.network_conf_dir.mkdir(parents=True, exist_ok=True)
        hosts = self._output_hosts_file()
        self._output_addn_hosts_file()
        self._output_opts_file()
        return hosts

    # The process -------------------------------------------------------------------------

    def _build_cmdline(self) -> list[str]:
        cmd = [
            "--keep-in-foreground", "--conf-file=/dev/null", "--no-hosts", "--no-resolv",
            "--port=0", "--bind-interfaces", "--interface=lo", "--dhcp-alternate-port",
            f"--pid-file={self.get_conf_file_name('pid')}",
            f"--dhcp-hostsfile={self.get_conf_file_name('host')}",
            f"--addn-hosts={self.get_conf_file_name('addn_hosts')}",
            f"--dhcp-optsfile={self.get_conf_file_name('opts')}",
            f"--dhcp-leasefile={self.get_conf_file_name('leases')}",
            f"--log-facility={self.get_conf_file_name('log')}", "--log-dhcp",
            f"--domain={constants.DNS_DOMAIN}", "--dhcp-lease-max=256",
        ]
        for subnet in self._dhcp_subnets():
            net = ipaddress.ip_network(subnet["cidr"])
            cmd.append(f"--dhcp-range=set:subnet-{subnet['id']},{net.network_address},static,"
                       f"{net.netmask},{LEASE_TIME}")
        if self.real:
            # dnsmasq started by root drops to "nobody", who could not read our files.
            return [shutil.which("dnsmasq"), *cmd, f"--user={getpass.getuser()}"]
        status = self.get_conf_file_name("status.json")
        return [sys.executable, "-m", STANDIN_MODULE, *cmd, f"--status-file={status}"]

    @property
    def active(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _client_span(self, operation: str, hosts: list[str]):
        """The agent's CLIENT span to dnsmasq; it names the hosts file dnsmasq is given."""
        return self.tracer.start_as_current_span(
            f"dnsmasq {operation}", kind=trace.SpanKind.CLIENT, attributes={
                attr.PEER_SERVICE: "dnsmasq",
                attr.NOVALAB_DNSMASQ_IMPLEMENTATION: "dnsmasq" if self.real else STANDIN_MODULE,
                attr.NOVALAB_DNSMASQ_HOSTS: len(hosts),
                attr.NOVALAB_DNSMASQ_HOST_ENTRIES: hosts,
                attr.NEUTRON_NETWORK_ID: self.network["id"]})

    @upstream("neutron/agent/linux/dhcp.py", "DhcpLocalProcess.enable")
    def enable(self) -> None:
        """Write the files and start dnsmasq; return once it has read them."""
        if self.active:
            self.reload_allocations()
            return
        hosts = self._output_config_files()
        with self._client_span("start", hosts) as span:
            seen = self._reads()
            log = self.get_conf_file_name("log")
            log.touch()
            with open(self.get_conf_file_name("stderr"), "wb") as stderr:
                self.process = subprocess.Popen(
                    self._build_cmdline(), stdin=subprocess.DEVNULL, stdout=stderr,
                    stderr=stderr, start_new_session=True)
            span.set_attribute(attr.NOVALAB_DNSMASQ_PID, self.process.pid)
            self._wait_for_read(seen)

    @upstream("neutron/agent/linux/dhcp.py", "Dnsmasq.reload_allocations")
    def reload_allocations(self) -> None:
        """Rewrite the files and ``SIGHUP`` dnsmasq; return once it has re-read them."""
        if not self.active:
            self.enable()
            return
        hosts = self._output_config_files()
        with self._client_span("reload", hosts) as span:
            span.set_attribute(attr.NOVALAB_DNSMASQ_PID, self.process.pid)
            seen = self._reads()
            os.kill(self.process.pid, signal.SIGHUP)
            self._wait_for_read(seen)

    @upstream("neutron/agent/linux/dhcp.py", "DhcpLocalProcess.disable")
    def disable(self, retain_port: bool = False) -> None:
        """Stop dnsmasq and remove the network's files."""
        if self.process is not None:
            if self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(timeout=5)
            self.process = None
        shutil.rmtree(self.network_conf_dir, ignore_errors=True)

    # Reload acknowledgement --------------------------------------------------------------

    def _reads(self) -> int:
        """How often dnsmasq has logged reading the hosts file so far."""
        marker = f"read {self.get_conf_file_name('host')}"
        try:
            text = self.get_conf_file_name("log").read_text(errors="replace")
        except FileNotFoundError:
            return 0
        return sum(1 for line in text.splitlines() if line.endswith(marker))

    def _wait_for_read(self, seen: int, timeout: float = READY_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._reads() > seen:
                return
            if self.process is None or self.process.poll() is not None:
                raise DnsmasqError(f"dnsmasq for network {self.network['id']} exited: "
                                   f"{self._tail()}")
            time.sleep(0.01)
        raise DnsmasqError(f"dnsmasq for network {self.network['id']} did not read its hosts "
                           f"file within {timeout:.0f}s")

    def _tail(self) -> str:
        parts = []
        for kind in ("stderr", "log"):
            try:
                parts.append(self.get_conf_file_name(kind).read_text(errors="replace")[-400:])
            except FileNotFoundError:
                pass
        return " | ".join(p.strip() for p in parts if p.strip()) or "no output"


def _replace_file(path: Path, lines: list[str]) -> None:
    """Write atomically (rename), as upstream's ``replace_file``: dnsmasq never reads half."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text("".join(f"{line}\n" for line in lines))
    os.replace(tmp, path)
