"""The core plugin: networks, subnets and ports in the database, and what follows.

Named after ML2 (``neutron/plugins/ml2/plugin.py``), whose seams it keeps: a
port is saved with its IP allocations and binding in one transaction, then
provisioning blocks hold it in ``DOWN`` until the DHCP and L2 agents report, and
``_port_provisioned`` sets it ``ACTIVE``, which makes the Nova notifier send
``network-vif-plugged``. What ML2 spreads over mechanism and type drivers is
inlined: every network is one *flat* segment, and a port binds (``vif_type``
``bridge``) on any host with a live L2 agent, else fails to bind
(``binding_failed``), as ML2 does when no mechanism driver can bind it.

Security groups are the mixin's (``securitygroups_db.py``): a port is in its
project's ``default`` group unless it names others. Left out: routers, floating
IPs, segments, IPv6, extra DHCP options, allowed address pairs, port security
disabled and updating a port's fixed IPs. Bodies are
checked and quotas counted by the API layer before the plugin runs
(``attributes.py``, ``quotas.py``).
"""

from __future__ import annotations

import ipaddress
import logging
import uuid
from datetime import datetime

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode
from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from sqlalchemy.orm.exc import StaleDataError

from novalab.reference.common.context import RequestContext, get_admin_context
from novalab.reference.common.db import Database, in_chunks
from novalab.reference.common.faults import NO_FAULTS
from novalab.reference.neutron import constants
from novalab.reference.neutron import exceptions as n_exc
from novalab.reference.neutron.db.models import (
    IPAllocation,
    Network,
    Port,
    SecurityGroupPortBinding,
    Subnet,
)
from novalab.reference.neutron.db.provisioning_blocks import (
    DHCP_ENTITY,
    L2_AGENT_ENTITY,
    ProvisioningBlocks,
)
from novalab.reference.neutron.server import ipam, policy
from novalab.reference.neutron.server.agents_db import AgentDbMixin
from novalab.reference.neutron.server.notifiers import VIF_PLUGGED
from novalab.reference.neutron.server.securitygroups_db import SecurityGroupDbMixin
from novalab.tracing import attributes as attr
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)

ML2 = "neutron/plugins/ml2/plugin.py"
MAX_RETRIES = 10  # races on an address or a MAC are retried (upstream: db retries)

# Which attributes a client may send, and who may set each, is the attribute map's
# (attributes.py), checked by the API before the plugin runs.


def isotime(value: datetime | None) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value else None


class Ml2Plugin(SecurityGroupDbMixin):
    def __init__(self, db: Database, tracer, agents: AgentDbMixin | None = None):
        self.db = db
        self.tracer = tracer
        self.agents = agents or AgentDbMixin(db, tracer)
        self.blocks = ProvisioningBlocks(db, tracer)
        self.blocks.subscribe(self._port_provisioned)
        # Set by the service builder once the RPC transport exists (None: no one to tell).
        self.dhcp_notifier = None
        self.l2_notifier = None
        self.nova_notifier = None
        self.faults = NO_FAULTS  # the deployment's, set by its builder

    # Dicts as the API returns them -------------------------------------------------------

    def _network_dict(self, session: Session, row: Network, context: RequestContext) -> dict:
        subnets = session.scalars(select(Subnet.id).where(Subnet.network_id == row.id)
                                  .order_by(Subnet.created_at, Subnet.id))
        values = {
            "id": row.id, "name": row.name, "tenant_id": row.project_id,
            "project_id": row.project_id, "admin_state_up": row.admin_state_up,
            "status": row.status, "subnets": list(subnets), "shared": row.shared,
            "mtu": row.mtu, "router:external": False, "description": "",
            "revision_number": row.revision_number, "created_at": isotime(row.created_at),
            "updated_at": isotime(row.updated_at or row.created_at), "tags": [],
        }
        if policy.is_admin_or_service(context):  # provider attributes are admin-only
            values.update({"provider:network_type": row.network_type,
                           "provider:physical_network": row.physical_network,
                           "provider:segmentation_id": row.segmentation_id})
        return values

    @staticmethod
    def _subnet_dict(row: Subnet) -> dict:
        return {
            "id": row.id, "name": row.name, "tenant_id": row.project_id,
            "project_id": row.project_id, "network_id": row.network_id,
            "ip_version": row.ip_version, "cidr": row.cidr, "gateway_ip": row.gateway_ip,
            "enable_dhcp": row.enable_dhcp, "allocation_pools": row.allocation_pools,
            "dns_nameservers": row.dns_nameservers, "host_routes": row.host_routes,
            "description": "", "revision_number": row.revision_number,
            "created_at": isotime(row.created_at),
            "updated_at": isotime(row.updated_at or row.created_at),
        }

    @staticmethod
    def _port_dict(session: Session, row: Port, context: RequestContext | None = None) -> dict:
        return Ml2Plugin._port_dicts(session, [row], context)[0]

    @staticmethod
    def _port_dicts(session: Session, rows: list[Port],
                    context: RequestContext | None = None) -> list[dict]:
        """The API's view of ``rows``: their addresses and security groups read for all
        of them at once (two queries, not two a port: a network's port list grew with
        its ports, and every boot lists them; docs/perf/scale.md)."""
        ids = [row.id for row in rows]
        ips: dict[str, list[IPAllocation]] = {}
        groups: dict[str, list[str]] = {}
        for chunk in in_chunks(ids):
            for ip in session.scalars(select(IPAllocation)
                                      .where(IPAllocation.port_id.in_(chunk))):
                ips.setdefault(ip.port_id, []).append(ip)
            for port_id, group_id in session.execute(
                    select(SecurityGroupPortBinding.port_id,
                           SecurityGroupPortBinding.security_group_id)
                    .where(SecurityGroupPortBinding.port_id.in_(chunk))):
                groups.setdefault(port_id, []).append(group_id)
        return [Ml2Plugin._port_values(row, ips.get(row.id, []),
                                           sorted(groups.get(row.id, [])), context)
                for row in rows]

    @staticmethod
    def _port_values(row: Port, ips: list[IPAllocation], groups: list[str],
                     context: RequestContext | None) -> dict:
        values = {
            "id": row.id, "name": row.name, "tenant_id": row.project_id,
            "project_id": row.project_id, "network_id": row.network_id,
            "mac_address": row.mac_address, "admin_state_up": row.admin_state_up,
            "status": row.status, "device_id": row.device_id, "device_owner": row.device_owner,
            "fixed_ips": [{"subnet_id": ip.subnet_id, "ip_address": ip.ip_address}
                          for ip in sorted(ips, key=lambda ip: ipam._ip(ip.ip_address))],
            "allowed_address_pairs": [], "extra_dhcp_opts": [],
            "security_groups": groups,
            "description": "", "revision_number": row.revision_number,
            "created_at": isotime(row.created_at),
            "updated_at": isotime(row.updated_at or row.created_at),
        }
        if context is None or policy.is_admin_or_service(context):
            values.update({"binding:host_id": row.binding_host_id,
                           "binding:vif_type": row.binding_vif_type,
                           "binding:vif_details": row.binding_vif_details,
                           "binding:vnic_type": row.binding_vnic_type,
                           "binding:profile": row.binding_profile})
        return values

    # Lookups -----------------------------------------------------------------------------

    @staticmethod
    def _get_network(session: Session, context: RequestContext, network_id: str) -> Network:
        row = session.get(Network, network_id)
        if row is None or not policy.can_see_network(context, row):
            raise n_exc.NetworkNotFound(net_id=network_id)
        return row

    @staticmethod
    def _get_port(session: Session, context: RequestContext, port_id: str) -> Port:
        row = session.get(Port, port_id)
        if row is None or not policy.can_see_port(context, row):
            raise n_exc.PortNotFound(port_id=port_id)
        return row

    @staticmethod
    def _get_subnet(session: Session, context: RequestContext, subnet_id: str) -> Subnet:
        row = session.get(Subnet, subnet_id)
        network = session.get(Network, row.network_id) if row else None
        if row is None or not (policy.is_admin_or_service(context) or
                               policy.owns(context, row.project_id) or
                               (network is not None and network.shared)):
            raise n_exc.SubnetNotFound(subnet_id=subnet_id)
        return row

    # Networks ----------------------------------------------------------------------------

    @upstream(ML2, "Ml2Plugin.create_network")
    def create_network(self, context: RequestContext, attrs: dict) -> dict:
        project_id = self._project_for(context, attrs, "create_network")
        # Who may set shared and provider:* is the attribute map's (attributes.py).
        shared = bool(attrs.get("shared", False))
        provider = {k: attrs[k] for k in attrs if k.startswith("provider:")}
        row = Network(id=str(uuid.uuid4()), project_id=project_id, name=attrs.get("name", ""),
                      admin_state_up=bool(attrs.get("admin_state_up", True)), shared=shared,
                      mtu=int(attrs.get("mtu", 1500)),
                      physical_network=provider.get("provider:physical_network"))
        with self.db.session() as session:
            session.add(row)
            session.flush()
            network = self._network_dict(session, row, context)
        self._notify_dhcp(context, "network_create_end", {"network": {"id": row.id}})
        return network

    def get_network(self, context: RequestContext, network_id: str) -> dict:
        with self.db.session() as session:
            return self._network_dict(session, self._get_network(session, context, network_id),
                                      context)

    def get_networks(self, context: RequestContext, filters: dict | None = None) -> list[dict]:
        filters = filters or {}
        query = select(Network).order_by(Network.created_at, Network.id)
        for key, column in (("id", Network.id), ("name", Network.name),
                            ("project_id", Network.project_id),
                            ("tenant_id", Network.project_id), ("status", Network.status)):
            if key in filters:
                query = query.where(column.in_(filters[key]))
        for key, column in (("shared", Network.shared),
                            ("admin_state_up", Network.admin_state_up)):
            if key in filters:
                query = query.where(column.in_([_bool(v) for v in filters[key]]))
        if "router:external" in filters and not any(
                _bool(v) is False for v in filters["router:external"]):
            # external-net: no network here is external (no L3 agent, no router), so
            # ``network list --external`` is empty and ``--internal`` lists them all.
            return []
        with self.db.session() as session:
            return [self._network_dict(session, row, context) for row in session.scalars(query)
                    if policy.can_see_network(context, row)]

    @upstream(ML2, "Ml2Plugin.update_network")
    def update_network(self, context: RequestContext, network_id: str, attrs: dict) -> dict:
        with self.db.session() as session:
            row = self._get_network(session, context, network_id)
            policy.enforce(policy.can_change(context, row.project_id), "update_network")
            if "shared" in attrs:
                row.shared = bool(attrs["shared"])
            if "name" in attrs:
                row.name = attrs["name"]
            if "admin_state_up" in attrs:
                row.admin_state_up = bool(attrs["admin_state_up"])
            row.revision_number += 1
            session.flush()
            return self._network_dict(session, row, context)

    @upstream(ML2, "Ml2Plugin.delete_network")
    def delete_network(self, context: RequestContext, network_id: str) -> None:
        """Refused while ports other than the network's own DHCP ports are on it."""
        with self.db.session() as session:
            row = self._get_network(session, context, network_id)
            policy.enforce(policy.can_change(context, row.project_id), "delete_network")
            ports = list(session.scalars(select(Port).where(Port.network_id == network_id)))
            if any(p.device_owner != constants.DEVICE_OWNER_DHCP for p in ports):
                raise n_exc.NetworkInUse(net_id=network_id)
            for port in ports:
                self.blocks.remove_provisioning_component(session, port.id)
                session.delete(port)
            session.flush()
            session.execute(delete(IPAllocation).where(IPAllocation.network_id == network_id))
            session.execute(delete(Subnet).where(Subnet.network_id == network_id))
            session.delete(row)
        self._notify_dhcp(context, "network_delete_end", {"network_id": network_id})

    # Subnets -----------------------------------------------------------------------------

    @upstream(ML2, "Ml2Plugin.create_subnet")
    def create_subnet(self, context: RequestContext, attrs: dict) -> dict:
        for required in ("network_id", "cidr"):
            if not attrs.get(required):
                raise n_exc.BadRequest(resource="subnet",
                                       msg=f"Failed to parse request. Required attribute "
                                           f"'{required}' not specified")
        if int(attrs.get("ip_version", 4)) != 4:
            raise n_exc.InvalidInput(error_message="only IPv4 subnets are supported by novalab")
        cidr = attrs["cidr"]
        gateway = attrs["gateway_ip"] if "gateway_ip" in attrs else None
        if "gateway_ip" not in attrs:
            try:
                gateway = ipam.default_gateway(cidr)
            except ValueError as exc:
                raise n_exc.InvalidInput(
                    error_message=f"'{cidr}' is not a valid IP subnet") from exc
        pools = attrs.get("allocation_pools") or None
        if pools is None:
            try:
                pools = ipam.default_pools(cidr, gateway)
            except ValueError as exc:
                raise n_exc.InvalidInput(
                    error_message=f"'{cidr}' is not a valid IP subnet") from exc
        cidr = ipam.validate_subnet(cidr, gateway, pools)
        with self.db.session() as session:
            network = self._get_network(session, context, attrs["network_id"])
            policy.enforce(policy.can_change(context, network.project_id), "create_subnet")
            for other in session.scalars(select(Subnet).where(
                    Subnet.network_id == network.id)):
                if ipaddress.ip_network(other.cidr).overlaps(ipaddress.ip_network(cidr)):
                    raise n_exc.InvalidInput(
                        error_message=f"Requested subnet with cidr: {cidr} for network: "
                                      f"{network.id} overlaps with another subnet")
            row = Subnet(id=str(uuid.uuid4()), project_id=network.project_id,
                         network_id=network.id, name=attrs.get("name", ""), ip_version=4,
                         cidr=cidr, gateway_ip=gateway,
                         enable_dhcp=bool(attrs.get("enable_dhcp", True)),
                         allocation_pools=pools,
                         dns_nameservers=list(attrs.get("dns_nameservers") or []),
                         host_routes=list(attrs.get("host_routes") or []))
            session.add(row)
            session.flush()
            subnet = self._subnet_dict(row)
        self._notify_dhcp(context, "subnet_create_end", {"subnet": subnet})
        return subnet

    def get_subnet(self, context: RequestContext, subnet_id: str) -> dict:
        with self.db.session() as session:
            return self._subnet_dict(self._get_subnet(session, context, subnet_id))

    def get_subnets(self, context: RequestContext, filters: dict | None = None) -> list[dict]:
        filters = filters or {}
        query = select(Subnet).order_by(Subnet.created_at, Subnet.id)
        for key, column in (("id", Subnet.id), ("name", Subnet.name),
                            ("network_id", Subnet.network_id), ("cidr", Subnet.cidr),
                            ("project_id", Subnet.project_id),
                            ("tenant_id", Subnet.project_id)):
            if key in filters:
                query = query.where(column.in_(filters[key]))
        if "enable_dhcp" in filters:
            query = query.where(Subnet.enable_dhcp.in_([_bool(v)
                                                        for v in filters["enable_dhcp"]]))
        with self.db.session() as session:
            rows = list(session.scalars(query))
            shared = {n.id for n in session.scalars(select(Network).where(Network.shared))}
        return [self._subnet_dict(r) for r in rows
                if policy.is_admin_or_service(context) or policy.owns(context, r.project_id)
                or r.network_id in shared]

    @upstream(ML2, "Ml2Plugin.update_subnet")
    def update_subnet(self, context: RequestContext, subnet_id: str, attrs: dict) -> dict:
        with self.db.session() as session:
            row = self._get_subnet(session, context, subnet_id)
            policy.enforce(policy.can_change(context, row.project_id), "update_subnet")
            if "name" in attrs:
                row.name = attrs["name"]
            if "enable_dhcp" in attrs:
                row.enable_dhcp = bool(attrs["enable_dhcp"])
            if "dns_nameservers" in attrs:
                row.dns_nameservers = list(attrs["dns_nameservers"] or [])
            row.revision_number += 1
            session.flush()
            subnet = self._subnet_dict(row)
        self._notify_dhcp(context, "subnet_update_end", {"subnet": subnet})
        return subnet

    @upstream(ML2, "Ml2Plugin.delete_subnet")
    def delete_subnet(self, context: RequestContext, subnet_id: str) -> None:
        with self.db.session() as session:
            row = self._get_subnet(session, context, subnet_id)
            policy.enforce(policy.can_change(context, row.project_id), "delete_subnet")
            users = session.execute(
                select(Port.id, Port.device_owner).join(
                    IPAllocation, IPAllocation.port_id == Port.id)
                .where(IPAllocation.subnet_id == subnet_id)).all()
            if any(owner != constants.DEVICE_OWNER_DHCP for _id, owner in users):
                raise n_exc.SubnetInUse(subnet_id=subnet_id,
                                        reason="One or more ports have an IP allocation "
                                               "from this subnet")
            session.execute(delete(IPAllocation).where(IPAllocation.subnet_id == subnet_id))
            network_id = row.network_id
            session.delete(row)
        self._notify_dhcp(context, "subnet_delete_end",
                          {"subnet_id": subnet_id, "network_id": network_id})

    # Ports -------------------------------------------------------------------------------

    @upstream(ML2, "Ml2Plugin.create_port")
    def create_port(self, context: RequestContext, attrs: dict) -> dict:
        if not attrs.get("network_id"):
            raise n_exc.BadRequest(resource="port", msg="Failed to parse request. Required "
                                                        "attribute 'network_id' not specified")
        owner = attrs.get("device_owner", "")
        policy.enforce(not owner.startswith("network:") or policy.is_admin(context),
                       "create_port:device_owner")
        with self.db.session() as session:  # a network one cannot see is a 404 first
            self._get_network(session, context, attrs["network_id"])
        project_id = self._project_for(context, attrs, "create_port", service=True)
        groups = self._port_security_groups(context, attrs, project_id, owner)
        host = attrs.get("binding:host_id") or ""
        # Who is alive is read before the transaction, as ML2 asks the agents table first.
        dhcp_agents = self.agents.get_agents(constants.AGENT_TYPE_DHCP)
        l2_agents = self.agents.get_agents(constants.AGENT_TYPE_L2, host) if host else []
        for attempt in range(MAX_RETRIES):
            try:
                port, network = self._create_port_db(context, attrs, project_id, host,
                                                     dhcp_agents, l2_agents, groups)
                break
            except IntegrityError:
                if attrs.get("fixed_ips") or attrs.get("mac_address") or \
                        attempt == MAX_RETRIES - 1:
                    raise n_exc.Conflict("The requested address or MAC is already in use "
                                         f"on network {attrs['network_id']}.") from None
                LOG.debug("Address race creating a port; retrying")
        trace.get_current_span().set_attributes({attr.NEUTRON_PORT_ID: port["id"],
                                                 attr.NEUTRON_NETWORK_ID: port["network_id"]})
        self._after_create_port(context, port, network)
        return port

    def _create_port_db(self, context, attrs, project_id, host, dhcp_agents, l2_agents,
                        groups):
        with self.db.session() as session:
            network = self._get_network(session, context, attrs["network_id"])
            row = Port(id=str(uuid.uuid4()), project_id=project_id, network_id=network.id,
                       name=attrs.get("name", ""),
                       admin_state_up=bool(attrs.get("admin_state_up", True)),
                       mac_address=self._mac_for(session, network.id, attrs.get("mac_address")),
                       status=constants.PORT_STATUS_DOWN,
                       device_id=attrs.get("device_id", ""),
                       device_owner=attrs.get("device_owner", ""),
                       binding_vnic_type=attrs.get("binding:vnic_type", constants.VNIC_NORMAL),
                       binding_profile=attrs.get("binding:profile") or {})
            session.add(row)
            session.flush()
            allocations = self._allocate_ips_for_port(session, network, row,
                                                      attrs.get("fixed_ips"))
            self._process_port_create_security_group(session, row.id, groups)
            if host:
                self._bind_port(row, host, l2_agents)
            self._setup_dhcp_agent_provisioning_component(session, row, allocations,
                                                          dhcp_agents)
            self._insert_provisioning_block(session, row)
            session.flush()
            return (self._port_dict(session, row, context),
                    self._network_dict(session, network, get_admin_context()))

    def _after_create_port(self, context: RequestContext, port: dict, network: dict) -> None:
        self._notify_dhcp(context, "port_create_end", {"port": port})
        self.notify_security_groups_member_updated(context, port["security_groups"])
        self._notify_port_updated(context, port, network)

    def get_port(self, context: RequestContext, port_id: str) -> dict:
        with self.db.session() as session:
            return self._port_dict(session, self._get_port(session, context, port_id), context)

    def get_ports(self, context: RequestContext, filters: dict | None = None) -> list[dict]:
        """Ports matching ``filters`` (each a list of accepted values) that ``context`` sees.

        ``fixed_ips`` filters take neutron's ``ip_address=...`` / ``subnet_id=...`` form.
        """
        filters = filters or {}
        query = select(Port).order_by(Port.created_at, Port.id)
        for key, column in (("id", Port.id), ("name", Port.name),
                            ("network_id", Port.network_id), ("device_id", Port.device_id),
                            ("device_owner", Port.device_owner),
                            ("mac_address", Port.mac_address), ("status", Port.status),
                            ("project_id", Port.project_id), ("tenant_id", Port.project_id),
                            ("binding:host_id", Port.binding_host_id)):
            if key in filters:
                query = query.where(column.in_(filters[key]))
        if "admin_state_up" in filters:
            query = query.where(Port.admin_state_up.in_([_bool(v)
                                                         for v in filters["admin_state_up"]]))
        for item in filters.get("fixed_ips", []):
            key, _, value = item.partition("=")
            if key not in ("ip_address", "subnet_id") or not value:
                raise n_exc.InvalidInput(error_message=f"Invalid fixed_ips filter '{item}'")
            column = IPAllocation.ip_address if key == "ip_address" else IPAllocation.subnet_id
            query = query.where(Port.id.in_(select(IPAllocation.port_id).where(column == value)))
        with self.db.session() as session:
            return self._port_dicts(session, [row for row in session.scalars(query)
                                              if policy.can_see_port(context, row)], context)

    @upstream(ML2, "Ml2Plugin.update_port")
    def update_port(self, context: RequestContext, port_id: str, attrs: dict) -> dict:
        new_host = attrs.get("binding:host_id")
        l2_agents = self.agents.get_agents(constants.AGENT_TYPE_L2, new_host) if new_host else []
        with self.db.session() as session:
            row = self._get_port(session, context, port_id)
            policy.enforce(policy.can_change_port(context, row.project_id), "update_port")
            project_id = row.project_id
        groups = self._get_security_groups_on_port(context, attrs, project_id)
        with self.db.session() as session:
            row = self._get_port(session, context, port_id)
            old_groups = self._port_security_group_ids(session, port_id)
            if groups is not None:
                self._replace_port_security_groups(session, port_id, groups)
            if attrs.get("device_owner", "").startswith("network:"):
                policy.enforce(policy.is_admin(context), "update_port:device_owner")
            old_host = row.binding_host_id
            for key in ("name", "admin_state_up", "device_id", "device_owner", "description"):
                if key in attrs and hasattr(row, key):
                    setattr(row, key, attrs[key])
            if "binding:profile" in attrs:
                row.binding_profile = attrs["binding:profile"] or {}
            if "binding:vnic_type" in attrs:
                row.binding_vnic_type = attrs["binding:vnic_type"]
            if new_host is not None and new_host != old_host:
                if new_host:
                    self._bind_port(row, new_host, l2_agents)
                    self._insert_provisioning_block(session, row)
                else:  # unbound: the port is nowhere, so it is down
                    row.binding_host_id, row.binding_vif_type = "", constants.VIF_TYPE_UNBOUND
                    row.binding_vif_details = {}
                    row.status = constants.PORT_STATUS_DOWN
                    self.blocks.remove_provisioning_component(session, row.id, L2_AGENT_ENTITY)
            row.revision_number += 1
            session.flush()
            port = self._port_dict(session, row, context)
            # What the agent is told holds the binding, whoever asked (a member
            # changing the port's groups does not see it).
            for_agent = self._port_dict(session, row)
            network = self._network_dict(session, session.get(Network, row.network_id),
                                         get_admin_context())
        trace.get_current_span().set_attributes({attr.NEUTRON_PORT_ID: port_id,
                                                 attr.NEUTRON_NETWORK_ID: port["network_id"]})
        self._notify_dhcp(context, "port_update_end", {"port": port})
        groups_changed = groups is not None and set(groups) != set(old_groups)
        if groups_changed:  # is_security_group_member_updated: the agent refilters it
            self.notify_security_groups_member_updated(
                context, sorted(set(groups) ^ set(old_groups)))
        if old_host and old_host != row.binding_host_id and self.l2_notifier:
            self.l2_notifier.port_delete(context, port_id, port["network_id"], old_host)
        self._notify_port_updated(context, for_agent if groups_changed else port, network)
        return port

    @upstream(ML2, "Ml2Plugin.delete_port")
    def delete_port(self, context: RequestContext, port_id: str) -> None:
        with self.db.session() as session:
            row = self._get_port(session, context, port_id)
            policy.enforce(policy.can_change_port(context, row.project_id), "delete_port")
            if row.device_owner.startswith("network:"):
                policy.enforce(policy.is_admin(context), "delete_port:device_owner")
            port = self._port_dict(session, row)
            self.blocks.remove_provisioning_component(session, port_id)
            session.execute(delete(IPAllocation).where(IPAllocation.port_id == port_id))
            session.execute(delete(SecurityGroupPortBinding).where(
                SecurityGroupPortBinding.port_id == port_id))
            session.delete(row)
        self._notify_dhcp(context, "port_delete_end", {
            "port_id": port_id, "network_id": port["network_id"],
            "fixed_ips": port["fixed_ips"]})
        if port["binding:host_id"] and self.l2_notifier:
            self.l2_notifier.port_delete(context, port_id, port["network_id"],
                                         port["binding:host_id"])
        self.notify_security_groups_member_updated(context, port["security_groups"])
        if self.nova_notifier and port["device_id"] and \
                port["device_owner"].startswith(constants.DEVICE_OWNER_COMPUTE_PREFIX):
            self.nova_notifier.send_events([{"name": "network-vif-deleted",
                                             "server_uuid": port["device_id"],
                                             "tag": port_id}])

    @upstream(ML2, "Ml2Plugin.update_port_status")
    def update_port_status(self, context: RequestContext, port_id: str, status: str) -> bool:
        """Save a new status; tell Nova when that means a VIF was (un)plugged."""
        span = trace.get_current_span()
        span.set_attributes({attr.NEUTRON_PORT_ID: port_id,
                             attr.NEUTRON_PORT_STATUS: status})
        try:
            with self.db.session() as session:
                row = session.get(Port, port_id)
                if row is None or row.status == status:
                    return False
                previous, row.status = row.status, status
                row.revision_number += 1
                session.flush()
                port = self._port_dict(session, row)
        except StaleDataError:
            LOG.debug("Port %s was deleted concurrently", port_id)  # as upstream ML2
            return False
        if self.nova_notifier:
            event = self.nova_notifier.status_event(port, previous, status)
            if event and event["name"] == VIF_PLUGGED and \
                    self.faults.active("vif-plugged-timeout", project_id=port["project_id"]):
                # As with notify_nova_on_port_status_changes = False: the port is
                # wired and ACTIVE, and nova is never told.
                LOG.warning("Not notifying nova of %s for port %s (fault "
                            "vif-plugged-timeout)", VIF_PLUGGED, port_id)
            elif event:
                self.nova_notifier.send_events([event])
        return True

    # Provisioning ------------------------------------------------------------------------

    @upstream(ML2, "Ml2Plugin._setup_dhcp_agent_provisioning_component")
    def _setup_dhcp_agent_provisioning_component(self, session, row: Port, allocations,
                                                 dhcp_agents) -> None:
        """Block on DHCP if a DHCP agent will serve one of the port's subnets."""
        if row.device_owner.startswith("network:"):
            return  # neutron's own ports are never held back
        subnets = {a.subnet_id for a in allocations}
        dhcp_on = any(s.enable_dhcp for s in session.scalars(
            select(Subnet).where(Subnet.id.in_(subnets))))
        if dhcp_on and dhcp_agents:
            self.blocks.add_provisioning_component(session, row.id, DHCP_ENTITY)

    @upstream("neutron/plugins/ml2/drivers/mech_agent.py",
              "AgentMechanismDriverBase._insert_provisioning_block")
    def _insert_provisioning_block(self, session, row: Port) -> None:
        """Block on L2 until the host's agent has wired the port."""
        if row.binding_vif_type != constants.VIF_TYPE_BRIDGE or \
                row.status == constants.PORT_STATUS_ACTIVE or \
                row.device_owner.startswith("network:"):
            return
        self.blocks.add_provisioning_component(session, row.id, L2_AGENT_ENTITY)

    @upstream(ML2, "Ml2Plugin._bind_port_if_needed")
    def _bind_port(self, row: Port, host: str, l2_agents: list[dict]) -> None:
        """Bind on ``host``: ``bridge`` if a live L2 agent is there, else ``binding_failed``.

        A failed binding is no exception in ML2: the port is saved with vif_type
        ``binding_failed``, the error is logged, and Nova finds out from the port.
        The span says it too (ERROR status), so the trace shows where it failed.
        The port-binding fault makes the mechanism driver refuse a host it could bind.
        """
        row.binding_host_id = host
        if l2_agents and not self.faults.active("port-binding", project_id=row.project_id):
            row.binding_vif_type = constants.VIF_TYPE_BRIDGE
            row.binding_vif_details = {"port_filter": False, "connectivity": "l2",
                                       "bridge_name": constants.bridge_name(row.network_id)}
        else:
            if not l2_agents:
                LOG.warning("No live L2 agent on host %s: port %s fails to bind", host, row.id)
            message = (f"Failed to bind port {row.id} on host {host} for vnic_type "
                       f"{row.binding_vnic_type or 'normal'}")
            LOG.error("%s", message)
            trace.get_current_span().set_status(Status(StatusCode.ERROR, message))
            row.binding_vif_type = constants.VIF_TYPE_BINDING_FAILED
            row.binding_vif_details = {}

    @upstream(ML2, "Ml2Plugin._port_provisioned")
    def _port_provisioned(self, port_id: str, entity: str) -> None:
        """Every block is gone: a bound, enabled port becomes ACTIVE."""
        with self.db.session() as session:
            row = session.get(Port, port_id)
            if row is None:
                LOG.debug("Port %s was deleted so its status cannot be updated.", port_id)
                return
            vif_type, admin_up = row.binding_vif_type, row.admin_state_up
        if vif_type in (constants.VIF_TYPE_UNBOUND, constants.VIF_TYPE_BINDING_FAILED):
            LOG.debug("Port %s cannot update to ACTIVE: %s.", port_id, vif_type)
            return
        if self.blocks.is_object_blocked(port_id):
            return  # a new block was added meanwhile
        if not admin_up:
            return
        self.update_port_status(get_admin_context(), port_id, constants.PORT_STATUS_ACTIVE)

    # Helpers -----------------------------------------------------------------------------

    @upstream("neutron/db/ipam_pluggable_backend.py",
              "IpamPluggableBackend.allocate_ips_for_port_and_store")
    def _allocate_ips_for_port(self, session: Session, network: Network, port: Port,
                               requested: list[dict] | None) -> list[IPAllocation]:
        subnets = list(session.scalars(select(Subnet).where(Subnet.network_id == network.id)
                                       .order_by(Subnet.created_at, Subnet.id)))
        if requested is None:  # one address from the first IPv4 subnet, as neutron does
            requested = [{"subnet_id": subnets[0].id}] if subnets else []
        if not isinstance(requested, list):
            raise n_exc.InvalidInput(error_message="fixed_ips must be a list")
        allocations = []
        for item in requested:
            subnet = self._subnet_for(subnets, item, network.id)
            address = item.get("ip_address")
            taken = set(session.scalars(select(IPAllocation.ip_address).where(
                IPAllocation.subnet_id == subnet.id)))
            if address:
                if not ipam.in_subnet(address, subnet.cidr) or address == subnet.gateway_ip:
                    raise n_exc.InvalidIpForSubnet(ip_address=address)
                if address in taken:
                    raise n_exc.IpAddressAlreadyAllocated(ip=address, subnet_id=subnet.id)
            else:
                address = ipam.next_free(subnet.allocation_pools, taken)
                if address is None:
                    raise n_exc.IpAddressGenerationFailure(net_id=network.id)
            allocation = IPAllocation(port_id=port.id, ip_address=address, subnet_id=subnet.id,
                                      network_id=network.id)
            session.add(allocation)
            allocations.append(allocation)
        session.flush()
        return allocations

    @staticmethod
    def _subnet_for(subnets: list[Subnet], item: dict, network_id: str) -> Subnet:
        if not isinstance(item, dict):
            raise n_exc.InvalidInput(error_message=f"Invalid fixed_ips entry {item!r}")
        if item.get("subnet_id"):
            for subnet in subnets:
                if subnet.id == item["subnet_id"]:
                    return subnet
            raise n_exc.InvalidInput(error_message=f"Failed to create port on network "
                                                   f"{network_id}, because fixed_ips included "
                                                   f"invalid subnet {item['subnet_id']}")
        for subnet in subnets:
            if item.get("ip_address") and ipam.in_subnet(item["ip_address"], subnet.cidr):
                return subnet
        raise n_exc.InvalidIpForSubnet(ip_address=item.get("ip_address"))

    @staticmethod
    def _mac_for(session: Session, network_id: str, requested: str | None) -> str:
        used = set(session.scalars(select(Port.mac_address).where(
            Port.network_id == network_id)))
        if requested:
            if requested.lower() in used:
                raise n_exc.MacAddressInUse(net_id=network_id, mac=requested)
            return requested.lower()
        while True:
            mac = ipam.generate_mac()
            if mac not in used:
                return mac

    @staticmethod
    def _project_for(context: RequestContext, attrs: dict, action: str,
                     service: bool = False) -> str:
        """The project a new resource belongs to: the caller's, where it is a member;
        any, for admins (and for services, where ``service`` says they may)."""
        project_id = attrs.get("project_id") or attrs.get("tenant_id") or context.project_id
        trusted = policy.is_admin_or_service(context) if service else policy.is_admin(context)
        policy.enforce(trusted or policy.is_member_of(context, project_id),
                       action if project_id == context.project_id else f"{action}:project_id")
        return project_id or ""

    def _notify_dhcp(self, context: RequestContext, method: str, payload: dict) -> None:
        if self.dhcp_notifier:
            self.dhcp_notifier.notify(context, method, payload)

    def _notify_port_updated(self, context: RequestContext, port: dict, network: dict) -> None:
        """Tell the host's L2 agent about a bound port."""
        if port.get("binding:vif_type") == constants.VIF_TYPE_BRIDGE and self.l2_notifier:
            self.l2_notifier.port_update(context, port, network, port["binding:host_id"])


def _bool(value) -> bool:
    return str(value).lower() in ("1", "true", "yes", "on")
