"""Provider limiters and paused runs: a row per provider and key fingerprint with its
limiter's record, shared by every process on the store; and the time a paused run (its
model provider down) resumes.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "provider_limits",
        sa.Column("key", sa.String(128), primary_key=True),
        sa.Column("document", sa.Text, nullable=True),
        sa.Column("updated", sa.Float, nullable=False),
    )
    with op.batch_alter_table("runs") as table:
        table.add_column(sa.Column("resume_at", sa.Float, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as table:
        table.drop_column("resume_at")
    op.drop_table("provider_limits")
