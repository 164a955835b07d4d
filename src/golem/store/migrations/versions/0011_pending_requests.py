"""Pending requests: one per person and thread, asked while the thread's run was running
(a follow-up on a pull request, a Slack mention, a Linear comment), kept until that run
ends and started once, by whichever server sees the end.

Revision ID: 0011
Revises: 0010
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
        "pending_requests",
        sa.Column("tenant", sa.String(64), primary_key=True),
        sa.Column("source", sa.String(16), primary_key=True),
        sa.Column("thread", sa.String(256), primary_key=True),
        sa.Column("person", sa.String(128), primary_key=True),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("asked_by", sa.String(128), nullable=False, server_default=""),
        sa.Column("request", sa.Text, nullable=False, server_default=""),
        sa.Column("detail", sa.Text, nullable=False, server_default=""),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("version", sa.Integer, nullable=False, server_default="0"),
    )
    op.create_index("ix_pending_requests_run", "pending_requests", ["run_id"])


def downgrade() -> None:
    op.drop_index("ix_pending_requests_run", table_name="pending_requests")
    op.drop_table("pending_requests")
