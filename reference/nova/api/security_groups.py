"""A server's security groups (``nova/api/openstack/compute/security_groups.py``).

Nova only relays: a server's groups are its ports' groups in Neutron
(``network/security_group_api.py``).

    GET  /v2.1/servers/{id}/os-security-groups                    (the groups, detailed)
    POST /v2.1/servers/{id}/action {"addSecurityGroup": {"name": "web"}}
                                                     openstack server add security group
    POST /v2.1/servers/{id}/action {"removeSecurityGroup": {"name": "web"}}
                                                     openstack server remove security group

The actions answer ``202`` with no body once every port is updated; a group the
project does not have (or, on remove, the server is not in) is a 404, a name
two groups share a 409. The proxy to Neutron's groups, ``/os-security-groups``
and ``/os-security-group-rules``, is deprecated since 2.36 and left out
(``app.py``'s left-out paths): clients use Neutron's API.
"""

from __future__ import annotations

from flask import Response, g, jsonify

from novalab.reference.common import exception
from novalab.reference.nova.api.actions import action
from novalab.reference.nova.api.common import get_authorized_instance
from novalab.reference.nova.api.schemas import security_groups as schema
from novalab.reference.nova.compute.api import API as ComputeAPI
from novalab.reference.nova.network.neutron import NoUniqueMatch, SecurityGroupNotFound
from novalab.tracing.spans import upstream

_SG = "nova/api/openstack/compute/security_groups.py"
POLICY_NAME = "os_compute_api:os-security-groups:%s"


def _format_security_group_rule(rule: dict, group_rule_data: dict | None) -> dict:
    formatted = {"id": rule["id"], "parent_group_id": rule["parent_group_id"],
                 "ip_protocol": rule["protocol"], "from_port": rule["from_port"],
                 "to_port": rule["to_port"], "group": {}, "ip_range": {}}
    if group_rule_data:
        formatted["group"] = group_rule_data
    elif not rule["group_id"]:
        formatted["ip_range"] = {"cidr": rule["cidr"]}
    return formatted


def _format_security_group(group: dict, rule_groups: dict) -> dict:
    """``SecurityGroupControllerBase._format_security_group``; a rule whose remote group
    the caller cannot see is left out, as upstream."""
    rules = [_format_security_group_rule(r, rule_groups.get(r["group_id"]))
             for r in group["rules"]
             if not r["group_id"] or r["group_id"] in rule_groups]
    return {"id": group["id"], "description": group["description"], "name": group["name"],
            "tenant_id": group["project_id"], "rules": rules}


class SecurityGroupsController:
    """``ServerSecurityGroupController`` and ``SecurityGroupActionController`` in one."""

    def __init__(self, compute_api: ComputeAPI, tracer):
        self.compute_api = compute_api
        self.tracer = tracer

    def _sg_api(self):
        if self.compute_api.security_group_api is None:
            raise exception.NotFound("Security groups are Neutron's, and this cloud has no "
                                     "Neutron.")
        return self.compute_api.security_group_api

    def _instance(self, server_id: str, rule: str) -> dict:
        return get_authorized_instance(self.compute_api, server_id, POLICY_NAME % rule)

    @upstream(_SG, "ServerSecurityGroupController.index")
    def index(self, server_id: str):
        instance = self._instance(server_id, "list")
        try:
            groups = self._sg_api().get_instance_security_groups(g.context, instance,
                                                                 detailed=True)
        except SecurityGroupNotFound as exc:
            raise exception.NotFound(str(exc)) from exc
        rule_groups = {group["id"]: {"name": group["name"], "tenant_id": group["project_id"]}
                       for group in groups}
        for group in groups:  # remote groups outside the server's: ask Neutron once each
            for rule in group["rules"]:
                remote = rule["group_id"]
                if remote and remote not in rule_groups:
                    try:
                        other = self._sg_api()._client(g.context).show("security_group",
                                                                      remote)
                        rule_groups[remote] = {"name": other["name"],
                                               "tenant_id": other["tenant_id"]}
                    except Exception:  # not found, or not the caller's: the rule is hidden
                        continue
        result = [_format_security_group(group, rule_groups) for group in groups]
        unique = {group["id"]: group for group in result}  # one entry per group, not port
        return jsonify({"security_groups": sorted(unique.values(),
                                                  key=lambda k: (k["tenant_id"], k["name"]))})

    def _change(self, server_id: str, body: dict, name: str, rule: str,
                method: str) -> Response:
        instance = self._instance(server_id, rule)
        group = body[name]["name"]
        if not group.strip():
            raise exception.ValidationError(detail="Security group name cannot be empty")
        try:
            getattr(self._sg_api(), method)(g.context, instance, group)
        except SecurityGroupNotFound as exc:
            raise exception.NotFound(str(exc)) from exc
        except NoUniqueMatch as exc:
            raise exception.Conflict(str(exc)) from exc
        return Response(status=202)

    @action("addSecurityGroup", schema.add_security_group)
    @upstream(_SG, "SecurityGroupActionController._addSecurityGroup")
    def _addSecurityGroup(self, server_id: str, body: dict):  # noqa: N802 (upstream's name)
        return self._change(server_id, body, "addSecurityGroup", "add", "add_to_instance")

    @action("removeSecurityGroup", schema.remove_security_group)
    @upstream(_SG, "SecurityGroupActionController._removeSecurityGroup")
    def _removeSecurityGroup(self, server_id: str, body: dict):  # noqa: N802
        return self._change(server_id, body, "removeSecurityGroup", "remove",
                            "remove_from_instance")


def register(app, controller: SecurityGroupsController) -> None:
    app.add_url_rule("/v2.1/servers/<server_id>/os-security-groups",
                     "server_security_groups", controller.index, methods=["GET"])
