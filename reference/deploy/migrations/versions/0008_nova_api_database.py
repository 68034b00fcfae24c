"""The API database of the modern topology: cells, host and instance mappings,
build requests and request specs.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26

Generated with ``alembic revision --autogenerate`` (docs/deployment.md), then read.
Upstream keeps these tables in a database of their own (``nova_api``) with its own
migration tree; novalab's API database is its main one (docs/decisions.md), so
they are one more revision here. Cell0's database gets the same schema.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "build_requests",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("instance_uuid", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("instance", sa.JSON(), nullable=False),
        sa.Column("block_device_mappings", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("instance_uuid"),
    )
    with op.batch_alter_table("build_requests", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_build_requests_project_id"), ["project_id"], unique=False
        )

    op.create_table(
        "cell_mappings",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=True),
        sa.Column("transport_url", sa.Text(), nullable=False),
        sa.Column("database_connection", sa.Text(), nullable=False),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("uuid"),
    )
    op.create_table(
        "request_specs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("instance_uuid", sa.String(length=36), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("instance_uuid"),
    )
    op.create_table(
        "host_mappings",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("cell_id", sa.Integer(), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["cell_id"],
            ["cell_mappings.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("host"),
    )
    op.create_table(
        "instance_mappings",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("instance_uuid", sa.String(length=36), nullable=False),
        sa.Column("cell_id", sa.Integer(), nullable=True),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("user_id", sa.String(length=255), nullable=True),
        sa.Column("queued_for_delete", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["cell_id"],
            ["cell_mappings.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("instance_uuid"),
    )
    with op.batch_alter_table("instance_mappings", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_instance_mappings_project_id"), ["project_id"], unique=False
        )



def downgrade() -> None:
    with op.batch_alter_table("instance_mappings", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_instance_mappings_project_id"))

    op.drop_table("instance_mappings")
    op.drop_table("host_mappings")
    op.drop_table("request_specs")
    op.drop_table("cell_mappings")
    with op.batch_alter_table("build_requests", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_build_requests_project_id"))

    op.drop_table("build_requests")
