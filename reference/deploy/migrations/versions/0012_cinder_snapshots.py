"""Volume snapshots: cinder's ``snapshots`` table.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-12

``cinder_snapshots`` is upstream's ``snapshots`` trimmed to what
``openstack volume snapshot create/list/show/delete`` uses: the volume, the
owner, the status and progress, the size the volume had, name, description and
metadata; soft-deleted as every cinder row.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "cinder_snapshots",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("volume_id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=255), nullable=False),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("status", sa.String(length=255), nullable=False),
        sa.Column("progress", sa.String(length=255), nullable=True),
        sa.Column("volume_size", sa.Integer(), nullable=False),
        sa.Column("display_name", sa.String(length=255), nullable=True),
        sa.Column("display_description", sa.String(length=255), nullable=True),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.Column("deleted_at", sa.DateTime(), nullable=True),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(["volume_id"], ["cinder_volumes.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_cinder_snapshots_volume_id", "cinder_snapshots", ["volume_id"])
    op.create_index("ix_cinder_snapshots_project_id", "cinder_snapshots", ["project_id"])


def downgrade() -> None:
    # Dropping the table drops its indexes; MariaDB refuses to drop an index a
    # foreign key needs on its own.
    op.drop_table("cinder_snapshots")
