"""Keystone users keep a description and an email, as upstream's ``extra`` column.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23

``openstack user create --description ... --email ...`` sends both; upstream
stores such attributes in the user's ``extra`` JSON column, and so does novalab.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("keystone_users") as batch:
        batch.add_column(sa.Column("extra", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("keystone_users") as batch:
        batch.drop_column("extra")
