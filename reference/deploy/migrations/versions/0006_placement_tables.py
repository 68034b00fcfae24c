"""Placement's tables: resource providers, inventories, allocations and consumers.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26

Generated with ``alembic revision --autogenerate`` (docs/deployment.md), then read.
A provider points at its parent and its root in the same table (a root is its
own root), so those two foreign keys refer back to ``placement_resource_providers``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_PROVIDERS = "placement_resource_providers"


def _timestamps() -> list[sa.Column]:
    return [sa.Column("created_at", sa.DateTime(), nullable=False),
            sa.Column("updated_at", sa.DateTime(), nullable=True)]


def _index(table: str, *columns: str) -> None:
    with op.batch_alter_table(table, schema=None) as batch_op:
        for column in columns:
            batch_op.create_index(batch_op.f(f"ix_{table}_{column}"), [column], unique=False)


def upgrade() -> None:
    op.create_table(
        "placement_consumers",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("user_id", sa.String(length=255), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        *_timestamps(),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("uuid", name="uniq_placement_consumers0uuid"),
    )
    _index("placement_consumers", "project_id")

    op.create_table(
        _PROVIDERS,
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("root_provider_id", sa.Integer(), nullable=True),
        sa.Column("parent_provider_id", sa.Integer(), nullable=True),
        *_timestamps(),
        sa.ForeignKeyConstraint(["parent_provider_id"], [f"{_PROVIDERS}.id"]),
        sa.ForeignKeyConstraint(["root_provider_id"], [f"{_PROVIDERS}.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name", name="uniq_placement_resource_providers0name"),
        sa.UniqueConstraint("uuid", name="uniq_placement_resource_providers0uuid"),
    )
    _index(_PROVIDERS, "parent_provider_id", "root_provider_id")

    op.create_table(
        "placement_allocations",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("resource_provider_id", sa.Integer(), nullable=False),
        sa.Column("consumer_id", sa.String(length=36), nullable=False),
        sa.Column("resource_class", sa.String(length=255), nullable=False),
        sa.Column("used", sa.Integer(), nullable=False),
        *_timestamps(),
        sa.ForeignKeyConstraint(["resource_provider_id"], [f"{_PROVIDERS}.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    _index("placement_allocations", "consumer_id", "resource_provider_id")

    op.create_table(
        "placement_inventories",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("resource_provider_id", sa.Integer(), nullable=False),
        sa.Column("resource_class", sa.String(length=255), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("reserved", sa.Integer(), nullable=False),
        sa.Column("min_unit", sa.Integer(), nullable=False),
        sa.Column("max_unit", sa.Integer(), nullable=False),
        sa.Column("step_size", sa.Integer(), nullable=False),
        sa.Column("allocation_ratio", sa.Float(), nullable=False),
        *_timestamps(),
        sa.ForeignKeyConstraint(["resource_provider_id"], [f"{_PROVIDERS}.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint(
            "resource_provider_id", "resource_class",
            name="uniq_placement_inventories0resource_provider_resource_class"),
    )
    _index("placement_inventories", "resource_provider_id")


def downgrade() -> None:
    for table in ("placement_inventories", "placement_allocations", _PROVIDERS,
                  "placement_consumers"):
        op.drop_table(table)
