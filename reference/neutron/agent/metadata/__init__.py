"""The metadata path's shared secret, which neutron and nova must agree on.

The metadata proxy signs the instance id it vouches for with HMAC-SHA256 under
a secret nova-api-metadata also knows (``metadata_proxy_shared_secret`` in
neutron's metadata agent, ``[neutron] metadata_proxy_shared_secret`` in nova).
In a deployment those are two config options that must match; novalab reads
both from this one function: ``NOVALAB_METADATA_SECRET`` or the default below.
"""

from __future__ import annotations

import hashlib
import hmac
import os

METADATA_PROXY_SHARED_SECRET = "novalab-metadata-secret"


def shared_secret() -> str:
    return os.environ.get("NOVALAB_METADATA_SECRET", METADATA_PROXY_SHARED_SECRET)


def sign_instance_id(instance_id: str, secret: str | None = None) -> str:
    """Hex HMAC-SHA256 of ``instance_id`` (``neutron.common.utils.sign_instance_id``)."""
    key = (shared_secret() if secret is None else secret).encode()
    return hmac.new(key, instance_id.encode(), hashlib.sha256).hexdigest()
