"""Who may do what (``nova/policies/*.py`` defaults), on the common evaluator.

Nova's secure-RBAC defaults, compacted: a project's readers list and show its
servers, its members create, delete, snapshot, shelve and unshelve them, admins
reach every project's; only admins offload a shelved server; only services
(Neutron, Cinder) and admins send external events. Reading another
project's server is not a 403 but a 404: the database lookup itself is scoped
to the caller's project, so the server simply does not exist for them.
"""

from __future__ import annotations

from novalab.reference.common import policy
from novalab.reference.common.context import RequestContext

RULES = {
    "os_compute_api:servers:create": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:servers:index": policy.PROJECT_READER_OR_ADMIN,
    "os_compute_api:servers:detail": policy.PROJECT_READER_OR_ADMIN,
    "os_compute_api:servers:show": policy.PROJECT_READER_OR_ADMIN,
    "os_compute_api:servers:delete": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:servers:update": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:servers:index:get_all_tenants": policy.ADMIN,
    "os_compute_api:servers:detail:get_all_tenants": policy.ADMIN,
    "os_compute_api:os-extended-server-attributes": policy.ADMIN,
    # What later microversions show of a server and a flavor (nova/policies/servers.py,
    # flavor_extra_specs.py): the flavor's extra specs to its readers, the host's
    # status (2.16) to admins.
    "os_compute_api:servers:show:flavor-extra-specs": policy.PROJECT_READER_OR_ADMIN,
    "os_compute_api:servers:show:host_status": policy.ADMIN,
    "os_compute_api:servers:show:host_status:unknown-only": policy.ADMIN,
    "os_compute_api:os-flavor-extra-specs:index": policy.PROJECT_READER_OR_ADMIN,
    "os_compute_api:os-flavor-extra-specs:show": policy.PROJECT_READER_OR_ADMIN,
    # nova/policies/flavor_manage.py, flavor_extra_specs.py, flavor_access.py: flavors
    # are the cloud's; only admins make, change and delete them, write their extra
    # specs, and say which projects a private one is for.
    "os_compute_api:os-flavor-manage:create": policy.ADMIN,
    "os_compute_api:os-flavor-manage:update": policy.ADMIN,
    "os_compute_api:os-flavor-manage:delete": policy.ADMIN,
    "os_compute_api:os-flavor-extra-specs:create": policy.ADMIN,
    "os_compute_api:os-flavor-extra-specs:update": policy.ADMIN,
    "os_compute_api:os-flavor-extra-specs:delete": policy.ADMIN,
    "os_compute_api:os-flavor-access": policy.ADMIN,
    "os_compute_api:os-flavor-access:add_tenant_access": policy.ADMIN,
    "os_compute_api:os-flavor-access:remove_tenant_access": policy.ADMIN,
    # nova/policies/servers.py and shelve.py: the server actions novalab has.
    "os_compute_api:servers:create_image": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:os-shelve:shelve": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:os-shelve:unshelve": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:os-shelve:shelve_offload": policy.ADMIN,
    # nova/policies/servers.py, pause_server.py, suspend_server.py, lock_server.py,
    # console_output.py: the server's members power it, lock it, read its console;
    # lifting an admin's lock is for admins.
    "os_compute_api:servers:stop": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:servers:start": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:servers:reboot": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:os-pause-server:pause": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:os-pause-server:unpause": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:os-suspend-server:suspend": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:os-suspend-server:resume": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:os-lock-server:lock": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:os-lock-server:unlock": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:os-lock-server:unlock:unlock_override": policy.ADMIN,
    "os_compute_api:os-console-output": policy.PROJECT_MEMBER_OR_ADMIN,
    # nova/policies/remote_consoles.py: console URLs (refused: no console proxy).
    "os_compute_api:os-remote-consoles": policy.PROJECT_MEMBER_OR_ADMIN,
    # nova/policies/server_tags.py: the server's readers read its tags, members set them.
    "os_compute_api:os-server-tags:index": policy.PROJECT_READER_OR_ADMIN,
    "os_compute_api:os-server-tags:show": policy.PROJECT_READER_OR_ADMIN,
    "os_compute_api:os-server-tags:update": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:os-server-tags:update_all": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:os-server-tags:delete": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:os-server-tags:delete_all": policy.PROJECT_MEMBER_OR_ADMIN,
    # nova/policies/server_metadata.py: the same split for the server's metadata.
    "os_compute_api:server-metadata:index": policy.PROJECT_READER_OR_ADMIN,
    "os_compute_api:server-metadata:show": policy.PROJECT_READER_OR_ADMIN,
    "os_compute_api:server-metadata:create": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:server-metadata:update": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:server-metadata:update_all": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:server-metadata:delete": policy.PROJECT_MEMBER_OR_ADMIN,
    # nova/policies/instance_actions.py: the server's project reads its actions and
    # their events; the events' tracebacks are for admins.
    "os_compute_api:os-instance-actions:list": policy.PROJECT_READER_OR_ADMIN,
    "os_compute_api:os-instance-actions:show": policy.PROJECT_READER_OR_ADMIN,
    "os_compute_api:os-instance-actions:events": policy.ADMIN,
    "os_compute_api:os-server-external-events:create": policy.ADMIN_OR_SERVICE,
    # nova/policies/limits.py and quota_sets.py
    "os_compute_api:limits": policy.ANYONE,
    "os_compute_api:limits:other_project": policy.ADMIN,
    "os_compute_api:os-quota-sets:show": policy.PROJECT_READER_OR_ADMIN,
    "os_compute_api:os-quota-sets:defaults": policy.ANYONE,
    "os_compute_api:os-quota-sets:update": policy.ADMIN,
    "os_compute_api:os-quota-sets:delete": policy.ADMIN,
    # nova/policies/keypairs.py: a key pair is its user's; admins act for anyone.
    "os_compute_api:os-keypairs:index": f"{policy.ADMIN} or user_id:%(user_id)s",
    "os_compute_api:os-keypairs:create": f"{policy.ADMIN} or user_id:%(user_id)s",
    "os_compute_api:os-keypairs:delete": f"{policy.ADMIN} or user_id:%(user_id)s",
    "os_compute_api:os-keypairs:show": f"{policy.ADMIN} or user_id:%(user_id)s",
    # nova/policies/volumes_attachments.py: the server's project reads and changes them.
    "os_compute_api:os-security-groups:list": policy.PROJECT_READER_OR_ADMIN,
    "os_compute_api:os-security-groups:add": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:os-security-groups:remove": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:os-volumes-attachments:index": policy.PROJECT_READER_OR_ADMIN,
    "os_compute_api:os-volumes-attachments:show": policy.PROJECT_READER_OR_ADMIN,
    "os_compute_api:os-volumes-attachments:create": policy.PROJECT_MEMBER_OR_ADMIN,
    "os_compute_api:os-volumes-attachments:delete": policy.PROJECT_MEMBER_OR_ADMIN,
    # nova/policies/hypervisors.py, services.py, aggregates.py: the cloud's hosts are
    # the admins' business; availability_zone.py: anyone may see the zones' names,
    # admins their hosts; simple_tenant_usage.py: a project's readers its own usage.
    "os_compute_api:os-hypervisors:list": policy.ADMIN,
    "os_compute_api:os-hypervisors:list-detail": policy.ADMIN,
    "os_compute_api:os-hypervisors:statistics": policy.ADMIN,
    "os_compute_api:os-hypervisors:show": policy.ADMIN,
    "os_compute_api:os-hypervisors:uptime": policy.ADMIN,
    "os_compute_api:os-hypervisors:search": policy.ADMIN,
    "os_compute_api:os-hypervisors:servers": policy.ADMIN,
    "os_compute_api:os-services:list": policy.ADMIN,
    "os_compute_api:os-services:update": policy.ADMIN,
    "os_compute_api:os-services:delete": policy.ADMIN,
    "os_compute_api:os-aggregates:index": policy.ADMIN,
    "os_compute_api:os-availability-zone:list": policy.ANYONE,
    "os_compute_api:os-availability-zone:detail": policy.ADMIN,
    "os_compute_api:os-simple-tenant-usage:show": policy.PROJECT_READER_OR_ADMIN,
    "os_compute_api:os-simple-tenant-usage:list": policy.ADMIN,
}

ENFORCER = policy.Enforcer(RULES)


def check(context: RequestContext, action: str, target: dict | None = None) -> bool:
    return ENFORCER.check(context, action, target)


def authorize(context: RequestContext, action: str, target: dict | None = None) -> None:
    ENFORCER.authorize(context, action, target)
