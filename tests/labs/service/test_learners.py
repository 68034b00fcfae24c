"""A class's learners (`POST/GET/DELETE /v1/learners`): each a project, a user and a
network of their own, with quotas that keep one from starving the others; only an
admin (the teacher) manages them, and removing one leaves nothing behind."""

from __future__ import annotations

import ipaddress

import httpx
import pytest
from conftest import make_cloud
from opentelemetry.trace import NoOpTracer

from novalab.labs.client import LabService
from novalab.labs.service import operator
from novalab.labs.service.build import lab_service
from novalab.reference.deploy.boot import BootRequest, client_boot
from novalab.reference.deploy.client import CloudClient
from novalab.reference.neutron import constants


@pytest.fixture(scope="module")
def cloud(tmp_path_factory):
    with make_cloud(tmp_path_factory.mktemp("learners")) as running:
        lab_service(running.wiring, running.keystone)
        yield running
    running.telemetry.shutdown()


class Api:
    """One user's token on the cloud, and the calls the tests make with it."""

    def __init__(self, cloud, user: str, password: str, project: str):
        self.http = httpx.Client(timeout=60)
        self.client = CloudClient(cloud.identity_url, self.http)
        self.client.authenticate(user, password, project)
        self.project_id = self.client.project_id
        self.labs = self.client.endpoint("lab")
        self.neutron = f"{self.client.endpoint('network')}/v2.0"
        self.nova = self.client.endpoint("compute")

    def __call__(self, method: str, url: str, **kwargs) -> httpx.Response:
        headers = {"X-Auth-Token": self.client.token, **kwargs.pop("headers", {})}
        return self.http.request(method, url, headers=headers, **kwargs)

    def add(self, name: str, **quotas) -> dict:
        body = {"learner": {"name": name, **({"quotas": quotas} if quotas else {})}}
        answer = self("POST", f"{self.labs}/learners", json=body)
        assert answer.status_code == 201, answer.text
        return answer.json()["learner"]


@pytest.fixture(scope="module")
def admin(cloud):
    api = Api(cloud, "admin", cloud.config.credentials.admin, "admin")
    yield api
    api.http.close()


@pytest.fixture(scope="module")
def ana(admin):
    return admin.add("ana")


@pytest.fixture(scope="module")
def bob(admin):
    return admin.add("bob")


def _as(cloud, learner: dict) -> Api:
    return Api(cloud, learner["name"], learner["password"], learner["project"])


def _boot(cloud, learner: dict, name: str, volume_size=None) -> dict:
    request = BootRequest(name=name, username=learner["name"], project=learner["project"],
                          volume_size=volume_size)
    server, _, _ = client_boot(NoOpTracer(), None, cloud.identity_url, learner["password"],
                               request)
    cloud.wait_idle()
    return server


def _address(server: dict) -> ipaddress.IPv4Address:
    return ipaddress.ip_address(next(iter(server["addresses"].values()))[0]["addr"])


def test_learners_get_ranges_of_their_own_shaped_as_demos(admin, ana, bob):
    ranges = [ipaddress.ip_network(c) for c in (ana["cidr"], bob["cidr"], "10.0.0.0/24",
                                                "10.0.1.0/24")]
    assert not any(a.overlaps(b) for i, a in enumerate(ranges) for b in ranges[i + 1:])
    assert ana["project"] == "class-ana" and ana["network"] == "private"
    for learner in (ana, bob):
        network = admin("GET", f"{admin.neutron}/networks/{learner['network_id']}").json()
        network = network["network"]
        assert network["project_id"] == learner["project_id"] and not network["shared"]
        subnet = admin("GET", f"{admin.neutron}/subnets",
                       params={"network_id": network["id"]}).json()["subnets"]
        assert [(s["cidr"], s["gateway_ip"], s["enable_dhcp"], s["name"]) for s in subnet] == [
            (learner["cidr"], str(next(ipaddress.ip_network(learner["cidr"]).hosts())), True,
             "private-subnet")]
        dhcp = admin("GET", f"{admin.neutron}/ports", params={
            "network_id": network["id"], "device_owner": constants.DEVICE_OWNER_DHCP}).json()
        assert [(p["device_id"], p["project_id"]) for p in dhcp["ports"]] == [
            (constants.DEVICE_ID_RESERVED_DHCP_PORT, learner["project_id"])]
    listed = admin("GET", f"{admin.labs}/learners").json()["learners"]
    assert {(x["name"], x["cidr"]) for x in listed} >= {("ana", ana["cidr"]),
                                                        ("bob", bob["cidr"])}
    assert not any("password" in x for x in listed)


def test_a_learner_boots_on_their_own_network_and_reaches_no_one_elses(cloud, ana, bob):
    server = _boot(cloud, ana, "ana-vm")
    assert server["status"] == "ACTIVE", server.get("fault")
    assert _address(server) in ipaddress.ip_network(ana["cidr"])
    as_bob = _as(cloud, bob)
    try:
        assert as_bob("GET", f"{as_bob.nova}/servers/{server['id']}").status_code == 404
        assert as_bob("GET", f"{as_bob.neutron}/networks/{ana['network_id']}").status_code \
            == 404
        assert ana["network_id"] not in {n["id"] for n in as_bob(
            "GET", f"{as_bob.neutron}/networks").json()["networks"]}
        onto_anas = as_bob("POST", f"{as_bob.neutron}/ports", json={"port": {
            "network_id": ana["network_id"]}})
        assert onto_anas.status_code == 404, onto_anas.text
    finally:
        as_bob.http.close()


def test_one_learner_out_of_ports_leaves_the_others_booting(cloud, admin, bob):
    greedy = admin.add("cara", port=4)
    as_cara = _as(cloud, greedy)
    try:
        made = []
        while len(made) < 10:
            answer = as_cara("POST", f"{as_cara.neutron}/ports", json={"port": {
                "network_id": greedy["network_id"]}})
            if answer.status_code != 201:
                break
            made.append(answer.json()["port"]["id"])
        assert answer.status_code == 409 and "port" in answer.text
        assert len(made) == 3  # the DHCP port is the fourth
    finally:
        as_cara.http.close()
    server = _boot(cloud, bob, "bob-vm")
    assert server["status"] == "ACTIVE", server.get("fault")


@pytest.mark.parametrize(("method", "path", "body"), [
    ("POST", "/learners", {"learner": {"name": "mallory"}}),
    ("GET", "/learners", None),
    ("DELETE", "/learners/ana", None),
])
def test_only_an_admin_manages_learners(cloud, admin, ana, method, path, body):
    for user, password, project in (("demo", "novalab", "demo"),
                                    ("ana", ana["password"], ana["project"])):
        api = Api(cloud, user, password, project)
        answer = api(method, f"{api.labs}{path}", json=body)
        api.http.close()
        assert answer.status_code == 403, answer.text
        assert answer.json()["error"]["title"] == "Forbidden"
    assert "ana" in {x["name"] for x in admin("GET", f"{admin.labs}/learners").json()[
        "learners"]}


@pytest.mark.parametrize(("body", "status"), [
    ({"learner": {"name": "Ana"}}, 400),
    ({"learner": {"name": "a" * 33}}, 400),
    ({"learner": {"name": "../x"}}, 400),
    ({"learner": {"name": "eve", "password": "mine"}}, 400),
    ({"learner": {"name": "eve", "quotas": {"port": 253}}}, 400),
    ({"learner": {"name": "eve", "quotas": {"instances": -1}}}, 400),
    ({"learner": {"name": "eve", "quotas": {"floating_ips": 1}}}, 400),
    ({"learner": {"name": "nova"}}, 409),
    ({"learner": {"name": "demo"}}, 409),
    ({"learner": {"name": "ana"}}, 409),
])
def test_bad_or_taken_names_are_refused_clearly(admin, ana, body, status):
    answer = admin("POST", f"{admin.labs}/learners", json=body)
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert error["code"] == status and error["message"]
    if status == 409:
        assert body["learner"]["name"] in error["message"]


def test_removing_a_learner_leaves_nothing_behind(cloud, admin):
    dan = admin.add("dan", gigabytes=3)
    as_dan = _as(cloud, dan)
    try:
        assert _boot(cloud, dan, "dan-vm", volume_size=1)["status"] == "ACTIVE"
        keypair = as_dan("POST", f"{as_dan.nova}/os-keypairs", json={"keypair": {
            "name": "dan-key"}})
        assert keypair.status_code == 200, keypair.text
        image = as_dan("POST", f"{as_dan.client.endpoint('image')}/v2/images", json={
            "name": "dan-image", "disk_format": "raw", "container_format": "bare"})
        assert image.status_code == 201, image.text
        volume_api = as_dan.client.endpoint("volumev3")
        assert as_dan("POST", f"{volume_api}/volumes", json={"volume": {
            "size": 1, "name": "dan-vol"}}).status_code == 202
        lab = LabService(cloud.identity_url, "dan", dan["password"], dan["project"])
        lab.start("02-the-api", cloud.config.state_dir / "dan-work")
        lab.close()
    finally:
        as_dan.http.close()
    answer = admin("DELETE", f"{admin.labs}/learners/dan")
    assert answer.status_code == 200, answer.text
    removed = answer.json()["removed"]
    assert removed["servers"] == 1 and removed["key_pairs"] == 1 and removed["images"] == 1
    assert removed["volumes"] >= 1 and removed["attempts_ended"] == 1

    pid = dan["project_id"]
    for kind in ("networks", "subnets", "ports"):
        assert admin("GET", f"{admin.neutron}/{kind}", params={"project_id": pid}).json()[
            kind] == []
    # unfiltered: a list naming the project would make its default group anew
    groups = admin("GET", f"{admin.neutron}/security-groups").json()["security_groups"]
    assert pid not in {g["project_id"] for g in groups}
    servers = admin("GET", f"{admin.nova}/servers/detail", params={"all_tenants": "1"})
    assert pid not in {s["tenant_id"] for s in servers.json()["servers"]}
    volumes = admin("GET", f"{admin.client.endpoint('volumev3')}/volumes/detail",
                    params={"all_tenants": "1"}).json()["volumes"]
    assert pid not in {v["os-vol-tenant-attr:tenant_id"] for v in volumes}
    images = admin("GET", f"{admin.client.endpoint('image')}/v2/images",
                   params={"visibility": "all"}).json()["images"]
    assert pid not in {i["owner"] for i in images}
    keypairs = admin("GET", f"{admin.nova}/os-keypairs", params={"user_id": dan["user_id"]},
                     headers={"OpenStack-API-Version": "compute 2.10"}).json()["keypairs"]
    assert keypairs == []
    quota = admin("GET", f"{admin.nova}/os-quota-sets/{pid}").json()["quota_set"]
    assert quota["instances"] == 10  # its row is gone: the default again
    identity = admin.client.auth_url
    assert admin("GET", f"{identity}/projects/{pid}").status_code == 404
    assert admin("GET", f"{identity}/users/{dan['user_id']}").status_code == 404
    assert "dan" not in {x["name"] for x in admin("GET", f"{admin.labs}/learners").json()[
        "learners"]}
    assert admin("DELETE", f"{admin.labs}/learners/dan").status_code == 404
    # the name is free again, with a range of its own
    again = admin.add("dan")
    assert again["user_id"] != dan["user_id"]


def test_an_add_that_fails_part_way_leaves_nothing(admin, monkeypatch):
    monkeypatch.setattr(operator, "POOL", ipaddress.ip_network("10.0.0.0/24"))  # demo's
    answer = admin("POST", f"{admin.labs}/learners", json={"learner": {"name": "fay"}})
    assert answer.status_code == 409, answer.text
    assert "no address range is left" in answer.json()["error"]["message"]
    identity = admin.client.auth_url
    assert admin("GET", f"{identity}/users", params={"name": "fay"}).json()["users"] == []
    assert admin("GET", f"{identity}/projects", params={"name": "class-fay"}).json()[
        "projects"] == []
