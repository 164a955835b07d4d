"""Webhook deliveries: each id of a forge's delivery that started a run, kept with that run
in the same transaction, its primary key making the same delivery again (a redelivery, a
retry, to any server of the store) a conflict the database itself refuses.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "webhook_deliveries",
        sa.Column("tenant", sa.String(64), primary_key=True),
        sa.Column("source", sa.String(16), primary_key=True),
        sa.Column("delivery", sa.String(128), primary_key=True),
        sa.Column(
            "run_id", sa.String(64), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("created", sa.Float, nullable=False),
    )
    op.create_index("ix_webhook_deliveries_created", "webhook_deliveries", ["created"])


def downgrade() -> None:
    op.drop_index("ix_webhook_deliveries_created", table_name="webhook_deliveries")
    op.drop_table("webhook_deliveries")
