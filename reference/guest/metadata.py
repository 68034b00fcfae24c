"""cloud-init's side of the metadata path: what the guest asks 169.254.169.254.

At boot cloud-init's OpenStack data source reads
``/openstack/latest/meta_data.json`` (and ``network_data.json``, and the user
data, ``user_data``, when the server was given any) from the metadata address.
In novalab the guest is a libvirt test domain with no network, so this module
plays cloud-init from the host, over loopback, with its own ``service.name``
(``cloud-init``). It sends no identity of its own: the ``http`` client it is
given sends from the guest's own loopback address (``guest_source_address`` of
its port), from which the proxy finds the port, as upstream's proxy does from
the guest's IP in the network's namespace (see ``neutron/agent/metadata/proxy.py``).
"""

from __future__ import annotations

import httpx
from opentelemetry import trace

from novalab.tracing import attributes as attr

CLOUD_INIT_URL = ("https://github.com/canonical/cloud-init/blob/main/"
                  "cloudinit/sources/helpers/openstack.py")


class MetadataNotFound(RuntimeError):
    pass


# The span is MetadataReader.read_v2; cloud-init's MetadataReader inherits read_v2 from
# BaseReader, where the code is.
READ_V2 = {attr.CODE_FUNCTION_NAME: "cloudinit.sources.helpers.openstack.BaseReader.read_v2",
           attr.CODE_FILE_PATH: "cloudinit/sources/helpers/openstack.py",
           attr.UPSTREAM_URL: CLOUD_INIT_URL}


def _get(proxy_url: str, path: str, http: httpx.Client) -> httpx.Response:
    response = http.get(f"{proxy_url.rstrip('/')}{path}")
    if response.status_code != 200:
        raise MetadataNotFound(f"{path}: HTTP {response.status_code} {response.text[:200]}")
    return response


def fetch_metadata(proxy_url: str, http: httpx.Client,
                   path: str = "/openstack/latest/meta_data.json", tracer=None) -> dict:
    """GET ``path`` through the metadata proxy as the guest ``http`` sends from; the JSON.

    Raises :class:`MetadataNotFound` on any non-200 answer, with the status.
    """
    tracer = tracer or trace.NoOpTracer()
    with tracer.start_as_current_span("MetadataReader.read_v2", attributes=READ_V2):
        return _get(proxy_url, path, http).json()


def read_v2(proxy_url: str, http: httpx.Client, tracer=None) -> tuple[dict, bytes | None]:
    """What the guest reads at first boot, in one span: ``meta_data.json``, then its user
    data (or None when it has none).

    cloud-init reads ``user_data`` as an optional file: a server booted without
    ``--user-data`` answers 404. To ask only for what exists (a 404 would be an
    error on the guest's span), the guest reads the version's file list,
    ``/openstack/latest``, and fetches ``user_data`` only when it is listed.
    """
    tracer = tracer or trace.NoOpTracer()
    with tracer.start_as_current_span("MetadataReader.read_v2", attributes=READ_V2):
        meta = _get(proxy_url, "/openstack/latest/meta_data.json", http).json()
        files = _get(proxy_url, "/openstack/latest", http).text.split()
        if "user_data" not in files:
            return meta, None
        return meta, _get(proxy_url, "/openstack/latest/user_data", http).content
