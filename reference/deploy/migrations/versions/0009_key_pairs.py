"""Key pairs: the API database's ``key_pairs``, and the copy an instance keeps of its own.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-08

``key_pairs`` is upstream's API-database table (one row per user and name,
``type`` ssh or x509, no soft delete). A server booted with ``key_name`` keeps
the pair's public key in ``instances.key_data`` (upstream's column) and the
whole pair in ``instances.keypairs`` (upstream's ``instance_extra.keypairs``),
which is what the metadata service serves the guest.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "key_pairs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("user_id", sa.String(length=255), nullable=False),
        sa.Column("fingerprint", sa.String(length=255), nullable=True),
        sa.Column("public_key", sa.Text(), nullable=True),
        sa.Column("type", sa.Enum("ssh", "x509", name="keypair_types"),
                  server_default="ssh", nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("user_id", "name", name="uniq_key_pairs0user_id0name"),
    )
    with op.batch_alter_table("instances") as batch:
        batch.add_column(sa.Column("key_data", sa.Text(), nullable=True))
        batch.add_column(sa.Column("keypairs", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("instances") as batch:
        batch.drop_column("keypairs")
        batch.drop_column("key_data")
    op.drop_table("key_pairs")
    # PostgreSQL keeps an enum's type after its table goes.
    sa.Enum(name="keypair_types").drop(op.get_bind(), checkfirst=True)
