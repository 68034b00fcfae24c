"""The metadata path's shared secret, and where each guest's requests come from.

The metadata proxy signs the instance id it vouches for with HMAC-SHA256 under
a secret nova-api-metadata also knows (``metadata_proxy_shared_secret`` in
neutron's metadata agent, ``[neutron] metadata_proxy_shared_secret`` in nova).
A deployment generates its own on first start and keeps it in the state dir
(``metadata_proxy_shared_secret``, mode 0600), where every process of the
deployment reads it; ``NOVALAB_METADATA_SECRET`` overrides it for services on
several hosts. There is no default secret: a well-known one would let anyone
who reaches nova-api-metadata sign any instance id.

Upstream, the proxy knows which guest is asking from the request's source
address inside the network's namespace, which the network itself vouches for.
On loopback every guest would be 127.0.0.1, so each guest stand-in sends from
an address of its own in 127/8, :func:`guest_source_address` of its port: the
proxy maps that address back to the port, and so to the instance.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

SECRET_FILE = "metadata_proxy_shared_secret"
SECRET_ENV = "NOVALAB_METADATA_SECRET"


def shared_secret(state_dir: Path | str) -> str:
    """The deployment's secret: from the environment, else the state dir (made once)."""
    if os.environ.get(SECRET_ENV):
        return os.environ[SECRET_ENV]
    path = Path(state_dir) / SECRET_FILE
    if not path.exists():
        # Written whole under another name, then linked into place: processes of
        # one deployment starting together all read the same, complete secret.
        tmp = path.with_name(f".{SECRET_FILE}.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32))
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    secret = path.read_text().strip()
    if len(secret) < 32:
        raise RuntimeError(f"{path} holds no usable secret: delete it to make a new one")
    return secret


def sign_instance_id(instance_id: str, secret: str) -> str:
    """Hex HMAC-SHA256 of ``instance_id`` (``neutron.common.utils.sign_instance_id``)."""
    return hmac.new(secret.encode(), instance_id.encode(), hashlib.sha256).hexdigest()


def guest_source_address(port_id: str, secret: str) -> str:
    """The 127/8 address the guest of ``port_id`` sends its metadata requests from.

    Keyed by the deployment secret, so another project cannot work out the
    address of a port it cannot see; never in 127.0.0.0/16, where services listen.
    """
    digest = hmac.new(secret.encode(), f"guest-source:{port_id}".encode(),
                      hashlib.sha256).digest()
    return f"127.{1 + digest[0] % 254}.{digest[1]}.{1 + digest[2] % 254}"
