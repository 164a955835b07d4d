"""Chat and tracker sources: the thread each run was asked in and reports to (a Slack
thread, its status message), kept with the run; and webhook deliveries handled without
starting a run (a refusal said once), their run left empty.

Revision ID: 0009
Revises: 0008
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
        "source_threads",
        sa.Column(
            "run_id", sa.String(64), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("tenant", sa.String(64), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("thread", sa.String(256), nullable=False),
        sa.Column("status", sa.String(128), nullable=True),
        sa.Column("detail", sa.Text, nullable=False, server_default=""),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("reported", sa.Float, nullable=True),
    )
    op.create_index("ix_source_threads_thread", "source_threads", ["tenant", "source", "thread"])
    op.create_index("ix_source_threads_open", "source_threads", ["source", "reported"])
    with op.batch_alter_table("webhook_deliveries") as table:
        table.alter_column("run_id", existing_type=sa.String(64), nullable=True)


def downgrade() -> None:
    op.execute("DELETE FROM webhook_deliveries WHERE run_id IS NULL")
    with op.batch_alter_table("webhook_deliveries") as table:
        table.alter_column("run_id", existing_type=sa.String(64), nullable=False)
    op.drop_index("ix_source_threads_open", table_name="source_threads")
    op.drop_index("ix_source_threads_thread", table_name="source_threads")
    op.drop_table("source_threads")
