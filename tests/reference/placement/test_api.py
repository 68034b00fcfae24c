"""placement-api as a service: version negotiation, auth and policy, error bodies,
schemas on every body, and its traces."""

from __future__ import annotations

import time
import uuid

import pytest

from novalab.reference.common import validation
from novalab.tracing import attributes as attr


def _error(response) -> dict:
    body = response.json()
    assert list(body) == ["errors"], body
    (error,) = body["errors"]
    return error


def test_root_is_the_version_document_without_a_token(env):
    response = env.http.get(f"{env.w.urls['placement']}/")
    assert response.status_code == 200
    assert response.json() == {"versions": [{
        "id": "v1.0", "min_version": "1.0", "max_version": "1.29", "status": "CURRENT",
        "links": [{"rel": "self", "href": ""}]}]}
    assert response.headers["OpenStack-API-Version"] == "placement 1.0"


def test_microversion_negotiation(env, admin):
    url = f"{env.w.urls['placement']}/"
    # What osc-placement does: ask at its newest version, fall back on max_version.
    refused = env.http.get(url, headers={"OpenStack-API-Version": "placement 1.39"})
    assert refused.status_code == 406
    error = _error(refused)
    assert error["max_version"] == "1.29" and error["min_version"] == "1.0"
    assert error["title"] == "Not Acceptable" and "code" not in error
    assert "Unacceptable version header: 1.39" in error["detail"]
    latest = env.http.get(url, headers={"OpenStack-API-Version": "placement latest"})
    assert latest.headers["OpenStack-API-Version"] == "placement 1.29"
    assert latest.headers["Vary"] == "OpenStack-API-Version"
    other_service = env.http.get(url, headers={"OpenStack-API-Version": "compute 2.90"})
    assert other_service.headers["OpenStack-API-Version"] == "placement 1.0"
    malformed = admin.request("GET", "/resource_providers", version="one")
    assert malformed.status_code == 400 and "Invalid microversion" in _error(malformed)["detail"]
    # Routes newer than the version asked for do not exist for it.
    assert admin.request("GET", "/resource_classes", version="1.1").status_code == 404
    classes = admin.ok("GET", "/resource_classes", version="1.2")["resource_classes"]
    assert [c["name"] for c in classes][:3] == ["VCPU", "MEMORY_MB", "DISK_GB"]
    # Error codes from 1.23 on.
    before = admin.request("GET", f"/resource_providers/{uuid.uuid4()}", version="1.22")
    assert "code" not in _error(before)
    after = admin.request("GET", f"/resource_providers/{uuid.uuid4()}", version="1.23")
    assert _error(after)["code"] == "placement.undefined_code"
    # Last-modified and cache-control from 1.15.
    assert "Last-Modified" not in admin.request("GET", "/resource_providers", version="1.14"
                                                ).headers
    fresh = admin.request("GET", "/resource_providers", version="1.15")
    assert fresh.headers["Cache-Control"] == "no-cache" and fresh.headers["Last-Modified"]


def test_a_token_is_needed_and_only_admins_and_services_may_act(env, admin, nova, demo):
    placement = env.w.urls["placement"]
    anonymous = env.http.get(f"{placement}/resource_providers")
    assert anonymous.status_code == 401   # keystonemiddleware's own body, as upstream
    assert anonymous.json()["error"]["code"] == 401
    assert nova.request("GET", "/resource_providers").status_code == 200
    for method, path, body in (("GET", "/resource_providers", None),
                               ("POST", "/resource_providers", {"name": "demo-rp"}),
                               ("GET", "/allocation_candidates?resources=VCPU:1", None),
                               ("PUT", f"/allocations/{uuid.uuid4()}", {"bogus": 1}),
                               ("GET", "/resource_classes", None)):
        response = demo.request(method, path, json=body)
        assert response.status_code == 403, (method, path)
        error = _error(response)
        assert error["title"] == "Forbidden"
        assert "Policy does not allow placement:" in error["detail"]
    assert admin.ok("GET", "/resource_providers?name=demo-rp") == {"resource_providers": []}


@pytest.mark.parametrize("body, words", [
    (b"{", "Malformed JSON"),
    (b"[]", "JSON does not validate: [] is not of type 'object'"),
    (b'{"name": 42}', "JSON does not validate: 42 is not of type 'string'"),
    (b'{"name": "x", "color": "red"}', "Additional properties are not allowed"),
    (b'{"name": "' + b"x" * 201 + b'"}', "is too long"),
    (b'{"name": "x", "uuid": "not-a-uuid"}', "is not a 'uuid'"),
    (b"[" * 5000, "nested too deeply"),           # the fuzz test's find: was a 500
    (b'{"a":' * 3000, "nested too deeply"),
])
def test_bad_bodies_are_400_in_placements_shape(admin, body, words):
    response = admin.request("POST", "/resource_providers", content=body,
                             headers={"Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    error = _error(response)
    assert error["title"] == "Bad Request"
    assert error["code"] == "placement.undefined_code"
    assert words in error["detail"]
    assert error["detail"].startswith("The server could not comply with the request")


def test_bodies_must_be_json_and_inventories_follow_their_schema(admin):
    not_json = admin.request("POST", "/resource_providers", content=b"name=x",
                             headers={"Content-Type": "text/plain"})
    assert not_json.status_code == 415
    rp = admin.provider("rp-schema")
    path = f"/resource_providers/{rp['uuid']}/inventories"
    for inventory in ({"total": 0}, {"total": "8"}, {"total": 8, "reserved": -1},
                      {"total": 8, "step_size": 0}, {"total": 2**31}):
        response = admin.request("PUT", path, json={"resource_provider_generation": 0,
                                                    "inventories": {"VCPU": inventory}})
        assert response.status_code == 400, inventory
    no_generation = admin.request("PUT", path, json={"inventories": {}})
    assert "'resource_provider_generation' is a required property" in \
        _error(no_generation)["detail"]
    bad_consumer = admin.request("PUT", "/allocations/not-a-uuid", json={})
    assert bad_consumer.status_code == 400
    assert "Malformed consumer_uuid: not-a-uuid" in _error(bad_consumer)["detail"]


def test_unknown_paths_and_methods(admin):
    assert _error(admin.request("GET", "/traits"))["status"] == 404   # not served here
    wrong = admin.request("PATCH", "/resource_providers")
    assert wrong.status_code == 405
    assert set(wrong.headers["Allow"].split(", ")) >= {"GET", "POST"}


def test_every_route_that_takes_a_body_has_a_schema(env):
    (server,) = [s for s in env.w._servers if s.name == "placement-api"]
    found = validation.routes_with_schemas(server._server.app)
    assert {(method, rule) for method, rule, _ in found} == {
        ("POST", "/resource_providers"), ("PUT", "/resource_providers/<uuid>"),
        ("POST", "/resource_providers/<uuid>/inventories"),
        ("PUT", "/resource_providers/<uuid>/inventories"),
        ("PUT", "/resource_providers/<uuid>/inventories/<resource_class>"),
        ("PUT", "/allocations/<consumer_uuid>"), ("POST", "/allocations")}
    assert all(schema for _, _, schema in found)


def test_a_request_is_traced_with_upstream_names_and_its_sql(env, admin):
    response = admin.request("GET", "/allocation_candidates?resources=VCPU:1")
    assert response.status_code == 200
    request_id = response.headers["X-OpenStack-Request-ID"]

    def spans():
        return [s for s in env.telemetry.finished_spans()
                if s.resource.attributes["service.name"] == "placement-api"]

    deadline = time.monotonic() + 10   # the SERVER span may end just after the answer
    while not (server := [s for s in spans()
                          if s.attributes.get(attr.OPENSTACK_REQUEST_ID) == request_id]):
        assert time.monotonic() < deadline, "placement-api's SERVER span never ended"
        time.sleep(0.02)
    server = server[0]
    mine = [s for s in spans() if s.context.trace_id == server.context.trace_id]
    by_name = {s.name: s for s in mine}
    handler = by_name["list_allocation_candidates"]
    assert handler.attributes[attr.CODE_FUNCTION_NAME] == \
        "placement.handlers.allocation_candidate.list_allocation_candidates"
    assert handler.attributes[attr.UPSTREAM_URL] == (
        "https://opendev.org/openstack/placement/src/branch/master/"
        "placement/handlers/allocation_candidate.py")
    search = by_name["AllocationCandidates.get_by_requests"]
    assert search.parent.span_id == handler.context.span_id
    assert any(s.name == "SELECT placement_inventories" and
               s.parent.span_id == search.context.span_id for s in mine)
