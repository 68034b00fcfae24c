"""Per-project quota limits for Nova, Cinder and Neutron.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23

Each service keeps its own table, as upstream does (Nova's and Cinder's
``quotas``, Neutron's ``quotas``; prefixed here on the one shared schema). A row
overrides the service's default limit for one project and resource; usage is
counted from the resources' own tables, so there is no usage table to go stale.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

TABLES = ("quotas", "cinder_quotas", "neutron_quotas")


def upgrade() -> None:
    for table in TABLES:
        op.create_table(
            table,
            sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
            sa.Column("project_id", sa.String(length=255), nullable=False),
            sa.Column("resource", sa.String(length=255), nullable=False),
            sa.Column("hard_limit", sa.Integer(), nullable=False),
            sa.Column("created_at", sa.DateTime(), nullable=False),
            sa.Column("updated_at", sa.DateTime(), nullable=True),
            sa.PrimaryKeyConstraint("id"),
            sa.UniqueConstraint("project_id", "resource",
                                name=f"uniq_{table}0project_id0resource"),
        )
        op.create_index(f"ix_{table}_project_id", table, ["project_id"])


def downgrade() -> None:
    for table in reversed(TABLES):
        op.drop_table(table)
