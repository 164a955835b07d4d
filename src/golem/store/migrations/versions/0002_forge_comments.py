"""Comments the local forge keeps.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "forge_comments",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("tenant", sa.String(64), nullable=False, server_default="default"),
        sa.Column("target", sa.String(512), nullable=False),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
    )
    op.create_index("ix_forge_comments_target", "forge_comments", ["target"])


def downgrade() -> None:
    op.drop_table("forge_comments")
