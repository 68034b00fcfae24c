"""A class's learners, made and removed as an operator's script would: through the APIs.

A learner is what an operator of a shared cloud gives each student, with the
cloud's admin credentials and the ``openstack`` CLI's calls:

* keystone: project ``class-NAME``, user ``NAME`` (a generated password, its
  default project that one) and the ``member`` role on it (``openstack project
  create``, ``user create``, ``role add``);
* neutron: a network of the project's own, named ``private`` as demo's is (so
  the guides' ``--network private`` means each learner's own), its
  ``private-subnet`` on a /24 of :data:`POOL` that overlaps no subnet of the
  cloud, DHCP on and its DHCP port reserved, as ``reference/neutron/seed.py``
  makes demo's;
* quotas (nova's ``os-quota-sets``, neutron's ``quotas``, cinder's
  ``os-quota-sets``) that keep one project from taking what the others share:
  :data:`DEFAULT_QUOTAS` (docs/decisions.md, "Learners", says why each number).

Removing a learner is ``openstack project purge`` done in order: servers first
(and waited for, their ports and volumes go with them), snapshots and volumes,
ports, subnets, networks, security groups, images, the user's key pairs, the
quota rows; then the user and the project.
"""

from __future__ import annotations

import ipaddress
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

import httpx

from novalab.reference.common import exception
from novalab.reference.deploy.client import ClientError, CloudClient
from novalab.reference.deploy.seed import USERS
from novalab.reference.neutron import constants
from novalab.tracing.http import http_client

PROJECT_PREFIX = "class-"
DESCRIPTION = "novalab class: learner {name}"
NETWORK = "private"
ROLE = "member"
# What a learner's name may be: a keystone name and a portable OS user name
# (useradd's default NAME_REGEX), so the class's OS accounts can match it.
NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
# The cloud's own users and projects: never a learner's name.
RESERVED = frozenset(USERS) | {"admin", "demo", "alt_demo", "service"}

# The learners' address ranges: /24s of a /12 no seeded network uses (demo's and
# alt_demo's are 10.0.0.0/24 and 10.0.1.0/24): 4096 learners' worth.
POOL = ipaddress.ip_network("10.64.0.0/12")
PREFIX = 24

# Per learner, by upstream's quota names. The course's largest lab at once is lab
# 04 (an m1.small and three m1.nano: 4 instances, 4 vCPUs, 2240 MiB) and lab 10
# (five boots, some of them ERROR, which count until deleted).
COMPUTE_QUOTAS = {"instances": 5, "cores": 5, "ram": 2560, "key_pairs": 10}
# The subnet's own /24 holds 253 addresses; 25 ports is 5 servers' and the DHCP
# port with room for lab 06's own ports, and far below the subnet's size.
NETWORK_QUOTAS = {"network": 2, "subnet": 2, "port": 25, "security_group": 5,
                  "security_group_rule": 40}
VOLUME_QUOTAS = {"volumes": 5, "gigabytes": 10, "snapshots": 5}
DEFAULT_QUOTAS = {**COMPUTE_QUOTAS, **NETWORK_QUOTAS, **VOLUME_QUOTAS}
# The most any one learner may be given (an override above it is a 400).
MAX_QUOTAS = {"instances": 50, "cores": 100, "ram": 65536, "key_pairs": 100,
              "network": 10, "subnet": 10, "port": 200, "security_group": 50,
              "security_group_rule": 500, "volumes": 50, "gigabytes": 500, "snapshots": 50}

SERVERS_GONE_TIMEOUT = 120.0
VOLUMES_GONE_TIMEOUT = 60.0
# The statuses Cinder deletes a volume in (volume/api.py's ``delete``).
DELETABLE = frozenset({"available", "error", "error_restoring", "error_extending",
                       "error_managing"})
MICROVERSION = {"OpenStack-API-Version": "compute 2.10"}  # key pairs by user_id


class LearnerTaken(exception.Conflict):
    msg_fmt = "%(reason)s"


class LearnerNotFound(exception.NotFound):
    msg_fmt = "No learner named %(name)s in this class."


class NoAddressRange(exception.Conflict):
    msg_fmt = "Every /%(prefix)s of %(pool)s is in use: no address range is left."


def free_range(taken: Iterable[str], pool=POOL, prefix: int = PREFIX) -> str:
    """The first /``prefix`` of ``pool`` that overlaps none of the ``taken`` ranges."""
    used = [ipaddress.ip_network(cidr, strict=False) for cidr in taken]
    used = [net for net in used if net.version == pool.version and net.overlaps(pool)]
    for candidate in pool.subnets(new_prefix=prefix):
        if not any(candidate.overlaps(net) for net in used):
            return str(candidate)
    raise NoAddressRange(prefix=prefix, pool=pool)


def project_name(name: str) -> str:
    return f"{PROJECT_PREFIX}{name}"


class _Admin:
    """One admin session: a token and the catalog's endpoints."""

    def __init__(self, http: httpx.Client, client: CloudClient):
        self.http = http
        self.client = client
        self.keystone = client.auth_url
        self.nova = client.endpoint("compute")
        self.neutron = f"{client.endpoint('network')}/v2.0"
        self.glance = f"{client.endpoint('image')}/v2"
        self.cinder = client.catalog.get("volumev3")

    def call(self, method: str, url: str, ok=(200,), **kwargs) -> dict:
        headers = {"X-Auth-Token": self.client.token, **kwargs.pop("headers", {})}
        response = self.http.request(method, url, headers=headers, **kwargs)
        if response.status_code not in ok:
            raise ClientError(response.status_code,
                              f"{method} {url.split('?')[0]}: {response.text[:300]}")
        return response.json() if response.content else {}

    def gone(self, url: str, **kwargs) -> bool:
        """DELETE ``url``; a 404 means someone (a cascade) was first."""
        try:
            self.call("DELETE", url, ok=(200, 202, 204), **kwargs)
        except ClientError as exc:
            if exc.status != 404:
                raise
        return True


class ClassOperator:
    """Adds, lists and removes learners on the cloud of ``auth_url``, as its admin."""

    def __init__(self, auth_url: str, admin_password: Callable[[], str],
                 timeout: float = 60.0):
        self.auth_url = auth_url.rstrip("/")
        self.admin_password = admin_password
        self.timeout = timeout
        # One add at a time: two must not draw the same free range.
        self.adding = threading.Lock()

    @contextmanager
    def _admin(self) -> Iterator[_Admin]:
        with http_client(timeout=self.timeout) as http:
            client = CloudClient(self.auth_url, http)
            client.authenticate("admin", self.admin_password(), "admin")
            yield _Admin(http, client)

    # Adding -------------------------------------------------------------------------------

    def add(self, name: str, password: str, quotas: dict[str, int]) -> dict:
        """Learner ``name`` with ``password`` and ``quotas`` (over the defaults); what
        was made. Any failure removes what was made before it."""
        if name in RESERVED:
            raise LearnerTaken(reason=f"{name} is one of the cloud's own users or projects; "
                                      "choose another name")
        limits = {**DEFAULT_QUOTAS, **quotas}
        with self.adding, self._admin() as admin:
            if admin.call("GET", f"{admin.keystone}/users", params={"name": name})["users"] \
                    or self._project(admin, name, any_description=True):
                raise LearnerTaken(reason=f"a user or project named {name} already exists: "
                                          f"`novalab class remove {name}` first if it is a "
                                          "learner to start over")
            project = admin.call("POST", f"{admin.keystone}/projects", ok=(201,), json={
                "project": {"name": project_name(name), "domain_id": "default",
                            "description": DESCRIPTION.format(name=name)}})["project"]
            try:
                return self._furnish(admin, name, password, project, limits)
            except Exception:
                self._purge(admin, name, project)
                raise

    def _furnish(self, admin: _Admin, name: str, password: str, project: dict,
                 limits: dict[str, int]) -> dict:
        user = admin.call("POST", f"{admin.keystone}/users", ok=(201,), json={"user": {
            "name": name, "password": password, "domain_id": "default",
            "default_project_id": project["id"]}})["user"]
        role = admin.call("GET", f"{admin.keystone}/roles", params={"name": ROLE})["roles"][0]
        admin.call("PUT", f"{admin.keystone}/projects/{project['id']}/users/{user['id']}"
                          f"/roles/{role['id']}", ok=(204,))
        self._set_quotas(admin, project["id"], limits)
        network = self._network(admin, project["id"])
        return {"name": name, "user_id": user["id"], "project": project["name"],
                "project_id": project["id"], **network, "quotas": limits}

    @staticmethod
    def _set_quotas(admin: _Admin, project_id: str, limits: dict[str, int]) -> None:
        pick = lambda names: {k: limits[k] for k in names}  # noqa: E731
        admin.call("PUT", f"{admin.nova}/os-quota-sets/{project_id}",
                   json={"quota_set": pick(COMPUTE_QUOTAS)})
        admin.call("PUT", f"{admin.neutron}/quotas/{project_id}",
                   json={"quota": pick(NETWORK_QUOTAS)})
        if admin.cinder:
            admin.call("PUT", f"{admin.cinder}/os-quota-sets/{project_id}",
                       json={"quota_set": pick(VOLUME_QUOTAS)})

    def _network(self, admin: _Admin, project_id: str) -> dict:
        """``private`` of the project, as seed_project_network makes demo's: not shared,
        one subnet (gateway its first address, DHCP on), its DHCP port reserved."""
        subnets = admin.call("GET", f"{admin.neutron}/subnets")["subnets"]
        cidr = free_range((s["cidr"] for s in subnets), POOL)
        network = admin.call("POST", f"{admin.neutron}/networks", ok=(201,), json={"network": {
            "name": NETWORK, "project_id": project_id, "shared": False}})["network"]
        gateway = next(ipaddress.ip_network(cidr).hosts())
        subnet = admin.call("POST", f"{admin.neutron}/subnets", ok=(201,), json={"subnet": {
            "name": f"{NETWORK}-subnet", "network_id": network["id"], "cidr": cidr,
            "gateway_ip": str(gateway), "enable_dhcp": True, "ip_version": 4,
            "project_id": project_id}})["subnet"]
        admin.call("POST", f"{admin.neutron}/ports", ok=(201,), json={"port": {
            "network_id": network["id"], "project_id": project_id,
            "device_owner": constants.DEVICE_OWNER_DHCP,
            "device_id": constants.DEVICE_ID_RESERVED_DHCP_PORT,
            "fixed_ips": [{"subnet_id": subnet["id"]}]}})
        return {"network": network["name"], "network_id": network["id"], "cidr": cidr}

    # Listing ------------------------------------------------------------------------------

    @staticmethod
    def _project(admin: _Admin, name: str, any_description: bool = False) -> dict | None:
        found = admin.call("GET", f"{admin.keystone}/projects",
                           params={"name": project_name(name)})["projects"]
        for project in found:
            if any_description or project.get("description") == DESCRIPTION.format(name=name):
                return project
        return None

    def learners(self) -> list[dict]:
        """Every learner, by name: user, project, network and range (no password)."""
        with self._admin() as admin:
            projects = admin.call("GET", f"{admin.keystone}/projects")["projects"]
            networks = {n["project_id"]: n for n in
                        admin.call("GET", f"{admin.neutron}/networks",
                                   params={"name": NETWORK})["networks"]}
            subnets = {s["network_id"]: s["cidr"] for s in
                       admin.call("GET", f"{admin.neutron}/subnets")["subnets"]}
            users = {u["name"]: u for u in admin.call("GET", f"{admin.keystone}/users")["users"]}
            found = []
            for project in projects:
                name = project["name"].removeprefix(PROJECT_PREFIX)
                if project.get("description") != DESCRIPTION.format(name=name):
                    continue
                network = networks.get(project["id"]) or {}
                found.append({"name": name, "user_id": (users.get(name) or {}).get("id"),
                              "project": project["name"], "project_id": project["id"],
                              "network": network.get("name"), "network_id": network.get("id"),
                              "cidr": subnets.get(network.get("id"))})
            return sorted(found, key=lambda learner: learner["name"])

    # Removing -----------------------------------------------------------------------------

    def remove(self, name: str) -> dict:
        """Everything learner ``name``'s project and user own, then them; counts removed."""
        with self._admin() as admin:
            project = self._project(admin, name)
            if project is None:
                raise LearnerNotFound(name=name)
            return self._purge(admin, name, project)

    def _purge(self, admin: _Admin, name: str, project: dict) -> dict:
        pid = project["id"]
        users = admin.call("GET", f"{admin.keystone}/users", params={"name": name})["users"]
        user = users[0] if users else None
        removed = {"servers": self._servers(admin, pid)}
        removed.update(self._volumes(admin, pid))
        removed.update(self._network_resources(admin, pid))
        removed["images"] = self._images(admin, pid)
        removed["key_pairs"] = self._key_pairs(admin, user["id"]) if user else 0
        admin.gone(f"{admin.nova}/os-quota-sets/{pid}")
        admin.gone(f"{admin.neutron}/quotas/{pid}")
        if admin.cinder:
            admin.gone(f"{admin.cinder}/os-quota-sets/{pid}")
        if user:
            admin.gone(f"{admin.keystone}/users/{user['id']}")
        admin.gone(f"{admin.keystone}/projects/{pid}")
        return removed

    @staticmethod
    def _wait_gone(admin: _Admin, urls: list[str], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        pending = list(urls)
        while pending:
            pending = [u for u in pending if admin.http.get(
                u, headers={"X-Auth-Token": admin.client.token}).status_code != 404]
            if pending and time.monotonic() > deadline:
                raise exception.ServiceUnavailable(
                    f"{len(pending)} {what} still there after {timeout:.0f} s; remove the "
                    "learner again once they are gone")
            if pending:
                time.sleep(0.2)

    def _servers(self, admin: _Admin, pid: str) -> int:
        mine, marker = [], None
        while True:
            params = {"all_tenants": "1", "limit": "1000", **({"marker": marker} if marker else {})}
            page = admin.call("GET", f"{admin.nova}/servers/detail", params=params)["servers"]
            mine += [s["id"] for s in page if s["tenant_id"] == pid]
            if len(page) < 1000:
                break
            marker = page[-1]["id"]
        for server in mine:
            admin.gone(f"{admin.nova}/servers/{server}")
        self._wait_gone(admin, [f"{admin.nova}/servers/{s}" for s in mine],
                        SERVERS_GONE_TIMEOUT, "servers")
        return len(mine)

    def _volumes(self, admin: _Admin, pid: str) -> dict:
        if not admin.cinder:
            return {}
        snapshots = [s["id"] for s in admin.call(
            "GET", f"{admin.cinder}/snapshots/detail", params={"all_tenants": "1"})["snapshots"]
            if s.get("os-extended-snapshot-attributes:project_id") == pid]
        for snapshot in snapshots:
            admin.gone(f"{admin.cinder}/snapshots/{snapshot}")
        self._wait_gone(admin, [f"{admin.cinder}/snapshots/{s}" for s in snapshots],
                        VOLUMES_GONE_TIMEOUT, "snapshots")
        volumes = [v["id"] for v in admin.call(
            "GET", f"{admin.cinder}/volumes/detail", params={"all_tenants": "1"})["volumes"]
            if v.get("os-vol-tenant-attr:tenant_id") == pid]
        # Cinder deletes only a settled volume: one still being made, or detached from
        # a server just deleted, is waited for (its server's own may go by itself).
        pending = {f"{admin.cinder}/volumes/{v}" for v in volumes}
        deadline = time.monotonic() + VOLUMES_GONE_TIMEOUT
        while pending:
            for url in list(pending):
                shown = admin.http.get(url, headers={"X-Auth-Token": admin.client.token})
                if shown.status_code == 404:
                    pending.discard(url)
                elif shown.json()["volume"]["status"] in DELETABLE:
                    admin.gone(url)
            if pending and time.monotonic() > deadline:
                raise exception.ServiceUnavailable(
                    f"{len(pending)} volumes still there after {VOLUMES_GONE_TIMEOUT:.0f} s; "
                    "remove the learner again once they are gone")
            if pending:
                time.sleep(0.2)
        return {"snapshots": len(snapshots), "volumes": len(volumes)}

    @staticmethod
    def _network_resources(admin: _Admin, pid: str) -> dict:
        owned = lambda kind: admin.call(  # noqa: E731
            "GET", f"{admin.neutron}/{kind}", params={"project_id": pid})[kind]
        networks = owned("networks")
        ports = {p["id"] for p in owned("ports")}
        for network in networks:  # anyone's ports on the learner's networks go too
            ports |= {p["id"] for p in admin.call("GET", f"{admin.neutron}/ports", params={
                "network_id": network["id"]})["ports"]}
        for port in ports:
            admin.gone(f"{admin.neutron}/ports/{port}")
        subnets = owned("subnets")
        for subnet in subnets:
            admin.gone(f"{admin.neutron}/subnets/{subnet['id']}")
        for network in networks:
            admin.gone(f"{admin.neutron}/networks/{network['id']}")
        # Listed unfiltered: a list naming a project makes its default group first.
        groups = [group for group in admin.call("GET", f"{admin.neutron}/security-groups")[
            "security_groups"] if group["project_id"] == pid]
        for group in groups:
            admin.gone(f"{admin.neutron}/security-groups/{group['id']}")
        return {"ports": len(ports), "subnets": len(subnets), "networks": len(networks),
                "security_groups": len(groups)}

    @staticmethod
    def _images(admin: _Admin, pid: str) -> int:
        images = []
        for hidden in ("false", "true"):
            images += [i["id"] for i in admin.call("GET", f"{admin.glance}/images", params={
                "visibility": "all", "os_hidden": hidden})["images"] if i.get("owner") == pid]
        for image in images:
            admin.gone(f"{admin.glance}/images/{image}")
        return len(images)

    @staticmethod
    def _key_pairs(admin: _Admin, user_id: str) -> int:
        pairs = admin.call("GET", f"{admin.nova}/os-keypairs", params={"user_id": user_id},
                           headers=MICROVERSION)["keypairs"]
        for pair in pairs:
            admin.gone(f"{admin.nova}/os-keypairs/{pair['keypair']['name']}",
                       params={"user_id": user_id}, headers=MICROVERSION)
        return len(pairs)
