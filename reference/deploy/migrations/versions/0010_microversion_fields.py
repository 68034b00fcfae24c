"""What compute microversions up to 2.61 show about a server and a flavor.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-10

The description (2.19), the lock (2.9), the extended attributes of 2.3
(``hostname``, ``reservation_id``, ``launch_index``, ``kernel_id``,
``ramdisk_id``, ``root_device_name``), the flavor as it was at boot (2.47;
upstream's ``instance_extra.flavor``, here a JSON column of ``instances``),
server tags (2.26, the ``tags`` table) and flavor extra specs (2.61,
``flavor_extra_specs``). Rows written before it read as empty.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

def _columns() -> list[sa.Column]:
    return [
        sa.Column("display_description", sa.Text(), nullable=True),
        sa.Column("locked", sa.Boolean(), nullable=True),
        sa.Column("locked_by", sa.String(length=255), nullable=True),
        sa.Column("hostname", sa.String(length=255), nullable=True),
        sa.Column("reservation_id", sa.String(length=255), nullable=True),
        sa.Column("launch_index", sa.Integer(), nullable=True),
        sa.Column("kernel_id", sa.String(length=255), nullable=True),
        sa.Column("ramdisk_id", sa.String(length=255), nullable=True),
        sa.Column("root_device_name", sa.String(length=255), nullable=True),
        sa.Column("flavor", sa.JSON(), nullable=True),
    ]


def upgrade() -> None:
    with op.batch_alter_table("instances") as batch:
        for column in _columns():
            batch.add_column(column)
    op.create_table(
        "flavor_extra_specs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("flavor_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("value", sa.String(length=255), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["flavor_id"], ["flavors.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("flavor_id", "key", name="uniq_flavor_extra_specs0flavor_id0key"),
    )
    with op.batch_alter_table("flavor_extra_specs") as batch:
        batch.create_index(batch.f("ix_flavor_extra_specs_flavor_id"), ["flavor_id"],
                           unique=False)
    op.create_table(
        "tags",
        sa.Column("resource_id", sa.String(length=36), nullable=False),
        sa.Column("tag", sa.String(length=80), nullable=False),
        sa.PrimaryKeyConstraint("resource_id", "tag"),
    )


def downgrade() -> None:
    op.drop_table("tags")
    op.drop_table("flavor_extra_specs")  # its indexes go with it (MariaDB: see 0012)
    with op.batch_alter_table("instances") as batch:
        for column in reversed(_columns()):
            batch.drop_column(column.name)
