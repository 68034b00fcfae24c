"""The server metadata API on both topologies: ``openstack server set --property``,
``server unset --property`` and the properties ``server show`` lists.

Checked as upstream's ``ServerMetadataController`` and ``compute/api.py``: merge
(POST), replace (PUT), one item (GET/PUT/DELETE .../{key}), the key/body mismatch
(400), the ``metadata_items`` quota (403), a locked server (409 for its member), the
states metadata may change in (409 otherwise), the policies (a reader reads, a member
writes, another project sees nothing), and the guest's view through the metadata
service.
"""

from __future__ import annotations

import httpx
import jsonschema
import pytest
from tempest.lib.api_schema.response.compute.v2_1 import servers as tempest_servers

from tests.reference.nova.test_shelve import act, boot, wait_server


@pytest.fixture(scope="module", params=["classic", "modern"])
def shared_cloud(request, tmp_path_factory):
    from tests.conftest import make_cloud

    with make_cloud(tmp_path_factory.mktemp(request.param),
                    topology=request.param) as running:
        yield running
    running.telemetry.shutdown()


def tempest_checked(response, name: str) -> dict | None:
    """The status and body Tempest's ``servers.<name>`` schema expects."""
    schema = getattr(tempest_servers, name)
    assert response.status_code in schema["status_code"], response.text
    if "response_body" in schema:
        jsonschema.validate(response.json(), schema["response_body"])
        return response.json()
    return None


def meta_url(session, server_id, key=None) -> str:
    url = f"{session.compute}/servers/{server_id}/metadata"
    return f"{url}/{key}" if key is not None else url


def test_metadata_is_merged_replaced_shown_and_removed(shared_cloud, login):
    demo = login(shared_cloud)
    response = demo.request("POST", f"{demo.compute}/servers", json={"server": {
        "name": "with-meta", "flavorRef": "42", "imageRef": shared_cloud.cirros["id"],
        "networks": "none", "metadata": {"role": "web"}}},
        headers={"OpenStack-API-Version": "compute 2.37"})
    assert response.status_code == 202, response.text
    server_id = wait_server(demo, response.json()["server"]["id"], "ACTIVE")["id"]
    assert tempest_checked(demo.request("GET", meta_url(demo, server_id)),
                           "list_server_metadata") == {"metadata": {"role": "web"}}
    merged = demo.request("POST", meta_url(demo, server_id),
                          json={"metadata": {"tier": "front", "role": "db"}})
    assert tempest_checked(merged, "update_server_metadata") == \
        {"metadata": {"role": "db", "tier": "front"}}
    one = demo.request("PUT", meta_url(demo, server_id, "owner"),
                       json={"meta": {"owner": "alice"}})
    assert tempest_checked(one, "set_show_server_metadata_item") == {"meta": {"owner": "alice"}}
    assert tempest_checked(demo.request("GET", meta_url(demo, server_id, "owner")),
                           "set_show_server_metadata_item") == {"meta": {"owner": "alice"}}
    shown = demo.request("GET", f"{demo.compute}/servers/{server_id}").json()["server"]
    assert shown["metadata"] == {"role": "db", "tier": "front", "owner": "alice"}
    tempest_checked(demo.request("DELETE", meta_url(demo, server_id, "tier")),
                    "delete_server_metadata_item")
    for method in ("GET", "DELETE"):
        gone = demo.request(method, meta_url(demo, server_id, "tier"))
        assert gone.status_code == 404
        assert gone.json()["itemNotFound"]["message"] == "Metadata item was not found"
    replaced = demo.request("PUT", meta_url(demo, server_id), json={"metadata": {"a": "1"}})
    assert tempest_checked(replaced, "set_server_metadata") == {"metadata": {"a": "1"}}
    assert demo.request("GET", meta_url(demo, server_id)).json() == {"metadata": {"a": "1"}}
    assert demo.request("PUT", meta_url(demo, server_id), json={"metadata": {}}).json() == \
        {"metadata": {}}


def test_metadata_bodies_and_the_quota(shared_cloud, login):
    demo = login(shared_cloud)
    server_id = boot(demo, shared_cloud, "meta-limits")["id"]
    mismatch = demo.request("PUT", meta_url(demo, server_id, "a"), json={"meta": {"b": "1"}})
    assert mismatch.status_code == 400
    assert mismatch.json()["badRequest"]["message"] == "Request body and URI mismatch"
    for bad in ({"meta": {}}, {"meta": {"a": "1", "b": "2"}}, {"meta": {"a": 1}},
                {"metadata": {"a": "1"}}):
        assert demo.request("PUT", meta_url(demo, server_id, "a"), json=bad).status_code \
            == 400, bad
    for bad in ({"metadata": {"": "x"}}, {"metadata": {"k/1": "x"}},
                {"metadata": {"k": "x" * 256}}, {"metadata": {"k" * 256: "x"}},
                {"metadata": ["a"]}, {"meta": {"a": "1"}}, {}):
        for method in ("POST", "PUT"):
            assert demo.request(method, meta_url(demo, server_id), json=bad).status_code \
                == 400, (method, bad)
    full = {f"k{i}": "v" for i in range(128)}
    assert demo.request("PUT", meta_url(demo, server_id), json={"metadata": full}) \
        .status_code == 200
    for method, url, body in (
            ("POST", meta_url(demo, server_id), {"metadata": {"one-more": "v"}}),
            ("PUT", meta_url(demo, server_id, "one-more"), {"meta": {"one-more": "v"}}),
            ("PUT", meta_url(demo, server_id),
             {"metadata": dict(full, **{"one-more": "v"})})):
        over = demo.request(method, url, json=body)
        assert over.status_code == 403, (method, url, over.text)
        assert over.json()["forbidden"]["message"] == \
            "Maximum number of metadata items exceeds 128"
    # Keys already there count once: overwriting one still fits.
    assert demo.request("POST", meta_url(demo, server_id), json={"metadata": {"k0": "w"}}) \
        .status_code == 200
    assert len(demo.request("GET", meta_url(demo, server_id)).json()["metadata"]) == 128


def test_locks_states_and_policies_hold(shared_cloud, login):
    demo, admin = login(shared_cloud), login(shared_cloud, "admin")
    reader, other = login(shared_cloud, "reader", "demo"), login(shared_cloud, "alt_demo")
    server_id = boot(demo, shared_cloud, "meta-guarded")["id"]
    assert demo.request("POST", meta_url(demo, server_id),
                        json={"metadata": {"kept": "1"}}).status_code == 200
    assert reader.request("GET", meta_url(reader, server_id)).json() == \
        {"metadata": {"kept": "1"}}
    assert reader.request("GET", meta_url(reader, server_id, "kept")).status_code == 200
    for method, url, body in (("POST", meta_url(reader, server_id), {"metadata": {"n": "1"}}),
                              ("PUT", meta_url(reader, server_id), {"metadata": {}}),
                              ("PUT", meta_url(reader, server_id, "n"), {"meta": {"n": "1"}}),
                              ("DELETE", meta_url(reader, server_id, "kept"), None)):
        assert reader.request(method, url, json=body).status_code == 403, (method, url)
        assert other.request(method, url.replace(reader.compute, other.compute),
                             json=body).status_code == 404, (method, url)
    assert other.request("GET", meta_url(other, server_id)).status_code == 404
    # A locked server: its member gets a 409, an admin passes.
    assert act(demo, server_id, {"lock": None}).status_code == 202
    locked = demo.request("POST", meta_url(demo, server_id), json={"metadata": {"n": "1"}})
    assert locked.status_code == 409
    assert locked.json()["conflictingRequest"]["message"] == \
        f"Instance {server_id} is locked"
    assert demo.request("DELETE", meta_url(demo, server_id, "kept")).status_code == 409
    assert admin.request("PUT", meta_url(admin, server_id, "by"),
                         json={"meta": {"by": "admin"}}).status_code == 200
    assert act(admin, server_id, {"unlock": None}).status_code == 202
    # Shelved (offloaded) is not a state metadata changes in.
    assert act(demo, server_id, {"shelve": None}).status_code == 202
    wait_server(demo, server_id, "SHELVED_OFFLOADED")
    refused = demo.request("POST", meta_url(demo, server_id), json={"metadata": {"n": "1"}})
    assert refused.status_code == 409
    assert refused.json()["conflictingRequest"]["message"] == (
        f"Cannot 'update metadata' instance {server_id} while it is in vm_state "
        "shelved_offloaded")
    refused = demo.request("DELETE", meta_url(demo, server_id, "kept"))
    assert refused.json()["conflictingRequest"]["message"] == (
        f"Cannot 'delete metadata' instance {server_id} while it is in vm_state "
        "shelved_offloaded")
    assert demo.request("GET", meta_url(demo, server_id)).json() == \
        {"metadata": {"kept": "1", "by": "admin"}}


def test_the_guest_reads_the_changed_metadata(shared_cloud, login):
    """``meta`` in ``openstack/latest/meta_data.json``, read from where the instance
    lives on each request (novalab keeps no metadata cache)."""
    from novalab.reference.common.metadata_secret import shared_secret, sign_instance_id

    demo = login(shared_cloud)
    server = boot(demo, shared_cloud, "meta-guest")
    demo.request("POST", meta_url(demo, server["id"]), json={"metadata": {"role": "web"}})
    headers = {"X-Instance-ID": server["id"], "X-Tenant-ID": server["tenant_id"],
               "X-Forwarded-For": "10.0.0.3", "X-Instance-ID-Signature": sign_instance_id(
                   server["id"], shared_secret(shared_cloud.config.state_dir))}
    url = f"{shared_cloud.urls['metadata']}/openstack/latest/meta_data.json"
    response = httpx.get(url, headers=headers)
    assert response.status_code == 200, response.text
    assert response.json()["meta"] == {"role": "web"}
    demo.request("DELETE", meta_url(demo, server["id"], "role"))
    assert "meta" not in httpx.get(url, headers=headers).json()
