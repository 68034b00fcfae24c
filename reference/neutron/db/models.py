"""Neutron's tables, trimmed to what a port's life touches (``neutron/db/models_v2.py``).

On novalab's one schema every table is prefixed ``neutron_``. Compared with
upstream: the port binding lives in columns of the port (upstream:
``ml2_port_bindings``, one row per host); allocation pools are a JSON column of
the subnet; provisioning blocks point at the port id (upstream: at the row's
``standard_attr_id``); agents have no availability zones.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    ForeignKey,
    Integer,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from novalab.reference.common.db import Base, utcnow
from novalab.reference.common.quota import QuotaLimitColumns


class StandardAttrs:
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime | None] = mapped_column(DateTime, onupdate=utcnow)
    revision_number: Mapped[int] = mapped_column(Integer, default=0)


class Network(StandardAttrs, Base):
    __tablename__ = "neutron_networks"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    project_id: Mapped[str] = mapped_column(String(255), index=True)
    name: Mapped[str] = mapped_column(String(255), default="")
    status: Mapped[str] = mapped_column(String(16), default="ACTIVE")
    admin_state_up: Mapped[bool] = mapped_column(Boolean, default=True)
    shared: Mapped[bool] = mapped_column(Boolean, default=False)
    mtu: Mapped[int] = mapped_column(Integer, default=1500)
    # The one segment of an ML2 network (upstream: networksegments).
    network_type: Mapped[str] = mapped_column(String(32), default="flat")
    physical_network: Mapped[str | None] = mapped_column(String(64))
    segmentation_id: Mapped[int | None] = mapped_column(Integer)


class Subnet(StandardAttrs, Base):
    __tablename__ = "neutron_subnets"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    project_id: Mapped[str] = mapped_column(String(255), index=True)
    network_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("neutron_networks.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(255), default="")
    ip_version: Mapped[int] = mapped_column(Integer, default=4)
    cidr: Mapped[str] = mapped_column(String(64))
    gateway_ip: Mapped[str | None] = mapped_column(String(64))
    enable_dhcp: Mapped[bool] = mapped_column(Boolean, default=True)
    # [{"start": "10.0.0.2", "end": "10.0.0.254"}]
    allocation_pools: Mapped[list] = mapped_column(JSON, default=list)
    dns_nameservers: Mapped[list] = mapped_column(JSON, default=list)
    host_routes: Mapped[list] = mapped_column(JSON, default=list)


class Port(StandardAttrs, Base):
    __tablename__ = "neutron_ports"
    __table_args__ = (UniqueConstraint("network_id", "mac_address"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    project_id: Mapped[str] = mapped_column(String(255), index=True)
    network_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("neutron_networks.id"), index=True)
    name: Mapped[str] = mapped_column(String(255), default="")
    mac_address: Mapped[str] = mapped_column(String(32))
    admin_state_up: Mapped[bool] = mapped_column(Boolean, default=True)
    status: Mapped[str] = mapped_column(String(16), default="DOWN")
    device_id: Mapped[str] = mapped_column(String(255), default="", index=True)
    device_owner: Mapped[str] = mapped_column(String(255), default="")
    # The binding (upstream: ml2_port_bindings).
    binding_host_id: Mapped[str] = mapped_column(String(255), default="")
    binding_vif_type: Mapped[str] = mapped_column(String(64), default="unbound")
    binding_vif_details: Mapped[dict] = mapped_column(JSON, default=dict)
    binding_vnic_type: Mapped[str] = mapped_column(String(64), default="normal")
    binding_profile: Mapped[dict] = mapped_column(JSON, default=dict)


class IPAllocation(Base):
    __tablename__ = "neutron_ipallocations"

    port_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("neutron_ports.id", ondelete="CASCADE"), index=True)
    ip_address: Mapped[str] = mapped_column(String(64), primary_key=True)
    subnet_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("neutron_subnets.id", ondelete="CASCADE"), primary_key=True)
    network_id: Mapped[str] = mapped_column(String(36), index=True)


class ProvisioningBlock(Base):
    """One entity (``DHCP``, ``L2``) still has work to do before the port is ACTIVE."""

    __tablename__ = "neutron_provisioningblocks"

    object_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    entity: Mapped[str] = mapped_column(String(255), primary_key=True)


class Agent(Base):
    """An agent that reported its state (``neutron/db/agents_db.py``)."""

    __tablename__ = "neutron_agents"
    __table_args__ = (UniqueConstraint("agent_type", "host"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    agent_type: Mapped[str] = mapped_column(String(255))
    binary: Mapped[str] = mapped_column(String(255))
    topic: Mapped[str] = mapped_column(String(255))
    host: Mapped[str] = mapped_column(String(255))
    admin_state_up: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    started_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    heartbeat_timestamp: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    configurations: Mapped[dict] = mapped_column(JSON, default=dict)


class Quota(QuotaLimitColumns, Base):
    """A project's own limit for one resource (``network``, ``subnet``, ``port``)."""

    __tablename__ = "neutron_quotas"
    __table_args__ = (UniqueConstraint("project_id", "resource",
                                       name="uniq_neutron_quotas0project_id0resource"),)


class SecurityGroup(StandardAttrs, Base):
    """A project's named set of rules (``neutron/db/models/securitygroup.py``)."""

    __tablename__ = "neutron_securitygroups"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    project_id: Mapped[str] = mapped_column(String(255), index=True)
    name: Mapped[str] = mapped_column(String(255), default="")
    description: Mapped[str] = mapped_column(String(255), default="")
    # Stateless groups let replies through only by rule (no conntrack).
    stateful: Mapped[bool] = mapped_column(Boolean, default=True)


class DefaultSecurityGroup(Base):
    """Which group is a project's ``default``: the primary key makes it one per project,
    so two requests racing to create it cannot both succeed."""

    __tablename__ = "neutron_default_security_group"

    project_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    security_group_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("neutron_securitygroups.id", ondelete="CASCADE"))


class SecurityGroupRule(StandardAttrs, Base):
    """One allowed flow: direction, ethertype, protocol, ports, and a remote (a CIDR or
    the members of a group)."""

    __tablename__ = "neutron_securitygrouprules"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    project_id: Mapped[str] = mapped_column(String(255), index=True)
    security_group_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("neutron_securitygroups.id", ondelete="CASCADE"), index=True)
    remote_group_id: Mapped[str | None] = mapped_column(
        String(36), ForeignKey("neutron_securitygroups.id", ondelete="CASCADE"))
    direction: Mapped[str] = mapped_column(String(16))
    ethertype: Mapped[str] = mapped_column(String(40))
    protocol: Mapped[str | None] = mapped_column(String(40))
    port_range_min: Mapped[int | None] = mapped_column(Integer)
    port_range_max: Mapped[int | None] = mapped_column(Integer)
    remote_ip_prefix: Mapped[str | None] = mapped_column(String(255))
    description: Mapped[str] = mapped_column(String(255), default="")


class SecurityGroupPortBinding(Base):
    """A port is in a group (``securitygroupportbindings``)."""

    __tablename__ = "neutron_securitygroupportbindings"

    port_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("neutron_ports.id", ondelete="CASCADE"), primary_key=True)
    security_group_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("neutron_securitygroups.id"), primary_key=True)
