"""Honest refusals across the services (issue 12, item 3): what a client gets for a
path no route takes, a method a resource does not have, or a resource novalab leaves out.

Each service answers in its own fault body (Nova's ``{"itemNotFound": ...}``,
Neutron's ``{"NeutronError": ...}``, Keystone's and Glance's ``{"error": ...}``,
Placement's ``{"errors": [...]}``) with webob's "The resource could not be found.",
never Flask's "The requested URL was not found on the server", which reads the same
as "no such server". A real OpenStack resource that novalab leaves out says so and
points at README.md's "Left out, on purpose".
"""

from __future__ import annotations

import pytest

FLASK_404 = "The requested URL was not found on the server"


@pytest.fixture(scope="module")
def modern_cloud(tmp_path_factory):
    """The modern topology: placement has its own API there."""
    from tests.conftest import make_cloud

    with make_cloud(tmp_path_factory.mktemp("modern"), topology="modern") as running:
        yield running
    running.telemetry.shutdown()


@pytest.fixture
def demo(modern_cloud, login):
    return login(modern_cloud, "demo")


def fault_message(body: dict) -> str:
    """The message of any service's fault body."""
    if "errors" in body:                      # placement
        return body["errors"][0]["detail"]
    if "NeutronError" in body:
        return body["NeutronError"]["message"]
    (inner,) = body.values()                  # nova / cinder ({name: ...}), keystone / glance
    return inner["message"]


@pytest.mark.parametrize("service, path, shape", [
    ("compute", "/nosuch", "itemNotFound"),
    ("compute", "/servers/x/nosuch", "itemNotFound"),
    ("volumev3", "/nosuch", "itemNotFound"),
    ("image", "/v2/nosuch", "error"),
    ("network", "/v2.0/nosuch", "NeutronError"),
    ("identity", "/nosuch", "error"),
    ("placement", "/nosuch", "errors"),
])
def test_an_unknown_path_is_a_404_in_the_services_own_fault_body(
        modern_cloud, demo, service, path, shape):
    base = modern_cloud.urls["placement"] if service == "placement" \
        else demo.client.endpoint(service)
    response = demo.request("GET", base + path)
    assert response.status_code == 404
    body = response.json()
    assert list(body) == [shape]
    message = fault_message(body)
    assert FLASK_404 not in message
    assert "The resource could not be found." in message
    if shape == "itemNotFound":
        assert body[shape]["code"] == 404
    if shape == "error":
        assert body[shape]["title"] == "Not Found"


@pytest.mark.parametrize("service, path, named", [
    ("compute", "/os-server-groups/x", "Server groups"),
    ("compute", "/os-migrations", "Migrations"),
    ("compute", "/servers/x/migrations", "Migrations"),
    ("compute", "/servers/x/os-interface", "Port interfaces"),
    ("volumev3", "/backups/detail", "Volume backups"),
    ("network", "/v2.0/routers", "routers"),
    ("network", "/v2.0/floatingips", "floatingips"),
])
def test_a_left_out_resource_says_novalab_does_not_implement_it(demo, service, path, named):
    response = demo.request("GET", demo.client.endpoint(service) + path)
    assert response.status_code == 404
    message = fault_message(response.json())
    assert named in message
    assert "Left out, on purpose" in message and "README.md" in message


def test_a_wrong_method_is_a_405_in_novas_fault_body(demo):
    response = demo.request("PATCH", f"{demo.compute}/servers")
    assert response.status_code == 405
    assert response.json() == {"badMethod": {
        "code": 405, "message": "The method PATCH is not allowed for this resource."}}
    assert set(response.headers["Allow"].replace(" ", "").split(",")) >= {"GET", "POST"}


def test_a_resource_served_in_part_names_the_gap_for_the_rest(modern_cloud, login):
    """Host aggregates: the list is there (empty: novalab has none), making or reading
    one is left out, and says so."""
    admin = login(modern_cloud, "admin")
    listed = admin.request("GET", f"{admin.compute}/os-aggregates")
    assert (listed.status_code, listed.json()) == (200, {"aggregates": []})
    made = admin.request("POST", f"{admin.compute}/os-aggregates",
                         json={"aggregate": {"name": "a1"}})
    assert made.status_code == 405
    message = made.json()["badMethod"]["message"]
    assert message.startswith("The method POST is not allowed for this resource.")
    assert "Host aggregates" in message and "Left out, on purpose" in message
    shown = admin.request("GET", f"{admin.compute}/os-aggregates/1")
    assert shown.status_code == 404
    assert "Host aggregates" in shown.json()["itemNotFound"]["message"]


def test_a_wrong_method_is_a_405_in_keystones_and_neutrons_bodies(demo):
    response = demo.request("PATCH", demo.client.endpoint("identity") + "/auth/tokens")
    assert response.status_code == 405
    assert response.json()["error"]["title"] == "Method Not Allowed"
    response = demo.request("PATCH", demo.client.endpoint("network") + "/v2.0/networks")
    assert response.status_code == 405
    assert response.json()["NeutronError"]["type"] == "HTTPMethodNotAllowed"


def test_glance_answers_a_415_with_its_own_title(modern_cloud, demo):
    image = demo.request("POST", f"{demo.image}/v2/images",
                         json={"name": "x", "disk_format": "raw",
                               "container_format": "bare"}).json()
    response = demo.request("PUT", f"{demo.image}/v2/images/{image['id']}/file",
                            content=b"data", headers={"Content-Type": "text/plain"})
    assert response.status_code == 415
    assert response.json()["error"]["title"] == "Unsupported Media Type"


@pytest.fixture(scope="module")
def server(modern_cloud):
    """One ACTIVE server of demo's."""
    from tests.conftest import Session
    from tests.reference.nova.test_shelve import boot

    session = Session(modern_cloud, "demo", "demo")
    try:
        yield boot(session, modern_cloud, "refusals")
    finally:
        session.close()


def action(session, server_id, body, version=None):
    headers = {"OpenStack-API-Version": f"compute {version}"} if version else {}
    return session.request("POST", f"{session.compute}/servers/{server_id}/action",
                           json=body, headers=headers)


def remote_console(session, server_id, protocol, console_type, version="2.6"):
    return session.request("POST", f"{session.compute}/servers/{server_id}/remote-consoles",
                           json={"remote_console": {"protocol": protocol, "type": console_type}},
                           headers={"OpenStack-API-Version": f"compute {version}"})


@pytest.mark.parametrize("body, console_type", [
    ({"os-getVNCConsole": {"type": "novnc"}}, "novnc"),
    ({"os-getSPICEConsole": {"type": "spice-html5"}}, "spice-html5"),
    ({"os-getSerialConsole": {"type": "serial"}}, "serial"),
])
def test_console_url_actions_are_nova_400s_for_a_disabled_console(demo, server, body,
                                                                  console_type):
    """Nova with the console proxy disabled: ``ConsoleTypeUnavailable`` -> 400."""
    response = action(demo, server["id"], body)
    assert response.status_code == 400
    message = response.json()["badRequest"]["message"]
    assert message.startswith(f"Unavailable console type {console_type}.")
    assert "Left out, on purpose" in message
    # Removed from 2.6 on: the action is not there (a bare 404).
    response = action(demo, server["id"], body, version="2.6")
    assert response.status_code == 404
    assert response.json() == {"itemNotFound": {
        "code": 404, "message": "The resource could not be found."}}


def test_console_url_bodies_are_checked_and_others_servers_hidden(modern_cloud, demo, server,
                                                                  login):
    response = action(demo, server["id"], {"os-getVNCConsole": {"type": "spice"}})
    assert response.status_code == 400
    assert "Invalid input" in response.json()["badRequest"]["message"]
    other = login(modern_cloud, "alt_demo")
    assert action(other, server["id"], {"os-getVNCConsole": {"type": "novnc"}}
                  ).status_code == 404
    assert remote_console(other, server["id"], "vnc", "novnc").status_code == 404
    reader = login(modern_cloud, "reader", "demo")
    assert remote_console(reader, server["id"], "vnc", "novnc").status_code == 403


@pytest.mark.parametrize("protocol, console_type", [
    ("vnc", "novnc"), ("spice", "spice-html5"), ("serial", "serial"), ("rdp", "rdp-html5"),
])
def test_remote_consoles_are_nova_400s_for_a_disabled_console(demo, server, protocol,
                                                              console_type):
    response = remote_console(demo, server["id"], protocol, console_type)
    assert response.status_code == 400
    message = response.json()["badRequest"]["message"]
    shown = "rdp" if protocol == "rdp" else console_type
    assert message.startswith(f"Unavailable console type {shown}.")
    assert "README.md" in message


def test_remote_consoles_are_not_there_below_2_6_and_mks_not_below_2_8(demo, server):
    assert remote_console(demo, server["id"], "vnc", "novnc", version="2.5").status_code == 404
    assert remote_console(demo, server["id"], "mks", "webmks").status_code == 400
    response = remote_console(demo, server["id"], "mks", "webmks", version="2.8")
    assert response.status_code == 400
    assert "Unavailable console type webmks." in response.json()["badRequest"]["message"]


@pytest.mark.parametrize("body", [
    {"resize": {"flavorRef": "1"}},
    {"rebuild": {"imageRef": "x"}},
    {"migrate": None},
])
def test_left_out_actions_answer_novas_fault_body(demo, server, body):
    response = action(demo, server["id"], body)
    assert response.status_code == 400
    (name,) = body
    assert list(response.json()) == ["badRequest"]
    fault = response.json()["badRequest"]
    assert fault["code"] == 400
    assert fault["message"].startswith(f"There is no such action: {name}.")
    assert "Left out, on purpose" in fault["message"]


V2_37 = {"OpenStack-API-Version": "compute 2.37"}


def create(session, server: dict, headers=None):
    return session.request("POST", f"{session.compute}/servers", json={"server": server},
                           headers=headers or {})


def test_networks_none_boots_a_server_without_a_port(modern_cloud, demo):
    from tests.reference.nova.test_shelve import ports_of, wait_server

    response = create(demo, {"name": "no-net", "flavorRef": "42",
                             "imageRef": modern_cloud.cirros["id"], "networks": "none"},
                      V2_37)
    assert response.status_code == 202, response.text
    server_id = response.json()["server"]["id"]
    server = wait_server(demo, server_id, "ACTIVE")
    assert server["addresses"] == {}
    assert ports_of(demo, server_id) == []


def test_networks_are_required_from_2_37_and_checked_before_the_answer(modern_cloud, demo):
    base = {"name": "x", "flavorRef": "42", "imageRef": modern_cloud.cirros["id"]}
    assert create(demo, base, V2_37).status_code == 400
    response = create(demo, dict(base, networks=[
        {"uuid": "00000000-0000-4000-8000-000000000000"}]), V2_37)
    assert response.status_code == 400
    assert response.json()["badRequest"]["message"] == \
        "Network 00000000-0000-4000-8000-000000000000 could not be found."


def test_networks_auto_with_no_network_to_use_is_novas_400(modern_cloud, login):
    """No network the project can use (admin's project has none: each network is its
    project's own), and no auto-allocated topology in Neutron:
    ``UnableToAutoAllocateNetwork`` before the API answers, as upstream."""
    admin = login(modern_cloud, "admin")
    networks = admin.request("GET", admin.client.endpoint("network") + "/v2.0/networks"
                             ).json()["networks"]
    assert networks and all(n["project_id"] != admin.project_id and not n["shared"]
                            for n in networks)
    response = create(admin, {"name": "auto", "flavorRef": "42",
                              "imageRef": modern_cloud.cirros["id"], "networks": "auto"},
                      V2_37)
    assert response.status_code == 400, response.text
    message = response.json()["badRequest"]["message"]
    assert message.startswith("Unable to automatically allocate a network for project "
                              f"{admin.project_id}")
    assert "Left out, on purpose" in message
    assert "auto" not in {s["name"] for s in admin.request(
        "GET", f"{admin.compute}/servers").json()["servers"]}
