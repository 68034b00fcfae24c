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

from opentelemetry import context as otel_context
from opentelemetry import trace

from novalab.reference.common.wiring import Wiring
from novalab.reference.neutron.agent.metadata import guest_source_address, shared_secret
from novalab.reference.neutron.guest_agent import read_v2
from novalab.tracing import attributes as attr

LOG = logging.getLogger(__name__)

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

    def __call__(self, instance: dict, network_info: list) -> None:
        vifs = [v for v in network_info or [] if _fixed_ip(v)]
        if not vifs or "metadata-proxy" not in self.w.urls:
            return
        parent = otel_context.get_current()
        link = trace.Link(trace.get_current_span().get_span_context())
        thread = threading.Thread(target=self._boot, args=(instance, vifs[0], parent, link),
                                  name=f"guest-{instance['uuid'][:8]}", daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _boot(self, instance, vif, parent, link) -> None:
        hostname = instance.get("display_name") or instance["uuid"]
        tracer = self.w.tracer("cloud-init", hostname)
        token = otel_context.attach(parent)
        try:
            with tracer.start_as_current_span(
                    "cloud-init init", links=[link],
                    attributes={attr.NOVALAB_STAND_IN:
                                "guest first boot (libvirt test hypervisor)",
                                attr.NOVA_INSTANCE_UUID: instance["uuid"]}):
                source = guest_source_address(vif["id"], shared_secret(self.w.config.state_dir))
                with self.w.http("cloud-init", hostname, local_address=source) as http:
                    meta, user_data = read_v2(self.w.urls["metadata-proxy"], http,
                                              tracer=tracer)
                    self.results[instance["uuid"]] = dict(meta, user_data=user_data)
                setup_user_keys(tracer, meta.get("public_keys") or {})
        except Exception:
            LOG.exception("cloud-init of %s could not read its metadata", instance["uuid"])
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
