"""Nova's view of Neutron's security groups (``nova/network/security_group_api.py``).

Nova keeps no security groups of its own: a server's groups are its ports'
groups in Neutron. This module asks Neutron, with the caller's token, to

* resolve a name or id at create (``validate_name``: unknown is a 400 at the API);
* list each server's groups for the server views (``get_instances_security_groups_
  bindings``: names, one per port and group) and for
  ``GET /servers/{id}/os-security-groups`` (``get_instance_security_groups``,
  detailed, in Nova's old format: ingress rules with ``from_port``/``to_port``);
* add a group to, or remove it from, every port of a server (the
  ``addSecurityGroup`` / ``removeSecurityGroup`` actions), which Neutron then
  tells the L2 agents about.
"""

from __future__ import annotations

import logging

from novalab.reference.common import exception
from novalab.reference.common.context import RequestContext
from novalab.reference.nova.network.neutron import (
    API as NeutronAPI,
)
from novalab.reference.nova.network.neutron import (
    NeutronClientException,
    NoUniqueMatch,
    SecurityGroupNotFound,
)
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)

SG_API = "nova/network/security_group_api.py"
MAX_SEARCH_IDS = 150  # ports listed per query, as upstream


class SecurityGroupCannotBeApplied(exception.Invalid):
    msg_fmt = "Network requires port_security_enabled and subnet associated in order to " \
              "apply security groups."


class SecurityGroupAPI:
    def __init__(self, network_api: NeutronAPI, tracer):
        self.network_api = network_api
        self.tracer = tracer

    def _client(self, context: RequestContext):
        return self.network_api.get_client(context)

    @upstream(SG_API, "validate_name")
    def validate_name(self, context: RequestContext, name: str) -> str:
        """The id of the caller's group ``name`` (a name or an id)."""
        try:
            return self._client(context).find_resourceid_by_name_or_id(
                "security_group", name, context.project_id)
        except NeutronClientException as exc:
            status = exc.kwargs.get("status")
            if status == 409:
                raise NoUniqueMatch(exc.kwargs.get("reason")) from exc
            if status == 404:
                LOG.debug("Neutron security group %s not found", name)
                raise SecurityGroupNotFound(exc.kwargs.get("reason")) from exc
            raise

    @upstream(SG_API, "get_instances_security_groups_bindings")
    def get_instances_security_groups_bindings(self, context: RequestContext,
                                               server_ids: list[str],
                                               detailed: bool = False) -> dict[str, list]:
        """Each server's groups, from its ports: ``[{"name": ...}]`` (or, ``detailed``,
        the groups in Nova's format), a group the caller may not see left out."""
        neutron = self._client(context)
        ports = []
        for start in range(0, len(server_ids), MAX_SEARCH_IDS):
            ports += neutron.list("ports", device_id=server_ids[start:start + MAX_SEARCH_IDS],
                                  fields=["device_id", "security_groups"])
        sg_ids = sorted({sg for port in ports for sg in port.get("security_groups", [])})
        groups = {}
        if sg_ids:
            fields = {} if detailed else {"fields": ["id", "name"]}
            groups = {g["id"]: g for g in neutron.list("security_groups", id=sg_ids,
                                                       **fields)}
        bindings: dict[str, list] = {}
        for port in ports:
            for sg_id in port.get("security_groups", []):
                group = groups.get(sg_id)
                if group is None:
                    continue
                entry = _convert_to_nova_security_group_format(group) if detailed \
                    else {"name": group.get("name") or group["id"]}
                bindings.setdefault(port["device_id"], []).append(entry)
        return bindings

    @upstream(SG_API, "get_instance_security_groups")
    def get_instance_security_groups(self, context: RequestContext, instance: dict,
                                     detailed: bool = False) -> list:
        return self.get_instances_security_groups_bindings(
            context, [instance["uuid"]], detailed).get(instance["uuid"], [])

    def _group_id(self, context: RequestContext, name: str) -> str:
        try:
            return self._client(context).find_resourceid_by_name_or_id(
                "security_group", name, context.project_id)
        except NeutronClientException as exc:
            if exc.kwargs.get("status") == 409:
                raise NoUniqueMatch(exc.kwargs.get("reason")) from exc
            if exc.kwargs.get("status") == 404:
                raise SecurityGroupNotFound(
                    f"Security group {name} is not found for project "
                    f"{context.project_id}") from exc
            raise

    def _ports(self, context: RequestContext, instance: dict) -> list[dict]:
        ports = self._client(context).list("ports", device_id=instance["uuid"])
        if not ports:
            raise SecurityGroupNotFound(f"instance_id {instance['uuid']} could not be found "
                                        "as device id on any ports")
        return ports

    @upstream(SG_API, "add_to_instance")
    def add_to_instance(self, context: RequestContext, instance: dict, name: str) -> None:
        """Add the group to every port of the server (a port update each)."""
        sg_id = self._group_id(context, name)
        neutron = self._client(context)
        for port in self._ports(context, instance):
            groups = list(port.get("security_groups", []))
            groups.append(sg_id)
            LOG.info("Adding security group %s to port %s", sg_id, port["id"])
            try:
                neutron.update_port(port["id"], {"port": {"security_groups": groups}})
            except NeutronClientException as exc:
                if exc.kwargs.get("status") == 400:
                    raise SecurityGroupCannotBeApplied(exc.kwargs.get("reason")) from exc
                raise

    @upstream(SG_API, "remove_from_instance")
    def remove_from_instance(self, context: RequestContext, instance: dict,
                             name: str) -> None:
        """Take the group off every port of the server that has it."""
        sg_id = self._group_id(context, name)
        neutron = self._client(context)
        found = False
        for port in self._ports(context, instance):
            groups = list(port.get("security_groups", []))
            if sg_id not in groups:
                continue
            groups.remove(sg_id)
            LOG.info("Removing security group %s from port %s", sg_id, port["id"])
            neutron.update_port(port["id"], {"port": {"security_groups": groups}})
            found = True
        if not found:
            raise SecurityGroupNotFound(f"Security group {name} not associated with the "
                                        f"instance {instance['uuid']}")


def _convert_to_nova_security_group_format(group: dict) -> dict:
    return {"id": group["id"], "description": group.get("description"),
            "name": group["name"], "project_id": group["tenant_id"],
            "rules": [_convert_to_nova_security_group_rule_format(r)
                      for r in group.get("security_group_rules", [])
                      if r["direction"] == "ingress"]}


def _convert_to_nova_security_group_rule_format(rule: dict) -> dict:
    protocol = rule["protocol"]
    if protocol and rule.get("port_range_min") is None and rule.get("port_range_max") is None:
        ports = (1, 65535) if protocol.upper() in ("TCP", "UDP") else (-1, -1)
    else:
        ports = (rule.get("port_range_min"), rule.get("port_range_max"))
    return {"id": rule["id"], "parent_group_id": rule["security_group_id"],
            "protocol": protocol, "from_port": ports[0], "to_port": ports[1],
            "group_id": rule["remote_group_id"],
            "cidr": rule.get("remote_ip_prefix") or "0.0.0.0/0"}
