"""Security groups: neutron's ``securitygroups``, ``securitygrouprules``,
``securitygroupportbindings`` and ``default_security_group``.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-14

As upstream's tables (``neutron/db/models/securitygroup.py``), prefixed
``neutron_`` as every neutron table here, with the standard attributes
(revision, timestamps) as columns of each row rather than a shared
``standardattributes`` table. ``neutron_default_security_group`` keys a
project's ``default`` group by project, so it is created once.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def _standard_attrs() -> list[sa.Column]:
    return [sa.Column("created_at", sa.DateTime(), nullable=False),
            sa.Column("updated_at", sa.DateTime(), nullable=True),
            sa.Column("revision_number", sa.Integer(), nullable=False)]


def upgrade() -> None:
    op.create_table(
        "neutron_securitygroups",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("description", sa.String(length=255), nullable=False),
        sa.Column("stateful", sa.Boolean(), nullable=False),
        *_standard_attrs(),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_neutron_securitygroups_project_id", "neutron_securitygroups",
                    ["project_id"])
    op.create_table(
        "neutron_default_security_group",
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("security_group_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(["security_group_id"], ["neutron_securitygroups.id"],
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("project_id"),
    )
    op.create_table(
        "neutron_securitygrouprules",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("security_group_id", sa.String(length=36), nullable=False),
        sa.Column("remote_group_id", sa.String(length=36), nullable=True),
        sa.Column("direction", sa.String(length=16), nullable=False),
        sa.Column("ethertype", sa.String(length=40), nullable=False),
        sa.Column("protocol", sa.String(length=40), nullable=True),
        sa.Column("port_range_min", sa.Integer(), nullable=True),
        sa.Column("port_range_max", sa.Integer(), nullable=True),
        sa.Column("remote_ip_prefix", sa.String(length=255), nullable=True),
        sa.Column("description", sa.String(length=255), nullable=False),
        *_standard_attrs(),
        sa.ForeignKeyConstraint(["security_group_id"], ["neutron_securitygroups.id"],
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["remote_group_id"], ["neutron_securitygroups.id"],
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_neutron_securitygrouprules_project_id",
                    "neutron_securitygrouprules", ["project_id"])
    op.create_index("ix_neutron_securitygrouprules_security_group_id",
                    "neutron_securitygrouprules", ["security_group_id"])
    op.create_table(
        "neutron_securitygroupportbindings",
        sa.Column("port_id", sa.String(length=36), nullable=False),
        sa.Column("security_group_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(["port_id"], ["neutron_ports.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["security_group_id"], ["neutron_securitygroups.id"]),
        sa.PrimaryKeyConstraint("port_id", "security_group_id"),
    )


def downgrade() -> None:
    # Tables, not their indexes first (MariaDB refuses to drop an index a foreign key
    # needs); the referencing tables before the groups.
    op.drop_table("neutron_securitygroupportbindings")
    op.drop_table("neutron_securitygrouprules")
    op.drop_table("neutron_default_security_group")
    op.drop_table("neutron_securitygroups")
