"""Private flavors: the projects each one is for (``flavor_projects``).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-14

Upstream's API-database table of the same name (``nova/db/api/models.py``
``FlavorProjects``): one row per (flavor, project) that ``os-flavor-access``'s
``addTenantAccess`` granted. A public flavor has none; a private one is seen,
listed and booted only by admins and by the projects it has a row for.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "flavor_projects",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("flavor_id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["flavor_id"], ["flavors.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("flavor_id", "project_id",
                            name="uniq_flavor_projects0flavor_id0project_id"),
    )


def downgrade() -> None:
    op.drop_table("flavor_projects")
