"""Forge credentials per tenant: one sealed token per tenant and forge.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "forge_credentials",
        sa.Column("tenant", sa.String(64), primary_key=True),
        sa.Column("forge", sa.String(16), primary_key=True),
        sa.Column("token", sa.Text, nullable=False),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("updated", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("forge_credentials")
