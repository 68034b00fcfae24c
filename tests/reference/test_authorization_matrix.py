"""Who may do what, over every resource and action of every service (issue 10, item 3).

The table below is upstream's default policies ("secure RBAC", 2023.x) written
as data: for each action, the status each persona gets.

- ``owner``: ``demo``, member of project ``demo``, whose resources these are;
- ``other``: ``alt_demo``, member of another project;
- ``reader``: ``reader``, with only the reader role on ``demo``;
- ``admin``: ``admin`` of project ``admin``;
- ``unscoped``: ``demo``'s token with no project (``POST /v3/auth/tokens``
  without ``scope``): it carries no roles;
- ``service``: ``nova``, role ``service`` in project ``service``, what services
  use for the calls only they make.

Another project's resource is a 404 where upstream scopes the lookup to the
caller's project (Nova, Cinder, Glance, Neutron), and a 403 where the target is
named in the URL and checked by policy (quotas, keystone's projects and users).

The owner's resources are made once per module; an action that changes or
deletes one gets a fresh one per cell. One test per cell: a failing cell says
which persona got what, where, and what upstream answers.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import httpx
import pytest

from novalab.reference.deploy.embedded import CloudConfig, EmbeddedCloud
from novalab.tracing.setup import Telemetry

# Cinder's attachments and messages need a microversion (3.27, 3.3); Nova asks for 3.44.
CINDER_VERSION = "volume 3.44"
# Each service reads its own part of the header: placement's newest version here.
API_VERSIONS = f"{CINDER_VERSION}, placement 1.29"
PERSONAS = ("owner", "other", "reader", "admin", "unscoped", "service")
LOGINS = {"owner": ("demo", "demo"), "other": ("alt_demo", "alt_demo"),
          "reader": ("reader", "demo"), "admin": ("admin", "admin"),
          "unscoped": ("demo", None), "service": ("nova", "service")}

# -- expectation rows: persona -> status ---------------------------------------------------


def _row(owner, other, reader, admin, unscoped, service) -> dict[str, int]:
    return dict(owner=owner, other=other, reader=reader, admin=admin, unscoped=unscoped,
                service=service)


def READ(ok=200, service=404):          # noqa: N802 - a table's vocabulary
    """PROJECT_READER_OR_ADMIN on a resource found by a project-scoped lookup."""
    return _row(ok, 404, ok, ok, 404, service)


def WRITE(ok, service=404):             # noqa: N802
    """PROJECT_MEMBER_OR_ADMIN on a resource found by a project-scoped lookup."""
    return _row(ok, 404, 403, ok, 404, service)


def CREATE(ok, service=403):            # noqa: N802
    """PROJECT_MEMBER_OR_ADMIN, each in its own project."""
    return _row(ok, ok, 403, ok, 403, service)


def LIST(ok=200, unscoped=403, service=403):  # noqa: N802
    """PROJECT_READER_OR_ADMIN on the caller's own project's collection."""
    return _row(ok, ok, ok, ok, unscoped, service)


def NAMED_PROJECT_READ():               # noqa: N802
    """The owner's project named in the URL: readers of it and admins."""
    return _row(200, 403, 200, 200, 403, 403)


def ADMIN_ONLY(ok):                     # noqa: N802
    return _row(403, 403, 403, ok, 403, 403)


def CINDER(row: dict) -> dict:          # noqa: N802
    """Cinder's URL names a project; one that is not the token's is a 400 ("Malformed
    request url", cinder/api/openstack/wsgi.py) before any policy: so for unscoped."""
    return dict(row, unscoped=400)


@dataclass(frozen=True)
class Action:
    name: str              # service:resource:action, upstream's policy name where one fits
    service: str           # the catalog key of Wiring.urls
    method: str
    path: str              # placeholders: see Matrix.format
    expect: dict
    body: object = None    # a dict, or a callable(matrix, persona) -> dict
    fresh: str | None = None  # a resource made for this cell: {fresh} in the path
    content_type: str = "application/json"


def _cidr(matrix, persona):
    return f"10.{60 + PERSONAS.index(persona)}.{next(matrix.counter) % 250}.0/24"


ACTIONS = [
    # Nova (nova/policies/servers.py, instance_actions.py, server_external_events.py,
    # limits.py, quota_sets.py)
    Action("compute:servers:create", "nova", "POST", "/v2.1/servers", CREATE(202),
           body=lambda m, p: {"server": {"name": f"mx-{p}", "flavorRef": "42",
                                         "imageRef": m.ids["cirros"]}}),
    Action("compute:servers:index", "nova", "GET", "/v2.1/servers", LIST()),
    Action("compute:servers:detail", "nova", "GET", "/v2.1/servers/detail", LIST()),
    Action("compute:servers:show", "nova", "GET", "/v2.1/servers/{server}", READ()),
    Action("compute:os-security-groups:list", "nova", "GET",
           "/v2.1/servers/{server}/os-security-groups", READ()),
    Action("compute:servers:delete", "nova", "DELETE", "/v2.1/servers/{fresh}", WRITE(204),
           fresh="server"),
    # Server actions (nova/policies/shelve.py, servers.py create_image, stop, start and
    # reboot, pause_server.py, suspend_server.py, lock_server.py, console_output.py).
    # start, unpause and resume of the ACTIVE shared server pass the policy and are
    # refused by the state (409).
    Action("compute:servers:stop", "nova", "POST", "/v2.1/servers/{fresh}/action",
           WRITE(202), body={"os-stop": None}, fresh="server"),
    Action("compute:servers:start", "nova", "POST", "/v2.1/servers/{server}/action",
           WRITE(409), body={"os-start": None}),
    Action("compute:servers:reboot", "nova", "POST", "/v2.1/servers/{fresh}/action",
           WRITE(202), body={"reboot": {"type": "SOFT"}}, fresh="server"),
    Action("compute:os-pause-server:pause", "nova", "POST", "/v2.1/servers/{fresh}/action",
           WRITE(202), body={"pause": None}, fresh="server"),
    Action("compute:os-pause-server:unpause", "nova", "POST",
           "/v2.1/servers/{server}/action", WRITE(409), body={"unpause": None}),
    Action("compute:os-suspend-server:suspend", "nova", "POST",
           "/v2.1/servers/{fresh}/action", WRITE(202), body={"suspend": None},
           fresh="server"),
    Action("compute:os-suspend-server:resume", "nova", "POST",
           "/v2.1/servers/{server}/action", WRITE(409), body={"resume": None}),
    Action("compute:os-lock-server:lock", "nova", "POST", "/v2.1/servers/{fresh}/action",
           WRITE(202), body={"lock": None}, fresh="server"),
    Action("compute:os-lock-server:unlock", "nova", "POST", "/v2.1/servers/{server}/action",
           WRITE(202), body={"unlock": None}),
    Action("compute:os-console-output", "nova", "POST", "/v2.1/servers/{server}/action",
           WRITE(200), body={"os-getConsoleOutput": {"length": 5}}),
    Action("compute:os-shelve:shelve", "nova", "POST", "/v2.1/servers/{fresh}/action",
           WRITE(202), body={"shelve": None}, fresh="server"),
    Action("compute:servers:create_image", "nova", "POST", "/v2.1/servers/{fresh}/action",
           WRITE(202), body=lambda m, p: {"createImage": {"name": f"mx-snap-{p}"}},
           fresh="server"),
    # Server metadata (nova/policies/server_metadata.py); the servers carry {"mx": "1"}.
    Action("compute:server-metadata:index", "nova", "GET",
           "/v2.1/servers/{server}/metadata", READ()),
    Action("compute:server-metadata:show", "nova", "GET",
           "/v2.1/servers/{server}/metadata/mx", READ()),
    Action("compute:server-metadata:create", "nova", "POST",
           "/v2.1/servers/{server}/metadata", WRITE(200), body={"metadata": {"mx2": "2"}}),
    Action("compute:server-metadata:update_all", "nova", "PUT",
           "/v2.1/servers/{server}/metadata", WRITE(200), body={"metadata": {"mx": "1"}}),
    Action("compute:server-metadata:update", "nova", "PUT",
           "/v2.1/servers/{server}/metadata/mx", WRITE(200), body={"meta": {"mx": "1"}}),
    Action("compute:server-metadata:delete", "nova", "DELETE",
           "/v2.1/servers/{fresh}/metadata/mx", WRITE(204), fresh="server"),
    Action("compute:os-instance-actions:list", "nova", "GET",
           "/v2.1/servers/{server}/os-instance-actions", READ()),
    Action("compute:os-instance-actions:show", "nova", "GET",
           "/v2.1/servers/{server}/os-instance-actions/{request}", READ()),
    Action("compute:os-server-external-events:create", "nova", "POST",
           "/v2.1/os-server-external-events", _row(403, 403, 403, 200, 403, 200),
           body=lambda m, p: {"events": [{"name": "network-changed",
                                          "server_uuid": m.ids["server"]}]}),
    Action("compute:flavors:index", "nova", "GET", "/v2.1/flavors", LIST(unscoped=200,
                                                                       service=200)),
    # Flavors are the admins' (nova/policies/flavor_manage.py, flavor_extra_specs.py,
    # flavor_access.py); anyone with a role in a project reads extra specs. PUT (the
    # description) needs 2.55, above this table's version.
    Action("compute:os-flavor-manage:create", "nova", "POST", "/v2.1/flavors",
           ADMIN_ONLY(200), body=lambda m, p: {"flavor": {
               "name": f"mx-flavor-{next(m.counter)}", "ram": 64, "vcpus": 1, "disk": 1}}),
    Action("compute:os-flavor-manage:delete", "nova", "DELETE", "/v2.1/flavors/{fresh}",
           ADMIN_ONLY(202), fresh="flavor"),
    Action("compute:os-flavor-extra-specs:index", "nova", "GET",
           "/v2.1/flavors/42/os-extra_specs", _row(200, 200, 200, 200, 403, 403)),
    Action("compute:os-flavor-extra-specs:create", "nova", "POST",
           "/v2.1/flavors/{fresh}/os-extra_specs", ADMIN_ONLY(200),
           body={"extra_specs": {"hw:cpu_policy": "shared"}}, fresh="flavor"),
    Action("compute:os-flavor-access", "nova", "GET",
           "/v2.1/flavors/{fresh}/os-flavor-access", ADMIN_ONLY(200), fresh="private_flavor"),
    Action("compute:os-flavor-access:add_tenant_access", "nova", "POST",
           "/v2.1/flavors/{fresh}/action", ADMIN_ONLY(200), fresh="private_flavor",
           body=lambda m, p: {"addTenantAccess": {"tenant": m.projects["owner"]}}),
    # Nova needs a project for limits; a token without one has none to report (upstream's
    # NovaKeystoneContext refuses it outright), so novalab answers 403.
    Action("compute:limits", "nova", "GET", "/v2.1/limits", LIST(unscoped=403, service=200)),
    Action("compute:os-quota-sets:show", "nova", "GET", "/v2.1/os-quota-sets/{owner_project}",
           NAMED_PROJECT_READ()),
    Action("compute:os-quota-sets:update", "nova", "PUT",
           "/v2.1/os-quota-sets/{owner_project}", ADMIN_ONLY(200),
           body={"quota_set": {"instances": 200}}),  # above any usage the cells make
    # The admin views (nova/policies/hypervisors.py, services.py, aggregates.py,
    # availability_zone.py, simple_tenant_usage.py): the hosts are the admins'; the zones'
    # names anyone's; a project's usage its readers'.
    Action("compute:os-hypervisors:list", "nova", "GET", "/v2.1/os-hypervisors",
           ADMIN_ONLY(200)),
    Action("compute:os-hypervisors:statistics", "nova", "GET",
           "/v2.1/os-hypervisors/statistics", ADMIN_ONLY(200)),
    Action("compute:os-services:list", "nova", "GET", "/v2.1/os-services", ADMIN_ONLY(200)),
    Action("compute:os-services:update", "nova", "PUT", "/v2.1/os-services/enable",
           ADMIN_ONLY(200), body={"host": "compute-1", "binary": "nova-compute"}),
    Action("compute:os-services:delete", "nova", "DELETE", "/v2.1/os-services/999999",
           ADMIN_ONLY(404)),
    Action("compute:os-aggregates:index", "nova", "GET", "/v2.1/os-aggregates",
           ADMIN_ONLY(200)),
    Action("compute:os-availability-zone:list", "nova", "GET", "/v2.1/os-availability-zone",
           _row(200, 200, 200, 200, 200, 200)),
    Action("compute:os-availability-zone:detail", "nova", "GET",
           "/v2.1/os-availability-zone/detail", ADMIN_ONLY(200)),
    Action("compute:os-simple-tenant-usage:show", "nova", "GET",
           "/v2.1/os-simple-tenant-usage/{owner_project}", NAMED_PROJECT_READ()),
    Action("compute:os-simple-tenant-usage:list", "nova", "GET",
           "/v2.1/os-simple-tenant-usage", ADMIN_ONLY(200)),
    # Placement (placement/policies/*.py): admin, and the service role nova calls with.
    Action("placement:resource_providers:list", "placement", "GET", "/resource_providers",
           _row(403, 403, 403, 200, 403, 200)),
    Action("placement:resource_providers:create", "placement", "POST", "/resource_providers",
           _row(403, 403, 403, 200, 403, 200), body=lambda m, p: {"name": f"mx-rp-{p}"}),
    Action("placement:allocation_candidates:list", "placement", "GET",
           "/allocation_candidates?resources=VCPU:1", _row(403, 403, 403, 200, 403, 200)),
    # Glance (glance/policies/image.py): reads need the reader role, so an unscoped or
    # service-only token reads nothing, public images included.
    Action("image:add_image", "glance", "POST", "/v2/images", CREATE(201),
           body={"name": "mx", "disk_format": "raw", "container_format": "bare"}),
    Action("image:publicize_image", "glance", "POST", "/v2/images", ADMIN_ONLY(201),
           body={"name": "mx-public", "visibility": "public"}),
    Action("image:get_images", "glance", "GET", "/v2/images", LIST()),
    Action("image:get_image", "glance", "GET", "/v2/images/{image}", READ()),
    Action("image:get_image:public", "glance", "GET", "/v2/images/{cirros}",
           _row(200, 200, 200, 200, 403, 403)),
    Action("image:download_image", "glance", "GET", "/v2/images/{image}/file", READ()),
    Action("image:upload_image", "glance", "PUT", "/v2/images/{fresh}/file", WRITE(204),
           body=b"\0" * 1024, fresh="image", content_type="application/octet-stream"),
    # `openstack image set` (a JSON patch), tags, and an admin's deactivate/reactivate.
    Action("image:modify_image", "glance", "PATCH", "/v2/images/{fresh}", WRITE(200),
           body=[{"op": "replace", "path": "/name", "value": "renamed"}], fresh="image",
           content_type="application/openstack-images-v2.1-json-patch"),
    Action("image:modify_image:add_tag", "glance", "PUT", "/v2/images/{fresh}/tags/mx",
           WRITE(204), fresh="image"),
    Action("image:modify_image:delete_tag", "glance", "DELETE",
           "/v2/images/{fresh}/tags/mx", WRITE(204), fresh="tagged_image"),
    Action("image:deactivate", "glance", "POST", "/v2/images/{fresh}/actions/deactivate",
           _row(403, 404, 403, 204, 404, 404), fresh="active_image"),
    Action("image:reactivate", "glance", "POST", "/v2/images/{fresh}/actions/reactivate",
           _row(403, 404, 403, 204, 404, 404), fresh="deactivated_image"),
    Action("image:get_schema", "glance", "GET", "/v2/schemas/image", _row(*[200] * 6)),
    Action("image:delete_image", "glance", "DELETE", "/v2/images/{fresh}", WRITE(204),
           fresh="image"),
    Action("image:delete_image:public", "glance", "DELETE", "/v2/images/{fresh}",
           ADMIN_ONLY(204), fresh="public_image"),
    # Neutron (neutron/conf/policies/network.py, subnet.py, port.py, quotas.py): lists
    # are filtered, never refused; the service role reads and changes any port, and reads
    # any network and subnet (Nova builds an instance's network info with its service
    # credentials, as upstream Nova does with an admin client), but changes neither.
    Action("network:create_network", "neutron", "POST", "/v2.0/networks", CREATE(201),
           body={"network": {"name": "mx"}}),
    Action("network:get_networks", "neutron", "GET", "/v2.0/networks",
           LIST(unscoped=200, service=200)),
    Action("network:get_network", "neutron", "GET", "/v2.0/networks/{network}",
           READ(service=200)),
    Action("network:update_network", "neutron", "PUT", "/v2.0/networks/{fresh}",
           WRITE(200, service=403),
           body={"network": {"name": "renamed"}}, fresh="network"),
    Action("network:delete_network", "neutron", "DELETE", "/v2.0/networks/{fresh}",
           WRITE(204, service=403), fresh="network"),
    Action("network:create_subnet", "neutron", "POST", "/v2.0/subnets",
           WRITE(201, service=403),
           body=lambda m, p: {"subnet": {"network_id": m.ids["network"], "ip_version": 4,
                                         "cidr": _cidr(m, p)}}),
    Action("network:get_subnet", "neutron", "GET", "/v2.0/subnets/{subnet}",
           READ(service=200)),
    Action("network:update_subnet", "neutron", "PUT", "/v2.0/subnets/{fresh}",
           WRITE(200, service=403),
           body={"subnet": {"name": "renamed"}}, fresh="subnet"),
    Action("network:delete_subnet", "neutron", "DELETE", "/v2.0/subnets/{fresh}",
           WRITE(204, service=403), fresh="subnet"),
    Action("network:create_port", "neutron", "POST", "/v2.0/ports", WRITE(201, service=201),
           body=lambda m, p: {"port": {"network_id": m.ids["network"]}}),
    Action("network:get_port", "neutron", "GET", "/v2.0/ports/{port}", READ(service=200)),
    Action("network:update_port", "neutron", "PUT", "/v2.0/ports/{fresh}",
           WRITE(200, service=200), body={"port": {"name": "renamed"}}, fresh="port"),
    Action("network:delete_port", "neutron", "DELETE", "/v2.0/ports/{fresh}",
           WRITE(204, service=204), fresh="port"),
    Action("network:get_quota", "neutron", "GET", "/v2.0/quotas/{owner_project}",
           NAMED_PROJECT_READ()),
    Action("network:update_quota", "neutron", "PUT", "/v2.0/quotas/{owner_project}",
           ADMIN_ONLY(200), body={"quota": {"network": 12}}),
    # Agents are admin's (neutron/conf/policies/agent.py): a list hides them, one is a 404.
    Action("network:get_agent", "neutron", "GET", "/v2.0/agents", _row(*[200] * 6)),
    Action("network:get_agent:one", "neutron", "GET", "/v2.0/agents/{agent}",
           _row(404, 404, 404, 200, 404, 404)),
    Action("network:extensions", "neutron", "GET", "/v2.0/extensions", _row(*[200] * 6)),
    # Routers and floating IPs: the router extension is not loaded, a 404 for everyone.
    Action("network:router:not_loaded", "neutron", "GET", "/v2.0/routers",
           _row(*[404] * 6)),
    Action("network:floatingip:not_loaded", "neutron", "POST", "/v2.0/floatingips",
           _row(*[404] * 6), body={"floatingip": {}}),
    # Security groups (neutron/conf/policies/security_group.py): readers of the project
    # see them, members change them; a rule is its group's (ADMIN_OR_SG_OWNER_MEMBER).
    # The service role reads them (Nova shows a server's groups), as it reads ports.
    Action("network:create_security_group", "neutron", "POST", "/v2.0/security-groups",
           CREATE(201), body=lambda m, p: {"security_group": {
               "name": f"mx-{next(m.counter)}"}}),
    Action("network:get_security_groups", "neutron", "GET", "/v2.0/security-groups",
           LIST(unscoped=200, service=200)),
    Action("network:get_security_group", "neutron", "GET",
           "/v2.0/security-groups/{security_group}", READ(service=200)),
    Action("network:update_security_group", "neutron", "PUT",
           "/v2.0/security-groups/{fresh}", WRITE(200, service=403),
           body={"security_group": {"description": "renamed"}}, fresh="security_group"),
    Action("network:delete_security_group", "neutron", "DELETE",
           "/v2.0/security-groups/{fresh}", WRITE(204, service=403), fresh="security_group"),
    Action("network:create_security_group_rule", "neutron", "POST",
           "/v2.0/security-group-rules", WRITE(201, service=403), fresh="security_group",
           body=lambda m, p: {"security_group_rule": {
               "security_group_id": m.fresh_id, "direction": "ingress"}}),
    Action("network:get_security_group_rule", "neutron", "GET",
           "/v2.0/security-group-rules/{security_group_rule}", READ(service=200)),
    Action("network:delete_security_group_rule", "neutron", "DELETE",
           "/v2.0/security-group-rules/{fresh}", WRITE(204, service=403),
           fresh="security_group_rule"),
    # Cinder (cinder/policies/volumes.py, attachments.py, messages.py, quotas.py,
    # limits.py); the URL carries the caller's own project, as its catalog says.
    Action("volume:create", "cinder", "POST", "/v3/{project}/volumes", CINDER(CREATE(202)),
           body={"volume": {"size": 1, "name": "mx"}}),
    Action("volume:get_all", "cinder", "GET", "/v3/{project}/volumes/detail", CINDER(LIST())),
    Action("volume:get", "cinder", "GET", "/v3/{project}/volumes/{volume}", CINDER(READ())),
    Action("volume:delete", "cinder", "DELETE", "/v3/{project}/volumes/{fresh}",
           CINDER(WRITE(202)), fresh="volume"),
    Action("volume:attachment_create", "cinder", "POST", "/v3/{project}/attachments",
           CINDER(WRITE(200)), fresh="volume",
           body=lambda m, p: {"attachment": {"volume_uuid": m.fresh_id,
                                             "instance_uuid": m.ids["server"]}}),
    Action("volume:attachment_show", "cinder", "GET",
           "/v3/{project}/attachments/{attachment}", CINDER(READ())),
    Action("volume:attachment_delete", "cinder", "DELETE",
           "/v3/{project}/attachments/{fresh}", CINDER(WRITE(200)), fresh="attachment"),
    Action("message:get_all", "cinder", "GET", "/v3/{project}/messages", CINDER(LIST())),
    Action("volume_extension:quotas:show", "cinder", "GET",
           "/v3/{project}/os-quota-sets/{owner_project}", CINDER(NAMED_PROJECT_READ())),
    Action("volume_extension:quotas:update", "cinder", "PUT",
           "/v3/{project}/os-quota-sets/{owner_project}", CINDER(ADMIN_ONLY(200)),
           body={"quota_set": {"volumes": 12}}),
    Action("limits_extension:used_limits", "cinder", "GET", "/v3/{project}/limits",
           CINDER(LIST())),
    # Keystone (keystone/common/policies/user.py, project.py): admins manage users and
    # projects; a user reads their own user, a project's members read their project.
    Action("identity:list_users", "keystone", "GET", "/v3/users", ADMIN_ONLY(200)),
    Action("identity:get_user", "keystone", "GET", "/v3/users/{owner_user}",
           _row(200, 403, 403, 200, 200, 403)),
    Action("identity:create_user", "keystone", "POST", "/v3/users", ADMIN_ONLY(201),
           body=lambda m, p: {"user": {"name": f"mx-user-{next(m.counter)}",
                                       "password": "secret-enough"}}),
    Action("identity:update_user", "keystone", "PATCH", "/v3/users/{fresh}", ADMIN_ONLY(200),
           body={"user": {"enabled": False}}, fresh="user"),
    Action("identity:delete_user", "keystone", "DELETE", "/v3/users/{fresh}",
           ADMIN_ONLY(204), fresh="user"),
    Action("identity:list_projects", "keystone", "GET", "/v3/projects", ADMIN_ONLY(200)),
    Action("identity:get_project", "keystone", "GET", "/v3/projects/{owner_project}",
           NAMED_PROJECT_READ()),
    Action("identity:create_project", "keystone", "POST", "/v3/projects", ADMIN_ONLY(201),
           body=lambda m, p: {"project": {"name": f"mx-project-{next(m.counter)}"}}),
    Action("identity:update_project", "keystone", "PATCH", "/v3/projects/{fresh}",
           ADMIN_ONLY(200), body={"project": {"enabled": False}}, fresh="project"),
    Action("identity:delete_project", "keystone", "DELETE", "/v3/projects/{fresh}",
           ADMIN_ONLY(204), fresh="project"),
    # The catalog (keystone/common/policies/region.py, service.py, endpoint.py) and the
    # assignments (role_assignment.py): regions are any token's, the rest admins'.
    Action("identity:list_regions", "keystone", "GET", "/v3/regions", _row(*[200] * 6)),
    Action("identity:get_region", "keystone", "GET", "/v3/regions/RegionOne",
           _row(*[200] * 6)),
    Action("identity:list_services", "keystone", "GET", "/v3/services", ADMIN_ONLY(200)),
    Action("identity:get_service", "keystone", "GET", "/v3/services/{service}",
           ADMIN_ONLY(200)),
    Action("identity:list_endpoints", "keystone", "GET", "/v3/endpoints", ADMIN_ONLY(200)),
    Action("identity:get_endpoint", "keystone", "GET", "/v3/endpoints/{endpoint}",
           ADMIN_ONLY(200)),
    Action("identity:list_role_assignments", "keystone", "GET",
           "/v3/role_assignments?include_names=True", ADMIN_ONLY(200)),
]

# -- the cloud, the personas and the owner's resources ---------------------------------------


class Matrix:
    """One cloud, a token per persona, the owner's resources, and fresh ones on demand."""

    def __init__(self, cloud: EmbeddedCloud):
        self.cloud = cloud
        self.http = httpx.Client(timeout=60)
        self.tokens: dict[str, str] = {}
        self.projects: dict[str, str | None] = {}
        self.login_errors: dict[str, str] = {}
        self.ids: dict[str, str] = {}
        self.counter = itertools.count()
        self.fresh_id: str | None = None

    def url(self, service: str) -> str:
        return self.cloud.urls[service]

    def login(self, persona: str) -> None:
        user, project = LOGINS[persona]
        auth = {"identity": {"methods": ["password"], "password": {"user": {
            "name": user, "domain": {"id": "default"},
            "password": self.cloud.config.credentials.password_for(user)}}}}
        if project:
            auth["scope"] = {"project": {"name": project, "domain": {"id": "default"}}}
        response = self.http.post(f"{self.cloud.identity_url}/auth/tokens", json={"auth": auth})
        if response.status_code != 201:
            self.login_errors[persona] = f"{user} cannot log in: {response.status_code} " \
                                         f"{response.text[:200]}"
            return
        self.tokens[persona] = response.headers["X-Subject-Token"]
        self.projects[persona] = (response.json()["token"].get("project") or {}).get("id")
        if persona == "owner":
            self.ids["owner_user"] = response.json()["token"]["user"]["id"]

    def call(self, persona: str, method: str, url: str, body=None,
             content_type: str = "application/json") -> httpx.Response:
        headers = {"X-Auth-Token": self.tokens[persona], "Content-Type": content_type,
                   "OpenStack-API-Version": API_VERSIONS}
        if isinstance(body, bytes):
            return self.http.request(method, url, content=body, headers=headers)
        return self.http.request(method, url, json=body, headers=headers)

    def ok(self, persona, method, service, path, body=None) -> dict:
        response = self.call(persona, method, self.url(service) + path, body)
        if response.status_code >= 300:
            raise AssertionError(f"setup: {persona} {method} {path} -> "
                                 f"{response.status_code} {response.text[:300]}")
        return response.json() if response.content else {}

    # What the owner (or admin) makes -------------------------------------------------------

    def make(self, kind: str) -> str:
        project = self.projects.get("owner")
        if kind == "server":
            server = self.ok("owner", "POST", "nova", "/v2.1/servers", {"server": {
                "name": "mx-owner", "flavorRef": "42", "imageRef": self.ids["cirros"],
                "networks": [{"uuid": self.ids["network"]}], "metadata": {"mx": "1"}}})["server"]
            self._wait("nova", f"/v2.1/servers/{server['id']}", "server",
                       lambda s: s["status"] != "BUILD")
            return server["id"]
        if kind in ("tagged_image", "active_image", "deactivated_image"):
            image = self.make("image")
            if kind == "tagged_image":
                self.ok("owner", "PUT", "glance", f"/v2/images/{image}/tags/mx")
                return image
            self.call("owner", "PUT", f"{self.url('glance')}/v2/images/{image}/file",
                      b"x" * 64, "application/octet-stream")
            if kind == "deactivated_image":
                self.ok("admin", "POST", "glance", f"/v2/images/{image}/actions/deactivate")
            return image
        if kind in ("image", "public_image"):
            who = "admin" if kind == "public_image" else "owner"
            body = {"name": f"mx-{kind}", "disk_format": "raw", "container_format": "bare"}
            if kind == "public_image":
                body["visibility"] = "public"
            return self.ok(who, "POST", "glance", "/v2/images", body)["id"]
        if kind == "network":
            return self.ok("owner", "POST", "neutron", "/v2.0/networks",
                           {"network": {"name": "mx"}})["network"]["id"]
        if kind == "subnet":
            return self.ok("owner", "POST", "neutron", "/v2.0/subnets", {"subnet": {
                "network_id": self.make("network"), "ip_version": 4,
                "cidr": "10.50.0.0/24"}})["subnet"]["id"]
        if kind == "port":
            return self.ok("owner", "POST", "neutron", "/v2.0/ports", {"port": {
                "network_id": self.ids["network"]}})["port"]["id"]
        if kind == "security_group":
            return self.ok("owner", "POST", "neutron", "/v2.0/security-groups", {
                "security_group": {"name": "mx-sg"}})["security_group"]["id"]
        if kind == "security_group_rule":
            return self.ok("owner", "POST", "neutron", "/v2.0/security-group-rules", {
                "security_group_rule": {"security_group_id": self.make("security_group"),
                                        "direction": "ingress"}})["security_group_rule"]["id"]
        if kind == "volume":
            volume = self.ok("owner", "POST", "cinder", f"/v3/{project}/volumes",
                             {"volume": {"size": 1, "name": "mx"}})["volume"]
            self._wait("cinder", f"/v3/{project}/volumes/{volume['id']}", "volume",
                       lambda v: v["status"] != "creating")
            return volume["id"]
        if kind == "attachment":
            return self.ok("owner", "POST", "cinder", f"/v3/{project}/attachments", {
                "attachment": {"volume_uuid": self.make("volume"),
                               "instance_uuid": self.ids["server"]}})["attachment"]["id"]
        if kind in ("flavor", "private_flavor"):
            return self.ok("admin", "POST", "nova", "/v2.1/flavors", {"flavor": {
                "name": f"mx-{kind}-{next(self.counter)}", "ram": 64, "vcpus": 1, "disk": 1,
                "os-flavor-access:is_public": kind == "flavor"}})["flavor"]["id"]
        if kind in ("user", "project"):
            body = {kind: {"name": f"mx-{kind}-{next(self.counter)}"}}
            if kind == "user":
                body["user"]["password"] = "secret-enough"
            return self.ok("admin", "POST", "keystone", f"/v3/{kind}s", body)[kind]["id"]
        raise ValueError(kind)

    def _wait(self, service, path, key, done, timeout=60.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            item = self.ok("owner", "GET", service, path)[key]
            if done(item):
                return item
            time.sleep(0.1)
        raise AssertionError(f"setup: {path} not ready after {timeout} s")

    def setup(self) -> None:
        for persona in PERSONAS:
            self.login(persona)
        self.ids["cirros"] = self.cloud.cirros["id"]
        self.ids["owner_project"] = self.projects["owner"]
        self.ids["agent"] = self.ok("admin", "GET", "neutron", "/v2.0/agents")["agents"][0]["id"]
        catalog = self.ok("admin", "GET", "keystone", "/v3/endpoints")["endpoints"]
        self.ids["endpoint"], self.ids["service"] = catalog[0]["id"], catalog[0]["service_id"]
        self.raise_quotas(self.projects["owner"])
        self.ids["network"] = self.make("network")
        self.ok("owner", "POST", "neutron", "/v2.0/subnets", {"subnet": {
            "network_id": self.ids["network"], "ip_version": 4, "cidr": "10.40.0.0/24"}})
        self.ids["subnet"] = self.make("subnet")
        self.ids["port"] = self.make("port")
        self.ids["security_group_rule"] = self.make("security_group_rule")
        self.ids["security_group"] = self.make("security_group")
        image = self.make("image")
        self.call("owner", "PUT", f"{self.url('glance')}/v2/images/{image}/file", b"x" * 512,
                  "application/octet-stream")
        self.ids["image"] = image
        self.ids["volume"] = self.make("volume")
        response = self.call("owner", "POST", f"{self.url('nova')}/v2.1/servers", {"server": {
            "name": "mx-owner", "flavorRef": "42", "imageRef": self.ids["cirros"],
            "networks": [{"uuid": self.ids["network"]}], "metadata": {"mx": "1"}}})
        self.ids["server"] = response.json()["server"]["id"]
        self.ids["request"] = response.headers["X-OpenStack-Request-ID"]
        self.cloud.wait_idle(60)
        # Built, so the cells that change its metadata find it in a state that allows it.
        self._wait("nova", f"/v2.1/servers/{self.ids['server']}", "server",
                   lambda s: s["status"] != "BUILD")
        self.ids["attachment"] = self.make("attachment")

    def raise_quotas(self, project: str) -> None:
        """The fresh resources of every cell fit (as benchmarks do, admin raises quotas);
        a service without quotas yet answers 404 here, which is fine."""
        admin = self.projects["admin"]
        for service, path, body in (
                ("cinder", f"/v3/{admin}/os-quota-sets/{project}",
                 {"quota_set": {"volumes": 100, "gigabytes": 1000}}),
                ("nova", f"/v2.1/os-quota-sets/{project}",
                 {"quota_set": {"instances": 100, "cores": 100, "ram": 1024000}}),
                ("neutron", f"/v2.0/quotas/{project}",
                 {"quota": {"network": 100, "subnet": 100, "port": 200,
                            "security_group": 100, "security_group_rule": 500}})):
            self.call("admin", "PUT", self.url(service) + path, body)

    def format(self, path: str, persona: str) -> str:
        own = self.projects.get(persona) or self.projects["owner"]
        return path.format(project=own, fresh=self.fresh_id, **self.ids)


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    # The modern topology, so placement's rows are tried too. A port's plug event gets
    # 10 s (not 300): long enough on a loaded CI machine, short if one never comes.
    config = CloudConfig(state_dir=tmp_path_factory.mktemp("authz") / "cloud",
                         vif_plugging_timeout=10.0, topology="modern")
    with EmbeddedCloud(config, Telemetry(memory=False, otlp=False)) as cloud:
        m = Matrix(cloud)
        m.setup()
        yield m
        m.http.close()


# -- one test per cell ------------------------------------------------------------------------

CELLS = [(action, persona) for action in ACTIONS for persona in PERSONAS]


@pytest.mark.parametrize(("action", "persona"), CELLS,
                         ids=[f"{a.name}-{p}" for a, p in CELLS])
def test_cell(matrix, action: Action, persona: str):
    if persona in matrix.login_errors:
        pytest.fail(f"persona {persona}: {matrix.login_errors[persona]}")
    matrix.fresh_id = matrix.make(action.fresh) if action.fresh else None
    body = action.body(matrix, persona) if callable(action.body) else action.body
    path = matrix.format(action.path, persona)
    response = matrix.call(persona, action.method, matrix.url(action.service) + path, body,
                           action.content_type)
    expected = action.expect[persona]
    assert response.status_code == expected, (
        f"{persona} {action.method} {path} ({action.name}): got {response.status_code}, "
        f"upstream answers {expected}: {response.text[:300]}")


# -- lists never show another project's resources ----------------------------------------------

LISTINGS = [("nova", "/v2.1/servers/detail", "servers", "server"),
            ("glance", "/v2/images", "images", "image"),
            ("neutron", "/v2.0/networks", "networks", "network"),
            ("neutron", "/v2.0/ports", "ports", "port"),
            ("cinder", "/v3/{project}/volumes/detail", "volumes", "volume")]


@pytest.mark.parametrize(("service", "path", "key", "kind"), LISTINGS,
                         ids=[f"{s}:{k}" for s, _, k, _ in LISTINGS])
def test_lists_hide_other_projects(matrix, service, path, key, kind):
    if "other" in matrix.login_errors:
        pytest.fail(f"persona other: {matrix.login_errors['other']}")
    response = matrix.call("other", "GET", matrix.url(service) + matrix.format(path, "other"))
    assert response.status_code == 200, response.text[:300]
    ids = {item["id"] for item in response.json()[key]}
    assert matrix.ids[kind] not in ids, f"another project's member lists the owner's {kind}"
