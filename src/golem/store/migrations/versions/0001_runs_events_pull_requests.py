"""Runs, their events, and the local forge's pull requests.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("tenant", sa.String(64), nullable=False, server_default="default"),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("updated", sa.Float, nullable=False),
        sa.Column("state", sa.Text, nullable=False),
        sa.Column("cancel_requested", sa.Boolean, nullable=False, server_default="0"),
        sa.Column("gate_decision", sa.String(16), nullable=True),
    )
    op.create_index("ix_runs_tenant_created", "runs", ["tenant", "created"])
    op.create_index("ix_runs_status", "runs", ["status"])
    op.create_table(
        "run_events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(
            "run_id", sa.String(64), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("time", sa.Float, nullable=False),
        sa.Column("type", sa.String(32), nullable=False),
        sa.Column("data", sa.Text, nullable=False),
        sa.UniqueConstraint("run_id", "seq", name="uq_run_events_run_seq"),
    )
    op.create_table(
        "pull_requests",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("tenant", sa.String(64), nullable=False, server_default="default"),
        sa.Column("repo", sa.String(512), nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("data", sa.Text, nullable=False),
        sa.UniqueConstraint("repo", "number", name="uq_pull_requests_repo_number"),
    )


def downgrade() -> None:
    op.drop_table("pull_requests")
    op.drop_table("run_events")
    op.drop_table("runs")
