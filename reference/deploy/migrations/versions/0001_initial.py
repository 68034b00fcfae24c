"""The first schema: keystone, glance and nova tables as a boot needs them.

Revision ID: 0001
Revises:
Create Date: 2026-11-22

Written from the models of that day and then frozen: a later model change gets
a new revision, never an edit here (a database already at 0001 would never see it).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _timestamps() -> list[sa.Column]:
    return [sa.Column("created_at", sa.DateTime(), nullable=False),
            sa.Column("updated_at", sa.DateTime(), nullable=True)]


def _soft_delete() -> list[sa.Column]:
    return [sa.Column("deleted_at", sa.DateTime(), nullable=True),
            sa.Column("deleted", sa.Integer(), nullable=False)]


def _id() -> sa.Column:
    return sa.Column("id", sa.Integer(), autoincrement=True, nullable=False)


def _str(name: str, length: int = 255, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.String(length=length), nullable=nullable)


def _int(name: str) -> sa.Column:
    return sa.Column(name, sa.Integer(), nullable=False)


def _keystone() -> None:
    op.create_table(
        "keystone_projects",
        _str("id", 64), _str("name", 64), _str("domain_id", 64), _str("description"),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id"))
    op.create_table(
        "keystone_users",
        _str("id", 64), _str("name"), _str("domain_id", 64), _str("password_hash"),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        _str("default_project_id", 64, nullable=True),
        sa.PrimaryKeyConstraint("id"))
    op.create_table(
        "keystone_roles",
        _str("id", 64), _str("name"),
        sa.PrimaryKeyConstraint("id"), sa.UniqueConstraint("name"))
    op.create_table(
        "keystone_assignments",
        _str("user_id", 64), _str("project_id", 64), _str("role_id", 64),
        sa.ForeignKeyConstraint(["project_id"], ["keystone_projects.id"]),
        sa.ForeignKeyConstraint(["role_id"], ["keystone_roles.id"]),
        sa.ForeignKeyConstraint(["user_id"], ["keystone_users.id"]),
        sa.PrimaryKeyConstraint("user_id", "project_id", "role_id"))
    op.create_table(
        "keystone_endpoints",
        _str("id", 64), _str("service_id", 64), _str("service_type"), _str("service_name"),
        _str("interface", 8), _str("region"), _str("url"),
        sa.PrimaryKeyConstraint("id"))
    op.create_table(
        "keystone_tokens",
        _str("id_hash", 64), _str("user_id", 64), _str("project_id", 64, nullable=True),
        sa.Column("methods", sa.JSON(), nullable=False),
        _str("audit_id", 32),
        sa.Column("issued_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("valid", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id_hash"))


def _glance() -> None:
    op.create_table(
        "glance_images",
        _str("id", 36), _str("name", nullable=True), _str("status", 30), _str("visibility", 9),
        _str("owner", nullable=True), _str("disk_format", 20, nullable=True),
        _str("container_format", 20, nullable=True),
        sa.Column("size", sa.BigInteger(), nullable=True),
        sa.Column("virtual_size", sa.BigInteger(), nullable=True),
        _str("checksum", 32, nullable=True), _str("os_hash_algo", 64, nullable=True),
        _str("os_hash_value", 128, nullable=True),
        _int("min_disk"), _int("min_ram"),
        sa.Column("protected", sa.Boolean(), nullable=False),
        *_timestamps(),
        sa.PrimaryKeyConstraint("id"))
    op.create_index("ix_glance_images_name", "glance_images", ["name"])
    op.create_table(
        "glance_image_properties",
        _id(), _str("image_id", 36), _str("name"),
        sa.Column("value", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["image_id"], ["glance_images.id"]),
        sa.PrimaryKeyConstraint("id"))
    op.create_index("ix_glance_image_properties_image_id", "glance_image_properties",
                    ["image_id"])
    op.create_table(
        "glance_image_locations",
        _id(), _str("image_id", 36),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("meta_data", sa.JSON(), nullable=False),
        _str("status", 30),
        sa.ForeignKeyConstraint(["image_id"], ["glance_images.id"]),
        sa.PrimaryKeyConstraint("id"))
    op.create_index("ix_glance_image_locations_image_id", "glance_image_locations",
                    ["image_id"])


def _nova() -> None:
    op.create_table(
        "instances",
        _id(), _str("uuid", 36), _str("display_name"), _str("project_id"), _str("user_id"),
        _str("host", nullable=True), _str("node", nullable=True),
        _str("image_ref", nullable=True), _str("flavor_id"), _str("flavor_name"),
        _int("memory_mb"), _int("vcpus"), _int("root_gb"), _int("ephemeral_gb"),
        _str("vm_state"), _str("task_state", nullable=True), _int("power_state"),
        _str("key_name", nullable=True),
        sa.Column("user_data", sa.Text(), nullable=True),
        sa.Column("metadata", sa.JSON(), nullable=False),
        _str("availability_zone", nullable=True),
        sa.Column("launched_at", sa.DateTime(), nullable=True),
        sa.Column("terminated_at", sa.DateTime(), nullable=True),
        *_timestamps(), *_soft_delete(),
        sa.PrimaryKeyConstraint("id"))
    op.create_index("ix_instances_project_id", "instances", ["project_id"])
    op.create_index("ix_instances_uuid", "instances", ["uuid"], unique=True)
    op.create_table(
        "flavors",
        _id(), _str("flavorid"), _str("name"),
        _int("memory_mb"), _int("vcpus"), _int("root_gb"), _int("ephemeral_gb"), _int("swap"),
        sa.Column("rxtx_factor", sa.Double(), nullable=False),
        sa.Column("is_public", sa.Boolean(), nullable=False),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        *_timestamps(),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("flavorid"), sa.UniqueConstraint("name"))
    op.create_table(
        "compute_nodes",
        _id(), _str("host"), _str("hypervisor_hostname"), _str("hypervisor_type"),
        _int("hypervisor_version"), _int("vcpus"), _int("memory_mb"), _int("local_gb"),
        _int("vcpus_used"), _int("memory_mb_used"), _int("local_gb_used"), _int("running_vms"),
        sa.Column("cpu_info", sa.Text(), nullable=False),
        sa.Column("supported_instances", sa.JSON(), nullable=False),
        sa.Column("cpu_allocation_ratio", sa.Double(), nullable=False),
        sa.Column("ram_allocation_ratio", sa.Double(), nullable=False),
        sa.Column("disk_allocation_ratio", sa.Double(), nullable=False),
        *_timestamps(), *_soft_delete(),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("host", "hypervisor_hostname", "deleted"))
    op.create_table(
        "services",
        _id(), _str("host"), _str("binary"), _str("topic", nullable=True),
        _int("report_count"),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        _str("disabled_reason", nullable=True),
        sa.Column("forced_down", sa.Boolean(), nullable=False),
        sa.Column("last_seen_up", sa.DateTime(), nullable=True),
        *_timestamps(), *_soft_delete(),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("host", "binary", "deleted"))
    op.create_table(
        "instance_faults",
        _id(), _str("instance_uuid", 36), _int("code"), _str("message"),
        sa.Column("details", sa.Text(), nullable=True),
        _str("host", nullable=True),
        *_timestamps(), *_soft_delete(),
        sa.PrimaryKeyConstraint("id"))
    op.create_index("ix_instance_faults_instance_uuid", "instance_faults", ["instance_uuid"])
    op.create_table(
        "block_device_mapping",
        _id(), _str("instance_uuid", 36), _str("source_type"), _str("destination_type"),
        sa.Column("boot_index", sa.Integer(), nullable=True),
        _str("device_name", nullable=True), _str("image_id", 36, nullable=True),
        _str("volume_id", 36, nullable=True),
        sa.Column("volume_size", sa.Integer(), nullable=True),
        sa.Column("delete_on_termination", sa.Boolean(), nullable=False),
        _str("attachment_id", 36, nullable=True),
        sa.Column("connection_info", sa.JSON(), nullable=True),
        *_timestamps(), *_soft_delete(),
        sa.PrimaryKeyConstraint("id"))
    op.create_index("ix_block_device_mapping_instance_uuid", "block_device_mapping",
                    ["instance_uuid"])
    op.create_table(
        "instance_info_caches",
        _id(), _str("instance_uuid", 36),
        sa.Column("network_info", sa.JSON(), nullable=False),
        *_timestamps(), *_soft_delete(),
        sa.PrimaryKeyConstraint("id"))
    op.create_index("ix_instance_info_caches_instance_uuid", "instance_info_caches",
                    ["instance_uuid"], unique=True)


def upgrade() -> None:
    _keystone()
    _glance()
    _nova()


def downgrade() -> None:
    # Dropping a table drops its indexes; children before the tables they reference.
    for table in ("instance_info_caches", "block_device_mapping", "instance_faults",
                  "services", "compute_nodes", "flavors", "instances",
                  "glance_image_locations", "glance_image_properties", "glance_images",
                  "keystone_tokens", "keystone_endpoints", "keystone_assignments",
                  "keystone_roles", "keystone_users", "keystone_projects"):
        op.drop_table(table)
