"""The unmodified ``openstack`` CLI's key pairs on ``novalab serve``, and a boot with one.

It reuses ``tests/labs/test_openstack_cli.py``'s cloud (``novalab serve`` on the
standard ports: run it in a network namespace of its own, see that module) and
its helpers; each command runs as a user types it, and each result is checked
against what it must be: fingerprints against ``ssh-keygen``'s, the key the
guest received against the one imported.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from labs.test_openstack_cli import cloud_env, novalab, openstack, table  # noqa: F401

pytestmark = pytest.mark.e2e  # `novalab serve` and the `openstack` CLI


def _fingerprint(path) -> str:
    if not shutil.which("ssh-keygen"):
        pytest.skip("ssh-keygen (openssh-client) is not installed")
    out = subprocess.run(["ssh-keygen", "-l", "-E", "md5", "-f", str(path)],
                         capture_output=True, text=True, check=True).stdout
    return re.search(r"MD5:([0-9a-f:]+)", out).group(1)


def _span_attributes(tree: str, span: str) -> list[dict[str, str]]:
    """The attributes of each span ``span`` ("SERVICE KIND NAME") in ``trace show
    --attributes`` output."""
    found, current = [], None
    for line in tree.splitlines():
        if re.match(r"^\s*[\d.]+ ms\s+[\d.]+ ms ", line):
            named = re.sub(r"\s+span [0-9a-f]{16}$", "", line.rstrip())  # the line's span id
            current = {} if named.endswith(span) else None
            if current is not None:
                found.append(current)
        elif current is not None and " = " in line:
            key, _, value = line.strip().partition(" = ")
            current[key] = value
    return found


def test_keypairs_and_a_boot_with_one(cloud_env, tmp_path):  # noqa: F811
    env = cloud_env
    key = ed25519.Ed25519PrivateKey.generate()
    public = tmp_path / "id_ed25519.pub"
    public.write_text(key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
        + " learner@laptop\n")

    imported = table(env, "keypair", "create", "--public-key", str(public), "cli-key")
    assert (imported["name"], imported["fingerprint"]) == ("cli-key", _fingerprint(public))
    # Without --public-key the client generates the pair itself and imports the public half.
    private = tmp_path / "generated"
    generated = table(env, "keypair", "create", "--private-key", str(private), "cli-gen")
    private.chmod(0o600)  # ssh-keygen reads no private key others may read
    derived = tmp_path / "generated.pub"
    derived.write_text(subprocess.run(["ssh-keygen", "-y", "-f", str(private)],
                                      capture_output=True, text=True, check=True).stdout)
    assert generated["fingerprint"] == _fingerprint(derived)

    listed = {k["Name"]: k["Fingerprint"] for k in table(env, "keypair", "list")}
    assert listed == {"cli-key": imported["fingerprint"], "cli-gen": generated["fingerprint"]}
    shown = table(env, "keypair", "show", "cli-key")
    assert (shown["name"], shown["fingerprint"]) == ("cli-key", imported["fingerprint"])
    served = openstack(env, "keypair", "show", "--public-key", "cli-key").stdout
    assert served.strip() == public.read_text().strip()

    refused = openstack(env, "server", "create", "--flavor", "m1.nano", "--image", "cirros",
                        "--network", "private", "--key-name", "nosuchkey", "cli-nokey",
                        expect_ok=False)
    assert refused.returncode != 0
    assert "Invalid key_name provided." in refused.stderr and "400" in refused.stderr
    assert "cli-nokey" not in {s["Name"] for s in table(env, "server", "list")}

    booted = table(env, "server", "create", "--flavor", "m1.nano", "--image", "cirros",
                   "--network", "private", "--key-name", "cli-key", "--wait", "cli-keyed")
    assert (booted["status"], booted["key_name"]) == ("ACTIVE", "cli-key")

    # The guest's cloud-init got the key through the metadata proxy and would install it:
    # its span says which key, with the fingerprint the guest computed from what it got.
    deadline = time.monotonic() + 30
    while not (installed := _span_attributes(novalab(
            env, "trace", "show", "--server", "cli-keyed", "--attributes").stdout,
            "cloud-init INTERNAL ssh_util.setup_user_keys")):
        assert time.monotonic() < deadline, "no ssh_util.setup_user_keys in the boot's trace"
        time.sleep(0.5)
    assert [(a["nova.keypair.name"], a["nova.keypair.fingerprint"]) for a in installed] == \
        [("cli-key", imported["fingerprint"])]

    openstack(env, "keypair", "delete", "cli-key", "cli-gen")
    assert table(env, "keypair", "list") == []
    # The server keeps the key it booted with.
    assert table(env, "server", "show", "cli-keyed")["key_name"] == "cli-key"
    openstack(env, "server", "delete", "--wait", "cli-keyed")
