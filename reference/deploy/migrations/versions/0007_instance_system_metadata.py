"""Nova's instances keep system metadata: what shelve and unshelve remember.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02

Upstream keeps it in the ``instance_system_metadata`` table, one key/value row
each; novalab keeps the same keys in one JSON column of ``instances``
(``shelved_at``, ``shelved_image_id``, ``shelved_host``, the ``image_*`` keys of
the image a server booted from). Rows written before it read as ``{}``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("instances") as batch:
        batch.add_column(sa.Column("system_metadata", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("instances") as batch:
        batch.drop_column("system_metadata")
