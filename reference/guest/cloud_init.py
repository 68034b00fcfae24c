"""A stand-in for the guest's first boot, on hypervisors that run no guest at all.

On KVM the guest's operating system boots and cloud-init asks the metadata
service (``http://169.254.169.254``) who it is. libvirt's test hypervisor runs
nothing, so when a guest reaches RUNNING the embedded cloud starts this
stand-in in a thread of its own: it asks through neutron-metadata-proxy as
the guest would, from a loopback address of its port's own that stands for its
fixed IP (its ``meta_data.json``, then its user data if it has any), traced
as the ``cloud-init`` service on the guest's own host name.

A server booted with a key pair finds its public key in ``meta_data.json``
(``public_keys``); cloud-init's ``cc_ssh`` module writes it to the default
user's ``authorized_keys`` (``ssh_util.setup_user_keys``). The stand-in has no
disk to write to, so its span of that name records what it would install: the
key's name and its MD5 fingerprint as the guest computes it from the key it
received (``ssh-keygen -l -E md5``; cloud-init prints it so with
``authkey_hash: md5``), which is the fingerprint Nova shows for the key pair.

A real guest also writes to its serial port, which libvirt logs to the
``console.log`` the driver names in the domain XML; ``openstack console log
show`` reads it back. The stand-in appends what cloud-init prints there: its
start, the guest's network device and address, the authorized keys'
fingerprints, its finish (or that it found no metadata). Only what the stand-in
did: no kernel, no login prompt, for there is neither.

A real guest sends no trace context. The stand-in's span is parented on the
compute host's ``spawn`` (and linked to it), because that start is what caused
the request: it keeps one boot in one trace, and says so with
``novalab.stand_in``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import threading
import time

from opentelemetry import context as otel_context
from opentelemetry import trace

from novalab.reference.common.metadata_secret import guest_source_address
from novalab.reference.common.wiring import Wiring
from novalab.reference.guest.metadata import read_v2
from novalab.tracing import attributes as attr

LOG = logging.getLogger(__name__)
CLOUD_INIT_VERSION = "novalab-stand-in"  # what `cloud-init --version` would say

SSH_UTIL_URL = "https://github.com/canonical/cloud-init/blob/main/cloudinit/ssh_util.py"
SETUP_USER_KEYS = {attr.CODE_FUNCTION_NAME: "cloudinit.ssh_util.setup_user_keys",
                   attr.CODE_FILE_PATH: "cloudinit/ssh_util.py",
                   attr.UPSTREAM_URL: SSH_UTIL_URL}


class GuestBoots:
    """Runs cloud-init for each guest that starts; ``wait()`` for all of them."""

    def __init__(self, w: Wiring):
        self.w = w
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self.results: dict[str, dict] = {}

    def __call__(self, instance: dict, network_info: list,
                 console_log: str | None = None) -> None:
        console = SerialConsole(console_log)
        console.write(f"Cloud-init v. {CLOUD_INIT_VERSION} running 'init' at "
                      f"{_now()}. Up {console.uptime():.2f} seconds.")
        vifs = [v for v in network_info or [] if _fixed_ip(v)]
        if not vifs or "metadata-proxy" not in self.w.urls:
            console.write("util.py[WARNING]: No active metadata service found")
            return
        parent = otel_context.get_current()
        link = trace.Link(trace.get_current_span().get_span_context())
        thread = threading.Thread(target=self._boot,
                                  args=(instance, vifs[0], parent, link, console),
                                  name=f"guest-{instance['uuid'][:8]}", daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _boot(self, instance, vif, parent, link, console=None) -> None:
        console = console or SerialConsole(None)
        hostname = instance.get("display_name") or instance["uuid"]
        tracer = self.w.tracer("cloud-init", hostname)
        token = otel_context.attach(parent)
        try:
            with tracer.start_as_current_span(
                    "cloud-init init", links=[link],
                    attributes={attr.NOVALAB_STAND_IN:
                                "guest first boot (libvirt test hypervisor)",
                                attr.NOVA_INSTANCE_UUID: instance["uuid"]}):
                source = guest_source_address(vif["id"], self.w.metadata_secret)
                with self.w.http("cloud-init", hostname, local_address=source) as http:
                    meta, user_data = read_v2(self.w.urls["metadata-proxy"], http,
                                              tracer=tracer)
                    self.results[instance["uuid"]] = dict(meta, user_data=user_data)
                console.net_device_info(vif)
                setup_user_keys(tracer, meta.get("public_keys") or {})
                console.authorized_keys(meta.get("public_keys") or {})
                console.write(f"Cloud-init v. {CLOUD_INIT_VERSION} finished at {_now()}. "
                              f"Datasource DataSourceOpenStackLocal [net,ver=2].  "
                              f"Up {console.uptime():.2f} seconds")
        except Exception:
            LOG.exception("cloud-init of %s could not read its metadata", instance["uuid"])
            console.write("util.py[WARNING]: No active metadata service found")
        finally:
            otel_context.detach(token)

    def wait(self, timeout: float = 30.0) -> bool:
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            return not self._threads


class SerialConsole:
    """The guest's serial port: lines appended to the log libvirt keeps of it (none
    when the driver names no log)."""

    _lock = threading.Lock()

    def __init__(self, path: str | None):
        self.path = path
        self.started = time.monotonic()

    def uptime(self) -> float:
        return time.monotonic() - self.started

    def write(self, line: str) -> None:
        if not self.path:
            return
        try:
            with self._lock, open(self.path, "a", encoding="utf-8") as log:
                log.write(line + "\r\n")  # a serial line ends as a terminal's does
        except OSError as exc:  # the instance was deleted meanwhile
            LOG.debug("console log %s: %s", self.path, exc)

    def net_device_info(self, vif: dict) -> None:
        """cloud-init's ``ci-info`` table of the guest's network device."""
        self.write("ci-info: +++++++++++++++++++++Net device info++++++++++++++++++++++")
        self.write("ci-info: | Device |  Up  |    Address    |     Hw-Address    |")
        self.write(f"ci-info: |  eth0  | True | {_fixed_ip(vif)} | {vif.get('address')} |")

    def authorized_keys(self, public_keys: dict[str, str]) -> None:
        """What ``cc_ssh_authkey_fingerprints`` prints (``authkey_hash: md5``)."""
        if not public_keys:
            self.write("ci-info: no authorized SSH keys fingerprints found for user cirros.")
            return
        self.write("ci-info: ++++Authorized keys from /home/cirros/.ssh/authorized_keys "
                   "for user cirros++++")
        self.write("ci-info: | Keytype | Fingerprint (md5) | Options | Comment |")
        for _name, key in sorted(public_keys.items()):
            fields = key.split()
            comment = " ".join(fields[2:]) or "-"
            self.write(f"ci-info: | {fields[0] if fields else '-'} | "
                       f"{md5_fingerprint(key) or '-'} | - | {comment} |")


def _now() -> str:
    return time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime())


def setup_user_keys(tracer, public_keys: dict[str, str]) -> None:
    """cc_ssh's ``setup_user_keys``: the keys ``meta_data.json`` named, one span each."""
    for name, key in sorted(public_keys.items()):
        with tracer.start_as_current_span("ssh_util.setup_user_keys",
                                          attributes=SETUP_USER_KEYS) as span:
            span.set_attribute(attr.NOVA_KEYPAIR_NAME, name)
            fingerprint = md5_fingerprint(key)
            if fingerprint:
                span.set_attribute(attr.NOVA_KEYPAIR_FINGERPRINT, fingerprint)


def md5_fingerprint(key: str) -> str | None:
    """``aa:bb:...``: the MD5 of an OpenSSH key's base64 blob, or None if it has none
    (an X.509 certificate is for Windows' WinRM, not for authorized_keys)."""
    fields = key.split()
    if len(fields) < 2:
        return None
    try:
        blob = base64.b64decode(fields[1], validate=True)
    except (binascii.Error, ValueError):
        return None
    digest = hashlib.md5(blob, usedforsecurity=False).hexdigest()
    return ":".join(digest[i:i + 2] for i in range(0, len(digest), 2))


def _fixed_ip(vif: dict) -> str | None:
    for subnet in (vif.get("network") or {}).get("subnets", []):
        for ip in subnet.get("ips", []):
            return ip["address"]
    return None
