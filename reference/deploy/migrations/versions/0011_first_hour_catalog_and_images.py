"""A DevStack user's first hour: keystone's regions, glance's image tags and os_hidden.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-12

``keystone_regions`` is upstream's ``region`` table (``openstack region list``;
``keystone-manage bootstrap`` makes ``RegionOne``, every endpoint's region).
``glance_image_tags`` is glance's ``image_tags`` (``PUT /v2/images/{id}/tags/{tag}``,
and the ``tags`` of a create or a PATCH), ``glance_images.os_hidden`` glance's
column of the same name (an image left out of the default list).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "keystone_regions",
        sa.Column("id", sa.String(length=255), nullable=False),
        sa.Column("description", sa.String(length=255), nullable=False),
        sa.Column("parent_region_id", sa.String(length=255), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "glance_image_tags",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("image_id", sa.String(length=36), nullable=False),
        sa.Column("value", sa.String(length=255), nullable=False),
        sa.ForeignKeyConstraint(["image_id"], ["glance_images.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("image_id", "value"),
    )
    op.create_index("ix_glance_image_tags_image_id", "glance_image_tags", ["image_id"])
    with op.batch_alter_table("glance_images") as batch:
        batch.add_column(sa.Column("os_hidden", sa.Boolean(), nullable=False,
                                   server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("glance_images") as batch:
        batch.drop_column("os_hidden")
    op.drop_table("glance_image_tags")  # its indexes go with it (MariaDB: see 0012)
    op.drop_table("keystone_regions")
