"""Run checkpoints: a run's checkout as its last finished node left it, so a run whose
node died resumes on another machine.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_checkpoints",
        sa.Column(
            "run_id", sa.String(64), sa.ForeignKey("runs.id", ondelete="CASCADE"),
            primary_key=True,
        ),  # fmt: skip
        sa.Column("node", sa.String(64), nullable=False),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("run_checkpoints")
