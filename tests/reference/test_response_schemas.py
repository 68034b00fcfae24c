"""Every response body a boot and the first-hour commands produce, against the response
schemas of the negotiated microversion, with additional properties forbidden (issue 12).

Compute and block storage: Tempest's library (``tempest/lib/api_schema/response``),
one module per microversion that changed a resource; for a version we take each
resource's module from the highest Tempest directory at or below it, as Tempest's
own clients do. Tempest leaves ``additionalProperties`` out of some objects that
have ``properties`` (an instance action's events, a quota set's detail entries, the
``media-types`` of a version): :func:`strict` sets it false there, so a field no
version has fails here too. Where Tempest's one schema covers several versions
(block storage's volume below 3.61 has ``group_id`` and ``provider_id`` optional),
the test says which fields each version must and must not have.

Identity and network: small schemas written from the API reference
(``tests/reference/schemas/``). Images: against the schemas Glance itself serves at
``/v2/schemas/image(s)``, in ``tests/reference/glance/test_image_changes.py``
(``test_every_image_body_matches_the_schemas_glance_serves``). Server metadata
bodies: ``tests/reference/nova/api/test_server_metadata.py``.
"""

from __future__ import annotations

import copy
import importlib
import time

import jsonschema
import pytest
from conftest import Session
from reference.schemas import identity, network
from tempest.lib.common.jsonschema_validator import FORMAT_CHECKER, JSONSCHEMA_VALIDATOR

from novalab.reference.common.credentials import PERSONA_PASSWORD

COMPUTE = "tempest.lib.api_schema.response.compute"
VOLUME = "tempest.lib.api_schema.response.volume"
# 2.1, a version in the middle (the embedded flavor of 2.47, below 2.51's events),
# and novalab's maximum.
COMPUTE_VERSIONS = ["2.1", "2.47", "2.61"]
VOLUME_VERSIONS = ["3.0", "3.27", "3.44"]
TEMPEST_COMPUTE_DIRS = (1, 2, 3, 6, 8, 9, 11, 13, 16, 19, 23, 26, 28, 33, 36, 39, 41, 45,
                        47, 48, 50, 51, 53, 54, 55, 57, 58, 59, 61)


def strict(schema):
    """Forbid additional properties in every object schema that lists its properties."""
    schema = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if (node.get("type") == "object" or "properties" in node) and \
                    ("properties" in node or "patternProperties" in node) and \
                    "additionalProperties" not in node:
                node["additionalProperties"] = False
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return schema


def validate(body, schema) -> None:
    jsonschema.validate(body, strict(schema), cls=JSONSCHEMA_VALIDATOR,
                        format_checker=FORMAT_CHECKER)


def tempest(resource: str, version: str, name: str) -> dict:
    """Tempest's schema ``name`` of ``resource`` (servers, flavors, ...) for ``version``."""
    minor = int(version.split(".")[1])
    for directory in sorted((d for d in TEMPEST_COMPUTE_DIRS if d <= minor), reverse=True):
        try:
            module = importlib.import_module(f"{COMPUTE}.v2_{directory}.{resource}")
        except ModuleNotFoundError:
            continue
        if hasattr(module, name):
            return getattr(module, name)
    raise LookupError(f"no Tempest schema {resource}.{name} at {version}")


def check(response, schema: dict, expected_status=None) -> dict:
    """The response has one of the schema's status codes and its body validates."""
    assert response.status_code in (expected_status or schema["status_code"]), response.text
    body = response.json() if response.content else None
    if schema.get("response_body"):
        validate(body, schema["response_body"])
    return body


class Client:
    """One user's requests at one compute and one volume microversion."""

    def __init__(self, session, compute_version="2.1", volume_version="3.0"):
        self.session = session
        self.headers = {"OpenStack-API-Version":
                        f"compute {compute_version}, volume {volume_version}"}

    def __call__(self, method, url, **kwargs):
        return self.session.request(method, url, headers=self.headers, **kwargs)


@pytest.fixture(scope="module")
def users(shared_cloud):

    sessions = {"demo": Session(shared_cloud, "demo", "demo"),
                "admin": Session(shared_cloud, "admin", "admin")}
    yield sessions
    for session in sessions.values():
        session.close()


def private_network(session) -> str:
    url = session.client.endpoint("network")
    nets = session.request("GET", f"{url}/v2.0/networks?name=private").json()["networks"]
    return nets[0]["id"]


def wait_active(call, url, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        server = call("GET", url).json()["server"]
        if server["status"] in ("ACTIVE", "ERROR"):
            return server
        time.sleep(0.1)
    raise AssertionError(f"{url} did not become ACTIVE")


@pytest.fixture(scope="module")
def booted(shared_cloud, users):
    """One server booted at each compute version, with that version's create body."""
    servers = {}
    net = private_network(users["demo"])
    for version in COMPUTE_VERSIONS:
        call = Client(users["demo"], version)
        server = {"name": f"schema-{version}", "flavorRef": "42",
                  "imageRef": shared_cloud.cirros["id"], "networks": [{"uuid": net}]}
        if int(version.split(".")[1]) >= 19:
            server["description"] = f"booted at {version}"
        if version == "2.61":
            server["tags"] = ["first-hour", "schemas"]
        response = call("POST", f"{users['demo'].compute}/servers", json={"server": server})
        body = check(response, tempest("servers", version, "create_server"))
        url = f"{users['demo'].compute}/servers/{body['server']['id']}"
        assert wait_active(call, url)["status"] == "ACTIVE"
        servers[version] = (body["server"]["id"], response.headers["X-OpenStack-Request-ID"])
    return servers


def test_compute_versions(users):
    session = users["demo"]
    root = session.compute.rsplit("/v2.1", 1)[0]
    check(session.request("GET", root + "/"), tempest("versions", "2.1", "list_versions"))
    check(session.request("GET", session.compute + "/"),
          tempest("versions", "2.1", "get_one_version"))


@pytest.mark.parametrize("version", COMPUTE_VERSIONS)
@pytest.mark.parametrize("user", ["demo", "admin"])
def test_compute_bodies(users, booted, version, user):
    """Servers, flavors, instance actions, limits and quotas at ``version``."""
    session = users[user]
    call = Client(session, version)
    compute = session.compute
    server_id, request_id = booted[version]
    server = check(call("GET", f"{compute}/servers/{server_id}"),
                   tempest("servers", version, "get_server"))["server"]
    check(call("GET", f"{compute}/servers"), tempest("servers", version, "list_servers"))
    query = "" if user == "demo" else "?all_tenants=1"  # the admin sees demo's server too
    detail = check(call("GET", f"{compute}/servers/detail{query}"),
                   tempest("servers", version, "list_servers_detail"))
    assert server_id in [s["id"] for s in detail["servers"]]
    # What each version has, and nothing more (Tempest leaves most of them optional).
    minor = int(version.split(".")[1])
    assert ("description" in server) == (minor >= 19)
    assert ("tags" in server) == (minor >= 26)
    assert ("locked" in server) == (minor >= 9)
    assert ("host_status" in server) == (minor >= 16 and user == "admin")
    assert ("OS-EXT-SRV-ATTR:reservation_id" in server) == (minor >= 3 and user == "admin")
    assert ("original_name" in server["flavor"]) == (minor >= 47)
    if minor >= 26 and version == "2.61":
        assert server["tags"] == ["first-hour", "schemas"]
    if minor >= 19:
        assert server["description"] == f"booted at {version}"
    if user == "admin" and minor >= 16:
        assert server["host_status"] == "UP"
    if user == "admin" and minor >= 3:
        assert server["OS-EXT-SRV-ATTR:root_device_name"] == "/dev/vda"
        assert server["OS-EXT-SRV-ATTR:reservation_id"].startswith("r-")

    flavors = check(call("GET", f"{compute}/flavors"), tempest("flavors", version,
                                                               "list_flavors"))
    assert ("description" in flavors["flavors"][0]) == (minor >= 55)
    details = check(call("GET", f"{compute}/flavors/detail"),
                    tempest("flavors", version, "list_flavors_details"))
    assert ("extra_specs" in details["flavors"][0]) == (minor >= 61)
    check(call("GET", f"{compute}/flavors/42"),
          tempest("flavors", version, "create_update_get_flavor_details"))

    actions = check(call("GET", f"{compute}/servers/{server_id}/os-instance-actions"),
                    tempest("servers", version, "list_instance_actions"))
    assert [a["action"] for a in actions["instanceActions"]][-1] == "create"
    action = check(call("GET", f"{compute}/servers/{server_id}/os-instance-actions/"
                               f"{request_id}"),
                   tempest("servers", version, "show_instance_action"))["instanceAction"]
    assert ("events" in action) == (minor >= 51 or user == "admin")
    assert ("updated_at" in action) == (minor >= 58)

    limits = check(call("GET", f"{compute}/limits"), tempest("limits", version, "get_limit"))
    assert ("maxImageMeta" in limits["limits"]["absolute"]) == (minor < 39)
    project = session.project_id
    quota = check(call("GET", f"{compute}/os-quota-sets/{project}"),
                  tempest("quotas", version, "get_quota_set"))["quota_set"]
    assert ("floating_ips" in quota) == (minor < 36)
    assert ("injected_files" in quota) == (minor < 57)
    check(call("GET", f"{compute}/os-quota-sets/{project}/detail"),
          tempest("quotas", version, "get_quota_set_details"))
    check(call("GET", f"{compute}/os-quota-sets/{project}/defaults"),
          tempest("quotas", version, "get_quota_set"))


@pytest.mark.parametrize("version", COMPUTE_VERSIONS)
def test_compute_update_body(users, booted, version):
    """``openstack server set --name/--description``: PUT's answer at ``version``."""
    call = Client(users["demo"], version)
    server_id, _request_id = booted[version]
    body = {"server": {"name": f"schema-{version}"}}
    if int(version.split(".")[1]) >= 19:
        body["server"]["description"] = f"set at {version}"
    updated = check(call("PUT", f"{users['demo'].compute}/servers/{server_id}", json=body),
                    tempest("servers", version, "update_server"))["server"]
    if "description" in body["server"]:
        assert updated["description"] == f"set at {version}"
        shown = call("GET", f"{users['demo'].compute}/servers/{server_id}").json()["server"]
        assert shown["description"] == f"set at {version}"


@pytest.mark.parametrize("version", ["2.1", "2.53", "2.61"])
def test_admin_view_bodies(users, booted, version):
    """Hypervisors, services, availability zones and usage at ``version`` (issue 12):
    integer ids below 2.53, uuids from it; the booted servers on the hypervisors."""
    call = Client(users["admin"], version)
    compute = users["admin"].compute
    minor = int(version.split(".")[1])
    listed = check(call("GET", f"{compute}/os-hypervisors"),
                   tempest("hypervisors", version, "list_search_hypervisors"))["hypervisors"]
    assert isinstance(listed[0]["id"], str if minor >= 53 else int)
    detail = check(call("GET", f"{compute}/os-hypervisors/detail"),
                   tempest("hypervisors", version, "list_hypervisors_detail"))["hypervisors"]
    assert sum(h["running_vms"] for h in detail) >= len(booted)
    check(call("GET", f"{compute}/os-hypervisors/{listed[0]['id']}"),
          tempest("hypervisors", version, "get_hypervisor"))
    check(call("GET", f"{compute}/os-hypervisors/statistics"),
          tempest("hypervisors", version, "get_hypervisor_statistics"))
    if minor >= 53:
        check(call("GET", f"{compute}/os-hypervisors?with_servers=true"),
              tempest("hypervisors", version, "list_search_hypervisors"))
    else:
        check(call("GET", f"{compute}/os-hypervisors/compute/search"),
              tempest("hypervisors", version, "list_search_hypervisors"))
        check(call("GET", f"{compute}/os-hypervisors/compute/servers"),
              tempest("hypervisors", version, "get_hypervisors_servers"))
    services = check(call("GET", f"{compute}/os-services"),
                     tempest("services", version, "list_services"))["services"]
    assert {"nova-compute", "nova-scheduler", "nova-conductor"} <= \
        {s["binary"] for s in services}
    compute_service = [s for s in services if s["binary"] == "nova-compute"][0]
    if minor >= 53:
        check(call("PUT", f"{compute}/os-services/{compute_service['id']}",
                   json={"status": "enabled"}),
              tempest("services", version, "update_service"))
    else:
        check(call("PUT", f"{compute}/os-services/enable",
                   json={"host": compute_service["host"], "binary": "nova-compute"}),
              tempest("services", version, "enable_disable_service"))
    check(call("GET", f"{compute}/os-availability-zone"),
          tempest("availability_zone", version, "list_availability_zone_list"))
    check(call("GET", f"{compute}/os-availability-zone/detail"),
          tempest("availability_zone", version, "list_availability_zone_list_detail"))
    usages = check(call("GET", f"{compute}/os-simple-tenant-usage?detailed=1"),
                   tempest("tenant_usages", version, "list_tenant_usage"))["tenant_usages"]
    assert usages and usages[0]["total_hours"] > 0
    check(call("GET", f"{compute}/os-simple-tenant-usage/{users['demo'].project_id}"),
          tempest("tenant_usages", version, "get_tenant_usage"))


@pytest.mark.parametrize("version", ["2.1", "2.55", "2.61"])
def test_flavor_management_bodies(users, version):
    """An admin's flavor create, update (2.55), extra spec writes, access and delete."""
    call = Client(users["admin"], version)
    flavors = f"{users['admin'].compute}/flavors"
    minor = int(version.split(".")[1])
    body = {"flavor": {"name": f"schema-{version}", "ram": 64, "vcpus": 1, "disk": 1,
                       "os-flavor-access:is_public": False}}
    if minor >= 55:
        body["flavor"]["description"] = f"made at {version}"
    flavor = check(call("POST", flavors, json=body),
                   tempest("flavors", version, "create_update_get_flavor_details"))["flavor"]
    url = f"{flavors}/{flavor['id']}"
    try:
        assert ("description" in flavor) == (minor >= 55)
        assert ("extra_specs" in flavor) == (minor >= 61)
        if minor >= 55:
            updated = check(call("PUT", url, json={"flavor": {"description": "changed"}}),
                            tempest("flavors", version, "create_update_get_flavor_details"))
            assert updated["flavor"]["description"] == "changed"
        check(call("POST", f"{url}/os-extra_specs",
                   json={"extra_specs": {"hw:cpu_policy": "shared"}}),
              tempest("flavors_extra_specs", version, "set_get_flavor_extra_specs"))
        check(call("PUT", f"{url}/os-extra_specs/hw:cpu_policy",
                   json={"hw:cpu_policy": "dedicated"}),
              tempest("flavors_extra_specs", version, "set_get_flavor_extra_specs_key"))
        check(call("GET", f"{url}/os-extra_specs"),
              tempest("flavors_extra_specs", version, "set_get_flavor_extra_specs"))
        check(call("DELETE", f"{url}/os-extra_specs/hw:cpu_policy"),
              tempest("flavors_extra_specs", version, "unset_flavor_extra_specs"))
        project = users["demo"].project_id
        access = tempest("flavors_access", version, "add_remove_list_flavor_access")
        added = check(call("POST", f"{url}/action",
                           json={"addTenantAccess": {"tenant": project}}), access)
        assert added["flavor_access"] == [{"flavor_id": flavor["id"], "tenant_id": project}]
        check(call("GET", f"{url}/os-flavor-access"), access)
        check(call("POST", f"{url}/action", json={"removeTenantAccess": {"tenant": project}}),
              access)
    finally:
        check(call("DELETE", url), tempest("flavors", version, "delete_flavor"))


@pytest.mark.parametrize("version, tags", [("2.1", None), ("2.19", None), ("2.37", None),
                                           ("2.52", ["t"])])
def test_create_schema_follows_the_version(shared_cloud, users, version, tags):
    """Request schemas too: ``description`` from 2.19, ``networks`` required from 2.37,
    ``tags`` from 2.52; a body a version does not know is a 400."""
    call = Client(users["demo"], version)
    minor = int(version.split(".")[1])
    server = {"name": "refused", "flavorRef": "42", "imageRef": shared_cloud.cirros["id"],
              "description": "d", "bogus": 1}
    response = call("POST", f"{users['demo'].compute}/servers", json={"server": server})
    assert response.status_code == 400
    if minor < 19:
        assert "description" in response.json()["badRequest"]["message"]
    if minor >= 37:
        del server["bogus"]
        response = call("POST", f"{users['demo'].compute}/servers", json={"server": server})
        assert "'networks' is a required property" in response.json()["badRequest"]["message"]
    no_tags = call("POST", f"{users['demo'].compute}/servers", json={"server": {
        "name": "x", "flavorRef": "42", "networks": "none", "tags": ["t"]}})
    assert no_tags.status_code == 400
    if minor < 52:
        assert "tags" in no_tags.json()["badRequest"]["message"]


def test_device_tags_are_refused_not_ignored(shared_cloud, users):
    call = Client(users["demo"], "2.61")
    net = private_network(users["demo"])
    response = call("POST", f"{users['demo'].compute}/servers", json={"server": {
        "name": "tagged", "flavorRef": "42", "imageRef": shared_cloud.cirros["id"],
        "networks": [{"uuid": net, "tag": "nic1"}]}})
    assert response.status_code == 400
    assert "novalab does not implement" in response.json()["badRequest"]["message"]


@pytest.mark.parametrize("version", VOLUME_VERSIONS)
@pytest.mark.parametrize("user", ["demo", "admin"])
def test_volume_bodies(users, version, user):
    """Volumes (create, show, list, detail) at ``version``, against Tempest's schemas."""
    volumes = importlib.import_module(f"{VOLUME}.volumes")
    session = users[user]
    call = Client(session, volume_version=version)
    base = session.client.endpoint("volumev3")
    created = check(call("POST", f"{base}/volumes",
                         json={"volume": {"size": 1, "name": f"schema-{version}"}}),
                    volumes.create_volume)["volume"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        shown = check(call("GET", f"{base}/volumes/{created['id']}"),
                      volumes.show_volume)["volume"]
        if shown["status"] in ("available", "error"):
            break
        time.sleep(0.1)
    assert shown["status"] == "available"
    check(call("GET", f"{base}/volumes"), volumes.list_volumes_no_detail)
    check(call("GET", f"{base}/volumes/detail"), volumes.list_volumes_with_detail)
    minor = int(version.split(".")[1])
    # Tempest's one schema below 3.61 leaves these optional; each version has or lacks them.
    assert ("group_id" in shown) == (minor >= 13)
    assert ("provider_id" in shown) == (minor >= 21 and user == "admin")
    assert "os-vol-tenant-attr:tenant_id" in shown  # readers of the project, and admins
    assert ("os-vol-host-attr:host" in shown) == (user == "admin")
    assert ("os-vol-mig-status-attr:migstat" in shown) == (user == "admin")
    assert call("DELETE", f"{base}/volumes/{created['id']}").status_code == 202


def test_volume_versions(users):
    versions = importlib.import_module(f"{VOLUME}.versions")
    session = users["demo"]
    base = session.client.endpoint("volumev3").split("/v3/", 1)[0]
    check(session.request("GET", base + "/"), versions.list_versions)


def test_identity_bodies(shared_cloud):
    import httpx

    with httpx.Client(timeout=30) as http:
        body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": "demo", "domain": {"id": "default"},
            "password": PERSONA_PASSWORD}}},
            "scope": {"project": {"name": "demo", "domain": {"id": "default"}}}}}
        response = http.post(f"{shared_cloud.identity_url}/auth/tokens", json=body)
        assert response.status_code == 201
        validate(response.json(), identity.token)
        assert {s["type"] for s in response.json()["token"]["catalog"]} >= {
            "identity", "compute", "image", "network", "volumev3"}
        validate(http.get(shared_cloud.identity_url).json(), identity.version)


def test_network_bodies(users, booted):
    session = users["demo"]
    url = session.client.endpoint("network") + "/v2.0"
    net = private_network(session)
    validate(session.request("GET", f"{url}/networks").json(),
             network.many("networks", network.network))
    validate(session.request("GET", f"{url}/networks/{net}").json(),
             network.one("network", network.network))
    validate(session.request("GET", f"{url}/subnets").json(),
             network.many("subnets", network.subnet))
    ports = session.request("GET", f"{url}/ports?device_id={booted['2.61'][0]}").json()
    assert ports["ports"]
    validate(ports, network.many("ports", network.port))
    validate(session.request("GET", f"{url}/ports/{ports['ports'][0]['id']}").json(),
             network.one("port", network.port))
    groups = session.request("GET", f"{url}/security-groups").json()
    validate(groups, network.many("security_groups", network.security_group))
    default = groups["security_groups"][0]
    validate(session.request("GET", f"{url}/security-groups/{default['id']}").json(),
             network.one("security_group", network.security_group))
    validate(session.request("GET", f"{url}/security-group-rules").json(),
             network.many("security_group_rules", network.security_group_rule))
    rule = default["security_group_rules"][0]["id"]
    validate(session.request("GET", f"{url}/security-group-rules/{rule}").json(),
             network.one("security_group_rule", network.security_group_rule))
    # Nova's relay of a server's groups, against Tempest's schema.
    server = booted["2.61"][0]
    check(Client(session)("GET", f"{session.compute}/servers/{server}/os-security-groups"),
          tempest("security_groups", "2.1", "list_security_groups"))
