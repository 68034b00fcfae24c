"""Neutron's and cinder's tables, as they arrived with those services.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22

Generated with ``alembic revision --autogenerate`` (docs/deployment.md), then read.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "cinder_messages",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("request_id", sa.String(length=255), nullable=True),
        sa.Column("resource_type", sa.String(length=36), nullable=True),
        sa.Column("resource_uuid", sa.String(length=255), nullable=True),
        sa.Column("action_id", sa.String(length=10), nullable=False),
        sa.Column("detail_id", sa.String(length=10), nullable=False),
        sa.Column("event_id", sa.String(length=255), nullable=False),
        sa.Column("message_level", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=True),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("cinder_messages", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_cinder_messages_project_id"), ["project_id"], unique=False
        )

    op.create_table(
        "cinder_volumes",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=255), nullable=False),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=True),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("availability_zone", sa.String(length=255), nullable=False),
        sa.Column("status", sa.String(length=255), nullable=False),
        sa.Column("attach_status", sa.String(length=255), nullable=False),
        sa.Column("display_name", sa.String(length=255), nullable=True),
        sa.Column("display_description", sa.String(length=255), nullable=True),
        sa.Column("volume_type", sa.String(length=255), nullable=False),
        sa.Column("bootable", sa.Boolean(), nullable=False),
        sa.Column("multiattach", sa.Boolean(), nullable=False),
        sa.Column("provider_location", sa.String(length=255), nullable=True),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.Column("launched_at", sa.DateTime(), nullable=True),
        sa.Column("terminated_at", sa.DateTime(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.Column("deleted_at", sa.DateTime(), nullable=True),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("cinder_volumes", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_cinder_volumes_project_id"), ["project_id"], unique=False
        )

    op.create_table(
        "neutron_agents",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("agent_type", sa.String(length=255), nullable=False),
        sa.Column("binary", sa.String(length=255), nullable=False),
        sa.Column("topic", sa.String(length=255), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("admin_state_up", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("heartbeat_timestamp", sa.DateTime(), nullable=False),
        sa.Column("configurations", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("agent_type", "host"),
    )
    op.create_table(
        "neutron_networks",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("admin_state_up", sa.Boolean(), nullable=False),
        sa.Column("shared", sa.Boolean(), nullable=False),
        sa.Column("mtu", sa.Integer(), nullable=False),
        sa.Column("network_type", sa.String(length=32), nullable=False),
        sa.Column("physical_network", sa.String(length=64), nullable=True),
        sa.Column("segmentation_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.Column("revision_number", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("neutron_networks", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_neutron_networks_project_id"), ["project_id"], unique=False
        )

    op.create_table(
        "neutron_provisioningblocks",
        sa.Column("object_id", sa.String(length=36), nullable=False),
        sa.Column("entity", sa.String(length=255), nullable=False),
        sa.PrimaryKeyConstraint("object_id", "entity"),
    )
    op.create_table(
        "cinder_volume_attachment",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("volume_id", sa.String(length=36), nullable=False),
        sa.Column("instance_uuid", sa.String(length=36), nullable=True),
        sa.Column("attached_host", sa.String(length=255), nullable=True),
        sa.Column("mountpoint", sa.String(length=255), nullable=True),
        sa.Column("attach_time", sa.DateTime(), nullable=True),
        sa.Column("detach_time", sa.DateTime(), nullable=True),
        sa.Column("attach_mode", sa.String(length=36), nullable=False),
        sa.Column("attach_status", sa.String(length=255), nullable=False),
        sa.Column("connection_info", sa.JSON(), nullable=True),
        sa.Column("connector", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.Column("deleted_at", sa.DateTime(), nullable=True),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["volume_id"],
            ["cinder_volumes.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("cinder_volume_attachment", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_cinder_volume_attachment_volume_id"), ["volume_id"], unique=False
        )

    op.create_table(
        "cinder_volume_glance_metadata",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("volume_id", sa.String(length=36), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("value", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.Column("deleted_at", sa.DateTime(), nullable=True),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["volume_id"],
            ["cinder_volumes.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("cinder_volume_glance_metadata", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_cinder_volume_glance_metadata_volume_id"), ["volume_id"], unique=False
        )

    op.create_table(
        "neutron_ports",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("network_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("mac_address", sa.String(length=32), nullable=False),
        sa.Column("admin_state_up", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("device_id", sa.String(length=255), nullable=False),
        sa.Column("device_owner", sa.String(length=255), nullable=False),
        sa.Column("binding_host_id", sa.String(length=255), nullable=False),
        sa.Column("binding_vif_type", sa.String(length=64), nullable=False),
        sa.Column("binding_vif_details", sa.JSON(), nullable=False),
        sa.Column("binding_vnic_type", sa.String(length=64), nullable=False),
        sa.Column("binding_profile", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.Column("revision_number", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["network_id"],
            ["neutron_networks.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("network_id", "mac_address"),
    )
    with op.batch_alter_table("neutron_ports", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_neutron_ports_device_id"), ["device_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_neutron_ports_network_id"), ["network_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_neutron_ports_project_id"), ["project_id"], unique=False
        )

    op.create_table(
        "neutron_subnets",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("network_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("ip_version", sa.Integer(), nullable=False),
        sa.Column("cidr", sa.String(length=64), nullable=False),
        sa.Column("gateway_ip", sa.String(length=64), nullable=True),
        sa.Column("enable_dhcp", sa.Boolean(), nullable=False),
        sa.Column("allocation_pools", sa.JSON(), nullable=False),
        sa.Column("dns_nameservers", sa.JSON(), nullable=False),
        sa.Column("host_routes", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.Column("revision_number", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["network_id"], ["neutron_networks.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("neutron_subnets", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_neutron_subnets_network_id"), ["network_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_neutron_subnets_project_id"), ["project_id"], unique=False
        )

    op.create_table(
        "neutron_ipallocations",
        sa.Column("port_id", sa.String(length=36), nullable=False),
        sa.Column("ip_address", sa.String(length=64), nullable=False),
        sa.Column("subnet_id", sa.String(length=36), nullable=False),
        sa.Column("network_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(["port_id"], ["neutron_ports.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["subnet_id"], ["neutron_subnets.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("ip_address", "subnet_id"),
    )
    with op.batch_alter_table("neutron_ipallocations", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_neutron_ipallocations_network_id"), ["network_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_neutron_ipallocations_port_id"), ["port_id"], unique=False
        )


def downgrade() -> None:
    # Dropping a table drops its indexes; children before the tables they reference.
    for table in (
        "neutron_ipallocations",
        "neutron_subnets",
        "neutron_ports",
        "cinder_volume_glance_metadata",
        "cinder_volume_attachment",
        "neutron_provisioningblocks",
        "neutron_networks",
        "neutron_agents",
        "cinder_volumes",
        "cinder_messages",
    ):
        op.drop_table(table)
