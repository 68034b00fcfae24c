"""Every API answers with its request id, and its HTTP SERVER span carries the same.

oslo.middleware's ``RequestId`` in every service (``install_request_id``): the id a
client reads in ``X-OpenStack-Request-ID`` is the ``openstack.request_id`` of the
SERVER span that served it, so a trace is found from a response (and from
``openstack server event list``, which shows nova-api's ids). ceph-rgw answers as
Swift does, the same transaction id as ``X-Trans-Id``.
"""

from __future__ import annotations

import re
import time
import uuid

import httpx
import pytest

from novalab.reference.common.credentials import PERSONA_PASSWORD
from novalab.tracing import attributes as attr

REQUEST_ID = re.compile(r"^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
TRANS_ID = re.compile(r"^tx[0-9a-f]{21}-[0-9a-f]{8,}-default$")


def server_span(cloud, service: str, request_id: str, timeout: float = 5.0):
    """The HTTP SERVER span of ``service`` tagged with ``request_id`` (it may end late)."""
    deadline = time.monotonic() + timeout
    while True:
        found = [s for s in cloud.telemetry.finished_spans()
                 if s.kind.name == "SERVER" and
                 s.resource.attributes.get(attr.SERVICE_NAME) == service and
                 s.attributes.get(attr.OPENSTACK_REQUEST_ID) == request_id]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


@pytest.fixture(scope="module")
def token(shared_cloud):
    response = httpx.post(f"{shared_cloud.identity_url}/auth/tokens", json={"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": "demo", "domain": {"id": "default"},
            "password": PERSONA_PASSWORD}}},
        "scope": {"project": {"name": "demo", "domain": {"id": "default"}}}}})
    return response.headers["X-Subject-Token"], response.json()["token"]["project"]["id"]


def requests(cloud, project_id):
    """(service, method, URL) of one ordinary request to each API."""
    urls = cloud.urls
    return [
        ("keystone", "GET", f"{urls['keystone']}/v3"),
        ("nova-api", "GET", f"{urls['nova']}/v2.1/servers"),
        ("glance-api", "GET", f"{urls['glance']}/v2/images"),
        ("neutron-server", "GET", f"{urls['neutron']}/v2.0/networks"),
        ("cinder-api", "GET", f"{urls['cinder']}/v3/{project_id}/volumes"),
        ("ceph-rgw", "GET", f"{urls['ceph-rgw']}/swift/v1?format=json"),
    ]


@pytest.mark.parametrize("service", ["keystone", "nova-api", "glance-api", "neutron-server",
                                     "cinder-api", "ceph-rgw"])
def test_each_api_answers_with_the_id_of_its_server_span(shared_cloud, token, service):
    auth_token, project_id = token
    (_, method, url), = [r for r in requests(shared_cloud, project_id) if r[0] == service]
    response = httpx.request(method, url, headers={"X-Auth-Token": auth_token})
    assert response.status_code == 200, response.text
    request_id = response.headers["X-OpenStack-Request-ID"]
    if service == "ceph-rgw":
        assert TRANS_ID.match(request_id) and response.headers["X-Trans-Id"] == request_id
    else:
        assert REQUEST_ID.match(request_id)
    if service == "nova-api":  # and under its pre-oslo name
        assert response.headers["X-Compute-Request-Id"] == request_id
    else:
        assert "X-Compute-Request-Id" not in response.headers
    spans = server_span(shared_cloud, service, request_id)
    assert len(spans) == 1, f"no {service} SERVER span with {request_id}"


@pytest.mark.parametrize("path, status", [("/v2.1/servers/nope", 404),
                                          ("/v2.1/no-such-resource", 404)])
def test_errors_carry_the_id_too(shared_cloud, token, path, status):
    response = httpx.get(f"{shared_cloud.urls['nova']}{path}",
                         headers={"X-Auth-Token": token[0]})
    assert response.status_code == status and "itemNotFound" in response.json()
    assert server_span(shared_cloud, "nova-api", response.headers["X-OpenStack-Request-ID"])
    unauthorized = httpx.get(f"{shared_cloud.urls['neutron']}/v2.0/networks")
    assert unauthorized.status_code == 401
    assert server_span(shared_cloud, "neutron-server",
                       unauthorized.headers["X-OpenStack-Request-ID"])


def test_a_callers_id_is_kept_as_the_global_request_id(shared_cloud, token):
    """As oslo.middleware does: the service answers with an id of its own; a caller's
    ``req-<uuid>`` is kept beside it (``global_request_id``), anything else dropped."""
    caller = f"req-{uuid.uuid4()}"
    response = httpx.get(f"{shared_cloud.urls['neutron']}/v2.0/networks",
                         headers={"X-Auth-Token": token[0], "X-OpenStack-Request-ID": caller})
    own = response.headers["X-OpenStack-Request-ID"]
    assert REQUEST_ID.match(own) and own != caller
    (span,) = server_span(shared_cloud, "neutron-server", own)
    assert span.attributes[attr.OPENSTACK_GLOBAL_REQUEST_ID] == caller
    bogus = httpx.get(f"{shared_cloud.urls['neutron']}/v2.0/networks",
                      headers={"X-Auth-Token": token[0], "X-OpenStack-Request-ID": "mine"})
    (span,) = server_span(shared_cloud, "neutron-server",
                          bogus.headers["X-OpenStack-Request-ID"])
    assert attr.OPENSTACK_GLOBAL_REQUEST_ID not in span.attributes


def test_a_boot_carries_nova_apis_id_to_the_services_nova_calls(shared_cloud, token):
    """nova-api's request id, the one ``server event list`` shows, reaches glance (from
    nova-api), neutron and cinder (from nova-compute) as their global request id."""
    headers = {"X-Auth-Token": token[0]}
    nova = shared_cloud.urls["nova"]
    response = httpx.post(f"{nova}/v2.1/servers", headers=headers, json={"server": {
        "name": "traced-ids", "flavorRef": "42", "imageRef": shared_cloud.cirros["id"],
        "block_device_mapping_v2": [
            {"boot_index": 0, "uuid": shared_cloud.cirros["id"], "source_type": "image",
             "destination_type": "local"},
            {"source_type": "blank", "destination_type": "volume", "volume_size": 1,
             "delete_on_termination": True}]}})
    assert response.status_code == 202, response.text
    create_id = response.headers["X-OpenStack-Request-ID"]
    server_id = response.json()["server"]["id"]
    deadline = time.monotonic() + 60
    while httpx.get(f"{nova}/v2.1/servers/{server_id}", headers=headers) \
            .json()["server"]["status"] != "ACTIVE":
        assert time.monotonic() < deadline, "the server did not become ACTIVE"
        time.sleep(0.05)
    shared_cloud.wait_idle()
    reached = {s.resource.attributes.get(attr.SERVICE_NAME)
               for s in shared_cloud.telemetry.finished_spans()
               if s.kind.name == "SERVER" and
               s.attributes.get(attr.OPENSTACK_GLOBAL_REQUEST_ID) == create_id}
    assert {"glance-api", "neutron-server", "cinder-api"} <= reached
