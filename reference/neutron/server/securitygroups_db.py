"""Security groups and their rules: the ``security-group`` extension's plugin half.

As upstream's ``SecurityGroupDbMixin`` (``neutron/db/securitygroups_db.py``),
which ML2 inherits: groups and rules in their tables, a port's groups as rows of
``securitygroupportbindings``, and a project's ``default`` group created on
first need (listing groups or rules, creating a group or a port), with the four
rules upstream's default templates give it: ingress from members of the same
group and egress to anywhere, for IPv4 and IPv6. Any other new group gets the
two egress rules only.

What changes a port's filter is told to the L2 agents
(``SecurityGroupServerNotifierRpcMixin``): a rule added or removed is
``security_groups_rule_updated``, a port joining or leaving a group is
``security_groups_member_updated`` for the groups whose rules name it as their
remote group. The agents then ask ``security_group_info_for_devices`` and
rewrite the ports' chains (``agent/securitygroups_rpc.py``).

Who may do what is upstream's default policy (``neutron/conf/policies/
security_group.py``): project readers see their groups, members change them,
admins everything; a rule is its group's (``ADMIN_OR_SG_OWNER_MEMBER``). A group
one may not see is not found. Left out: RBAC sharing (no ``shared``), tags,
address groups, the default-rule templates' API, port security disabled.
"""

from __future__ import annotations

import ipaddress
import logging
import uuid

from opentelemetry import trace
from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from novalab.reference.common.context import RequestContext
from novalab.reference.common.db import in_chunks
from novalab.reference.neutron import constants
from novalab.reference.neutron import exceptions as n_exc
from novalab.reference.neutron.db.models import (
    DefaultSecurityGroup,
    IPAllocation,
    Port,
    SecurityGroup,
    SecurityGroupPortBinding,
    SecurityGroupRule,
)
from novalab.reference.neutron.server import policy
from novalab.tracing import attributes as attr
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)

SG_DB = "neutron/db/securitygroups_db.py"
DEFAULT_NAME = "default"
DEFAULT_DESCRIPTION = "Default security group"
ETHERTYPES = ("IPv4", "IPv6")
# neutron_lib.constants.IP_PROTOCOL_MAP (the names a rule may use) and which take ports.
IP_PROTOCOL_MAP = {"ah": 51, "dccp": 33, "egp": 8, "esp": 50, "gre": 47, "hopopt": 0,
                   "icmp": 1, "igmp": 2, "ip": 0, "ipip": 4, "ipv6-encap": 41,
                   "ipv6-frag": 44, "ipv6-icmp": 58, "icmpv6": 58, "ipv6-nonxt": 59,
                   "ipv6-opts": 60, "ipv6-route": 43, "ospf": 89, "pgm": 113, "rsvp": 46,
                   "sctp": 132, "tcp": 6, "udp": 17, "udplite": 136, "vrrp": 112}
PROTO_ANY = (None, "any")
PORT_PROTOCOLS = {6, 17, 33, 132, 136}  # tcp, udp, dccp, sctp, udplite
ICMP_PROTOCOLS = {1, 58}


def isotime(value) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value else None


def convert_protocol(value) -> str | None:
    """``convert_protocol``: a name (lower-cased) or a number 0..255, as a string."""
    if value in PROTO_ANY:
        return None
    values = ("any", *IP_PROTOCOL_MAP)
    if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
        if 0 <= int(value) <= 255:
            return str(value)
        raise n_exc.SecurityGroupRuleInvalidProtocol(protocol=value, values=values)
    if isinstance(value, str) and value.lower() in IP_PROTOCOL_MAP:
        return value.lower()
    raise n_exc.SecurityGroupRuleInvalidProtocol(protocol=value, values=values)


def _port(value) -> int | None:
    """``convert_validate_port_value``: the schema let through 0..65535 or its digits."""
    return None if value in (None, "") else int(value)


def protocol_number(protocol: str | None) -> int | None:
    if protocol in PROTO_ANY:
        return None
    return IP_PROTOCOL_MAP.get(protocol, None) if not protocol.isdigit() else int(protocol)


class SecurityGroupDbMixin:
    """Mixed into :class:`~novalab.reference.neutron.server.plugin.Ml2Plugin`."""

    db = None
    tracer = None
    l2_notifier = None
    quotas = None  # the API's QuotaEngine, set by create_app

    # Dicts -------------------------------------------------------------------------------

    @staticmethod
    def _make_security_group_rule_dict(row: SecurityGroupRule, default_sg: bool) -> dict:
        normalized = str(ipaddress.ip_network(row.remote_ip_prefix, strict=False)) \
            if row.remote_ip_prefix else None
        return {"id": row.id, "tenant_id": row.project_id, "project_id": row.project_id,
                "security_group_id": row.security_group_id, "ethertype": row.ethertype,
                "direction": row.direction, "protocol": row.protocol,
                "port_range_min": row.port_range_min, "port_range_max": row.port_range_max,
                "remote_ip_prefix": row.remote_ip_prefix, "normalized_cidr": normalized,
                "remote_group_id": row.remote_group_id,
                "belongs_to_default_sg": default_sg, "description": row.description,
                "revision_number": row.revision_number,
                "created_at": isotime(row.created_at),
                "updated_at": isotime(row.updated_at or row.created_at)}

    def _make_security_group_dict(self, session: Session, row: SecurityGroup) -> dict:
        default = self._is_default(session, row)
        rules = session.scalars(select(SecurityGroupRule).where(
            SecurityGroupRule.security_group_id == row.id)
            .order_by(SecurityGroupRule.created_at, SecurityGroupRule.id))
        return {"id": row.id, "name": row.name, "description": row.description,
                "stateful": row.stateful, "tenant_id": row.project_id,
                "project_id": row.project_id,
                "security_group_rules": [self._make_security_group_rule_dict(r, default)
                                         for r in rules],
                "revision_number": row.revision_number,
                "created_at": isotime(row.created_at),
                "updated_at": isotime(row.updated_at or row.created_at)}

    @staticmethod
    def _is_default(session: Session, row: SecurityGroup) -> bool:
        return session.scalar(select(DefaultSecurityGroup.security_group_id).where(
            DefaultSecurityGroup.project_id == row.project_id)) == row.id

    # Lookups -----------------------------------------------------------------------------

    @staticmethod
    def _get_security_group_row(session: Session, context: RequestContext,
                                sg_id: str) -> SecurityGroup:
        row = session.get(SecurityGroup, sg_id)
        if row is None or not policy.can_see_security_group(context, row.project_id):
            raise n_exc.SecurityGroupNotFound(id=sg_id)
        return row

    # The default group -------------------------------------------------------------------

    @upstream(SG_DB, "SecurityGroupDbMixin._ensure_default_security_group")
    def _ensure_default_security_group(self, project_id: str) -> str:
        """The project's ``default`` group's id, created (with its four rules) if missing.

        Two requests may race to create it: the ``default_security_group`` row's primary
        key lets one win; the loser's transaction rolls back and it reads the winner's."""
        with self.db.session() as session:
            existing = session.get(DefaultSecurityGroup, project_id)
            if existing is not None:
                return existing.security_group_id
        sg_id = str(uuid.uuid4())
        self._quota_limit_check(project_id, 4)
        try:
            with self.db.session() as session:
                session.add(SecurityGroup(id=sg_id, project_id=project_id, name=DEFAULT_NAME,
                                          description=DEFAULT_DESCRIPTION, stateful=True))
                session.flush()
                session.add(DefaultSecurityGroup(project_id=project_id,
                                                 security_group_id=sg_id))
                session.flush()
                self._create_rules_from_template(session, project_id, sg_id, default_sg=True)
        except IntegrityError:
            with self.db.session() as session:
                return session.get(DefaultSecurityGroup, project_id).security_group_id
        trace.get_current_span().add_event("default security group created", {
            attr.NEUTRON_SECURITY_GROUP_IDS: [sg_id]})
        return sg_id

    def _quota_limit_check(self, project_id: str, rules: int) -> None:
        """``quota.QUOTAS.quota_limit_check(security_group_rule=delta)``: the template's
        rules must fit the project's rule limit (the limit alone, not its usage: a new
        group's rules may take the project past it, as upstream)."""
        if self.quotas is None:
            return
        limit = self.quotas.limits(project_id)["security_group_rule"]
        if 0 <= limit < rules:
            raise n_exc.OverQuota(overs="security_group_rule")

    @staticmethod
    def _create_rules_from_template(session: Session, project_id: str, sg_id: str,
                                    default_sg: bool) -> None:
        """Upstream's default rule templates: egress anywhere (every group), and ingress
        from the group's own members (the default group only), for IPv4 and IPv6."""
        for ethertype in ETHERTYPES:
            if default_sg:
                session.add(SecurityGroupRule(
                    id=str(uuid.uuid4()), project_id=project_id, security_group_id=sg_id,
                    direction="ingress", ethertype=ethertype, remote_group_id=sg_id,
                    description=""))
            session.add(SecurityGroupRule(
                id=str(uuid.uuid4()), project_id=project_id, security_group_id=sg_id,
                direction="egress", ethertype=ethertype, description=""))
        session.flush()

    # Groups ------------------------------------------------------------------------------

    @upstream(SG_DB, "SecurityGroupDbMixin.create_security_group")
    def create_security_group(self, context: RequestContext, attrs: dict) -> dict:
        if attrs.get("name", "").lower() == DEFAULT_NAME:
            raise n_exc.SecurityGroupDefaultAlreadyExists()
        project_id = self._project_for(context, attrs, "create_security_group")
        self._ensure_default_security_group(project_id)
        self._quota_limit_check(project_id, 2)
        with self.db.session() as session:
            row = SecurityGroup(id=str(uuid.uuid4()), project_id=project_id,
                                name=attrs.get("name", ""),
                                description=attrs.get("description", ""),
                                stateful=bool(attrs.get("stateful", True)))
            session.add(row)
            session.flush()
            self._create_rules_from_template(session, project_id, row.id, default_sg=False)
            return self._make_security_group_dict(session, row)

    def _ensure_default_for_listing(self, context: RequestContext, filters: dict) -> None:
        """A list, of groups or of rules, makes the listed project's default group
        first (upstream's ``get_security_groups`` does, so a new project sees it)."""
        project = (filters.get("project_id") or filters.get("tenant_id") or
                   [context.project_id])[0]
        if project and policy.can_see_security_group(context, project):
            self._ensure_default_security_group(project)

    def get_security_groups(self, context: RequestContext,
                            filters: dict | None = None) -> list[dict]:
        filters = filters or {}
        self._ensure_default_for_listing(context, filters)
        query = select(SecurityGroup).order_by(SecurityGroup.created_at, SecurityGroup.id)
        for key, column in (("id", SecurityGroup.id), ("name", SecurityGroup.name),
                            ("description", SecurityGroup.description),
                            ("project_id", SecurityGroup.project_id),
                            ("tenant_id", SecurityGroup.project_id)):
            if key in filters:
                query = query.where(column.in_(filters[key]))
        if "stateful" in filters:
            query = query.where(SecurityGroup.stateful.in_(
                [str(v).lower() in ("1", "true") for v in filters["stateful"]]))
        with self.db.session() as session:
            return [self._make_security_group_dict(session, row)
                    for row in session.scalars(query)
                    if policy.can_see_security_group(context, row.project_id)]

    def get_security_group(self, context: RequestContext, sg_id: str) -> dict:
        with self.db.session() as session:
            return self._make_security_group_dict(
                session, self._get_security_group_row(session, context, sg_id))

    @upstream(SG_DB, "SecurityGroupDbMixin.update_security_group")
    def update_security_group(self, context: RequestContext, sg_id: str, attrs: dict) -> dict:
        if attrs.get("name", "").lower() == DEFAULT_NAME:
            raise n_exc.SecurityGroupDefaultAlreadyExists()
        with self.db.session() as session:
            row = self._get_security_group_row(session, context, sg_id)
            policy.enforce(policy.can_change(context, row.project_id), "update_security_group")
            if "stateful" in attrs and bool(attrs["stateful"]) != row.stateful and \
                    self._bound_ports(session, [sg_id]):
                raise n_exc.SecurityGroupInUse(id=sg_id)
            if row.name == DEFAULT_NAME and "name" in attrs:
                raise n_exc.SecurityGroupCannotUpdateDefault()
            for key in ("name", "description", "stateful"):
                if key in attrs:
                    setattr(row, key, attrs[key])
            row.revision_number += 1
            session.flush()
            return self._make_security_group_dict(session, row)

    @upstream(SG_DB, "SecurityGroupDbMixin.delete_security_group")
    def delete_security_group(self, context: RequestContext, sg_id: str) -> None:
        with self.db.session() as session:
            row = self._get_security_group_row(session, context, sg_id)
            policy.enforce(policy.can_change(context, row.project_id), "delete_security_group")
            if self._bound_ports(session, [sg_id]):
                raise n_exc.SecurityGroupInUse(id=sg_id)
            if row.name == DEFAULT_NAME and not policy.is_admin(context):
                raise n_exc.SecurityGroupCannotRemoveDefault()
            # Rules naming it as their remote go with it (upstream: ON DELETE CASCADE).
            session.execute(delete(SecurityGroupRule).where(
                (SecurityGroupRule.security_group_id == sg_id) |
                (SecurityGroupRule.remote_group_id == sg_id)))
            session.execute(delete(DefaultSecurityGroup).where(
                DefaultSecurityGroup.security_group_id == sg_id))
            session.delete(row)

    # Rules -------------------------------------------------------------------------------

    @upstream(SG_DB, "SecurityGroupDbMixin.create_security_group_rule")
    def create_security_group_rule(self, context: RequestContext, attrs: dict) -> dict:
        rule = self._validate_security_group_rule(context, dict(attrs))
        with self.db.session() as session:
            group = self._get_security_group_row(session, context, rule["security_group_id"])
            policy.enforce(policy.can_change(context, group.project_id),
                           "create_security_group_rule")
            if rule["remote_group_id"]:
                remote = session.get(SecurityGroup, rule["remote_group_id"])
                if remote is None or not (policy.is_admin(context) or
                                          remote.project_id == rule["project_id"]):
                    raise n_exc.SecurityGroupNotFound(id=rule["remote_group_id"])
            self._check_for_duplicate_rules(session, rule)
            row = SecurityGroupRule(id=str(uuid.uuid4()), **rule)
            session.add(row)
            session.flush()
            created = self._make_security_group_rule_dict(row, self._is_default(session, group))
        self.notify_security_groups_rule_updated(context, [created["security_group_id"]])
        return created

    def _validate_security_group_rule(self, context: RequestContext, rule: dict) -> dict:
        """``_validate_security_group_rule``: canonical values, then upstream's checks."""
        project_id = rule.get("project_id") or rule.get("tenant_id") or context.project_id
        rule = {"project_id": project_id or "",
                "security_group_id": rule["security_group_id"],
                "direction": rule["direction"],
                "ethertype": {"ipv4": "IPv4", "ipv6": "IPv6"}[
                    rule.get("ethertype", "IPv4").lower()],
                "protocol": convert_protocol(rule.get("protocol")),
                "port_range_min": _port(rule.get("port_range_min")),
                "port_range_max": _port(rule.get("port_range_max")),
                "remote_ip_prefix": rule.get("remote_ip_prefix"),
                "remote_group_id": rule.get("remote_group_id"),
                "description": rule.get("description") or ""}
        if rule["ethertype"] == "IPv6" and rule["protocol"] in ("icmp", "icmpv6", "1"):
            rule["protocol"] = "ipv6-icmp" if rule["protocol"] != "1" else "58"
        if rule["port_range_min"] == 1 and rule["port_range_max"] == 65535:
            rule["port_range_min"] = rule["port_range_max"] = None  # the whole range
        self._validate_port_range(rule)
        if rule["remote_ip_prefix"]:
            network = ipaddress.ip_network(rule["remote_ip_prefix"], strict=False)
            # The prefix as given, with its mask (10.0.0.5 -> 10.0.0.5/32).
            address = rule["remote_ip_prefix"].split("/")[0]
            rule["remote_ip_prefix"] = f"{address}/{network.prefixlen}"
            if rule["ethertype"] != f"IPv{network.version}":
                raise n_exc.SecurityGroupRuleParameterConflict(
                    ethertype=rule["ethertype"], cidr=rule["remote_ip_prefix"])
        if rule["protocol"] in ("ipv6-icmp", "ipv6-encap", "ipv6-frag", "ipv6-nonxt",
                                "ipv6-opts", "ipv6-route", "58") and \
                rule["ethertype"] == "IPv4":
            raise n_exc.InvalidInput(error_message=f"Invalid ethertype IPv4 for protocol "
                                                   f"{rule['protocol']}.")
        if rule["remote_ip_prefix"] and rule["remote_group_id"]:
            raise n_exc.SecurityGroupMultipleRemoteEntites()
        return rule

    @staticmethod
    def _validate_port_range(rule: dict) -> None:
        low, high = rule["port_range_min"], rule["port_range_max"]
        if low is None and high is None:
            return
        if not rule["protocol"]:
            raise n_exc.SecurityGroupProtocolRequiredWithPorts()
        number = protocol_number(rule["protocol"])
        if number in PORT_PROTOCOLS:
            if low == 0 or high == 0:
                raise n_exc.SecurityGroupInvalidPortValue(port=0)
            if low is None or high is None or low > high:
                raise n_exc.SecurityGroupInvalidPortRange()
        elif number in ICMP_PROTOCOLS:
            for key, field in (("port_range_min", "type"), ("port_range_max", "code")):
                if rule[key] is not None and not 0 <= rule[key] <= 255:
                    raise n_exc.SecurityGroupInvalidIcmpValue(field=field, attr=key,
                                                              value=rule[key])
            if low is None and high is not None:
                raise n_exc.SecurityGroupMissingIcmpType(value=high)
        else:
            raise n_exc.SecurityGroupInvalidProtocolForPort(
                protocol=number, valid_port_protocols="DCCP, SCTP, TCP, UDP, UDPLITE")

    @staticmethod
    def _rule_key(rule) -> tuple:
        get = rule.get if isinstance(rule, dict) else (lambda k: getattr(rule, k))
        prefix = get("remote_ip_prefix")
        if prefix in ("0.0.0.0/0", "::/0"):
            prefix = None
        protocol = get("protocol")
        return (get("direction"), get("ethertype"), get("port_range_min"),
                get("port_range_max"), protocol_number(protocol) if protocol else None,
                get("remote_group_id"), prefix, get("security_group_id"))

    def _check_for_duplicate_rules(self, session: Session, rule: dict) -> None:
        key = self._rule_key(rule)
        for existing in session.scalars(select(SecurityGroupRule).where(
                SecurityGroupRule.security_group_id == rule["security_group_id"])):
            if self._rule_key(existing) == key:
                raise n_exc.SecurityGroupRuleExists(rule_id=existing.id)

    def _can_see_rule(self, session: Session, context: RequestContext,
                      row: SecurityGroupRule) -> bool:
        if policy.can_see_security_group(context, row.project_id):
            return True
        group = session.get(SecurityGroup, row.security_group_id)
        return group is not None and policy.can_see_security_group(context, group.project_id)

    def get_security_group_rules(self, context: RequestContext,
                                 filters: dict | None = None) -> list[dict]:
        filters = filters or {}
        self._ensure_default_for_listing(context, filters)
        query = select(SecurityGroupRule).order_by(SecurityGroupRule.created_at,
                                                   SecurityGroupRule.id)
        for key, column in (("id", SecurityGroupRule.id),
                            ("security_group_id", SecurityGroupRule.security_group_id),
                            ("remote_group_id", SecurityGroupRule.remote_group_id),
                            ("direction", SecurityGroupRule.direction),
                            ("ethertype", SecurityGroupRule.ethertype),
                            ("protocol", SecurityGroupRule.protocol),
                            ("remote_ip_prefix", SecurityGroupRule.remote_ip_prefix),
                            ("description", SecurityGroupRule.description),
                            ("project_id", SecurityGroupRule.project_id),
                            ("tenant_id", SecurityGroupRule.project_id)):
            if key in filters:
                query = query.where(column.in_(filters[key]))
        for key, column in (("port_range_min", SecurityGroupRule.port_range_min),
                            ("port_range_max", SecurityGroupRule.port_range_max)):
            if key in filters:
                try:
                    query = query.where(column.in_([int(v) for v in filters[key]]))
                except ValueError as exc:
                    raise n_exc.InvalidInput(
                        error_message=f"'{filters[key][0]}' is not an integer") from exc
        with self.db.session() as session:
            defaults = set(session.scalars(select(DefaultSecurityGroup.security_group_id)))
            return [self._make_security_group_rule_dict(row,
                                                        row.security_group_id in defaults)
                    for row in session.scalars(query)
                    if self._can_see_rule(session, context, row)]

    def _visible_rule(self, session: Session, context: RequestContext,
                      rule_id: str) -> tuple[SecurityGroupRule, SecurityGroup]:
        """A rule the caller may see, and its group; any other is not found (404)."""
        row = session.get(SecurityGroupRule, rule_id)
        if row is None or not self._can_see_rule(session, context, row):
            raise n_exc.SecurityGroupRuleNotFound(id=rule_id)
        return row, session.get(SecurityGroup, row.security_group_id)

    def get_security_group_rule(self, context: RequestContext, rule_id: str) -> dict:
        with self.db.session() as session:
            row, group = self._visible_rule(session, context, rule_id)
            return self._make_security_group_rule_dict(row, self._is_default(session, group))

    @upstream(SG_DB, "SecurityGroupDbMixin.delete_security_group_rule")
    def delete_security_group_rule(self, context: RequestContext, rule_id: str) -> None:
        with self.db.session() as session:
            row, group = self._visible_rule(session, context, rule_id)
            policy.enforce(policy.can_change(context, group.project_id) or
                           policy.can_change(context, row.project_id),
                           "delete_security_group_rule")
            sg_id = row.security_group_id
            session.delete(row)
        self.notify_security_groups_rule_updated(context, [sg_id])

    # Ports -------------------------------------------------------------------------------

    @upstream(SG_DB, "SecurityGroupDbMixin._get_security_groups_on_port")
    def _get_security_groups_on_port(self, context: RequestContext, port: dict,
                                     project_id: str) -> list[str] | None:
        """The groups a new or updated port asks for, each one the port's project may use
        (an admin any); one that is not, or does not exist, is not found. ``None``:
        the port did not say (a new one then gets its project's default group)."""
        if "security_groups" not in port:
            return None
        # convert_none_to_empty_list: null asks for no group at all.
        requested = list(dict.fromkeys(port["security_groups"] or []))
        with self.db.session() as session:
            rows = list(session.scalars(select(SecurityGroup).where(
                SecurityGroup.id.in_(requested))))
        valid = {r.id for r in rows if policy.is_admin(context) or r.project_id == project_id}
        missing = [sg for sg in requested if sg not in valid]
        if missing:
            raise n_exc.SecurityGroupNotFound(id=", ".join(missing))
        if len({r.stateful for r in rows}) > 1:
            raise n_exc.SecurityGroupConflict(
                reason="Cannot apply both stateful and stateless security groups on the "
                       "same port at the same time")
        return requested

    def _port_security_groups(self, context: RequestContext, attrs: dict, project_id: str,
                              device_owner: str) -> list[str]:
        """``_ensure_default_security_group_on_port``: the port's groups at create."""
        groups = self._get_security_groups_on_port(context, attrs, project_id)
        if groups is not None:
            return groups
        if device_owner.startswith("network:") or not project_id:
            return []  # neutron's own ports (DHCP) are in no group
        return [self._ensure_default_security_group(project_id)]

    @staticmethod
    def _process_port_create_security_group(session: Session, port_id: str,
                                            groups: list[str]) -> None:
        for sg_id in groups:
            session.add(SecurityGroupPortBinding(port_id=port_id, security_group_id=sg_id))
        session.flush()

    @staticmethod
    def _port_security_group_ids(session: Session, port_id: str) -> list[str]:
        return sorted(session.scalars(select(SecurityGroupPortBinding.security_group_id)
                                      .where(SecurityGroupPortBinding.port_id == port_id)))

    @staticmethod
    def _replace_port_security_groups(session: Session, port_id: str,
                                      groups: list[str]) -> None:
        session.execute(delete(SecurityGroupPortBinding).where(
            SecurityGroupPortBinding.port_id == port_id))
        for sg_id in groups:
            session.add(SecurityGroupPortBinding(port_id=port_id, security_group_id=sg_id))
        session.flush()

    @staticmethod
    def _bound_ports(session: Session, sg_ids: list[str]) -> list[str]:
        return list(session.scalars(select(SecurityGroupPortBinding.port_id).where(
            SecurityGroupPortBinding.security_group_id.in_(sg_ids))))

    # What the agents are told --------------------------------------------------------------

    def _hosts_of_groups(self, session: Session, sg_ids: list[str]) -> list[str]:
        """The hosts with a bound port in one of ``sg_ids``: whose L2 agent filters them."""
        if not sg_ids:
            return []
        return sorted(set(session.scalars(
            select(Port.binding_host_id).join(
                SecurityGroupPortBinding, SecurityGroupPortBinding.port_id == Port.id)
            .where(SecurityGroupPortBinding.security_group_id.in_(sg_ids),
                   Port.binding_vif_type == constants.VIF_TYPE_BRIDGE))) - {""})

    @upstream("neutron/api/rpc/handlers/securitygroups_rpc.py",
              "SecurityGroupAgentRpcApiMixin.security_groups_rule_updated")
    def notify_security_groups_rule_updated(self, context: RequestContext,
                                            sg_ids: list[str]) -> None:
        """The rules of ``sg_ids`` changed: the agents filtering their ports re-read them."""
        trace.get_current_span().set_attribute(attr.NEUTRON_SECURITY_GROUP_IDS, sg_ids)
        with self.db.session() as session:
            hosts = self._hosts_of_groups(session, sg_ids)
        if self.l2_notifier:
            self.l2_notifier.security_groups_rule_updated(context, sg_ids, hosts)

    @upstream("neutron/api/rpc/handlers/securitygroups_rpc.py",
              "SecurityGroupAgentRpcApiMixin.security_groups_member_updated")
    def notify_security_groups_member_updated(self, context: RequestContext,
                                              sg_ids: list[str]) -> None:
        """Ports joined or left ``sg_ids``: the agents whose ports have rules naming one
        of them as remote group refresh those members' addresses."""
        if not sg_ids:
            return
        trace.get_current_span().set_attribute(attr.NEUTRON_SECURITY_GROUP_IDS, sg_ids)
        with self.db.session() as session:
            referring = set(session.scalars(select(SecurityGroupRule.security_group_id).where(
                SecurityGroupRule.remote_group_id.in_(sg_ids))))
            hosts = self._hosts_of_groups(session, sorted(referring))
        if hosts and self.l2_notifier:
            self.l2_notifier.security_groups_member_updated(context, sg_ids, hosts)

    # The agents' questions ---------------------------------------------------------------

    def security_group_info_for_ports(self, port_ids: list[str]) -> dict:
        """``SecurityGroupInfoAPIMixin.security_group_info_for_ports``: each port (its
        MAC, addresses and groups), each of their groups' rules, and the addresses of
        every group a rule names as its remote (``sg_member_ips``)."""
        with self.db.session() as session:
            # Every device's port in one query and its addresses and groups in two
            # (a port at a time, an agent's refresh grew with the ports on its host).
            rows = {row.id: row for chunk in in_chunks(port_ids)
                    for row in session.scalars(select(Port).where(Port.id.in_(chunk)))}
            found = [rows[port_id] for port_id in dict.fromkeys(port_ids) if port_id in rows]
            devices = {}
            for port in self._port_dicts(session, found):
                port_id = port["id"]
                devices[port_id] = {
                    "id": port_id, "device": port_id, "network_id": port["network_id"],
                    "mac_address": port["mac_address"], "fixed_ips": [
                        ip["ip_address"] for ip in port["fixed_ips"]],
                    "security_groups": port["security_groups"],
                    "device_owner": port["device_owner"]}
            sg_ids = sorted({sg for d in devices.values() for sg in d["security_groups"]})
            groups = {sg.id: sg for sg in session.scalars(
                select(SecurityGroup).where(SecurityGroup.id.in_(sg_ids)))}
            security_groups: dict[str, list[dict]] = {sg: [] for sg in sg_ids}
            remotes: set[str] = set()
            for rule in session.scalars(select(SecurityGroupRule).where(
                    SecurityGroupRule.security_group_id.in_(sg_ids))
                    .order_by(SecurityGroupRule.created_at, SecurityGroupRule.id)):
                security_groups[rule.security_group_id].append({
                    "direction": rule.direction, "ethertype": rule.ethertype,
                    "protocol": rule.protocol, "port_range_min": rule.port_range_min,
                    "port_range_max": rule.port_range_max,
                    "remote_ip_prefix": rule.remote_ip_prefix,
                    "remote_group_id": rule.remote_group_id,
                    "security_group_id": rule.security_group_id})
                if rule.remote_group_id:
                    remotes.add(rule.remote_group_id)
            members = {}
            for sg_id in sorted(remotes):
                # The group's members' addresses in one query (a port and its
                # addresses read one member at a time grew with the group).
                addresses = sorted(set(session.scalars(select(IPAllocation.ip_address).join(
                    SecurityGroupPortBinding,
                    SecurityGroupPortBinding.port_id == IPAllocation.port_id)
                    .where(SecurityGroupPortBinding.security_group_id == sg_id))),
                    key=ipaddress.ip_address)
                members[sg_id] = {"IPv4": [a for a in addresses if ":" not in a],
                                  "IPv6": [a for a in addresses if ":" in a]}
            stateful = {sg: groups[sg].stateful for sg in groups}
        return {"devices": devices, "security_groups": security_groups,
                "sg_member_ips": members, "sg_stateful": stateful}
