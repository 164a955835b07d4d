"""The server: which server runs a run (its queue), and API keys.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as runs:
        runs.add_column(sa.Column("owner", sa.String(128), nullable=True))
    op.create_index("ix_runs_status_created", "runs", ["status", "created"])
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("tenant", sa.String(64), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("name", sa.String(200), nullable=False, server_default=""),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("revoked", sa.Boolean, nullable=False, server_default=sa.false()),
    )
    op.create_index("ix_api_keys_tenant", "api_keys", ["tenant"])


def downgrade() -> None:
    op.drop_table("api_keys")
    op.drop_index("ix_runs_status_created", "runs")
    with op.batch_alter_table("runs") as runs:
        runs.drop_column("owner")
