"""Nova's instance actions: what ``GET /servers/{id}/os-instance-actions`` reads.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29

``instance_actions`` holds one row per request on an instance (``create``,
``delete``), ``instance_actions_events`` the steps services took for it
(``compute__do_build_and_run_instance``). Index names are Nova's
(``nova/db/main/models.py``).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def _bookkeeping() -> list[sa.Column]:
    """Nova's ``NovaBase`` timestamps and ``SoftDeleteMixin``, as on every nova table."""
    return [sa.Column("created_at", sa.DateTime(), nullable=False),
            sa.Column("updated_at", sa.DateTime(), nullable=True),
            sa.Column("deleted_at", sa.DateTime(), nullable=True),
            sa.Column("deleted", sa.Integer(), nullable=False)]


def upgrade() -> None:
    op.create_table(
        "instance_actions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("action", sa.String(length=255), nullable=True),
        sa.Column("instance_uuid", sa.String(length=36), nullable=True),
        sa.Column("request_id", sa.String(length=255), nullable=True),
        sa.Column("user_id", sa.String(length=255), nullable=True),
        sa.Column("project_id", sa.String(length=255), nullable=True),
        sa.Column("start_time", sa.DateTime(), nullable=True),
        sa.Column("finish_time", sa.DateTime(), nullable=True),
        sa.Column("message", sa.String(length=255), nullable=True),
        *_bookkeeping(),
        sa.ForeignKeyConstraint(["instance_uuid"], ["instances.uuid"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("instance_uuid_idx", "instance_actions", ["instance_uuid"])
    op.create_index("request_id_idx", "instance_actions", ["request_id"])
    op.create_index("instance_actions_instance_uuid_updated_at_idx", "instance_actions",
                    ["instance_uuid", "updated_at"])

    op.create_table(
        "instance_actions_events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("event", sa.String(length=255), nullable=True),
        sa.Column("action_id", sa.Integer(), nullable=True),
        sa.Column("start_time", sa.DateTime(), nullable=True),
        sa.Column("finish_time", sa.DateTime(), nullable=True),
        sa.Column("result", sa.String(length=255), nullable=True),
        sa.Column("traceback", sa.Text(), nullable=True),
        sa.Column("host", sa.String(length=255), nullable=True),
        sa.Column("details", sa.Text(), nullable=True),
        *_bookkeeping(),
        sa.ForeignKeyConstraint(["action_id"], ["instance_actions.id"]),
        sa.PrimaryKeyConstraint("id"),
    )


def downgrade() -> None:
    # The events reference the actions: drop them first.
    op.drop_table("instance_actions_events")
    op.drop_table("instance_actions")
