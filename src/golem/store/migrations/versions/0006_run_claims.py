"""Run claims: a number raised each time a run is claimed or requeued, which its runner's
writes carry, so a runner whose run was given to another (its machine declared dead, its
server's runs recovered) can no longer write over the one that runs it now.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as table:
        table.add_column(sa.Column("claim", sa.Integer, nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("runs") as table:
        table.drop_column("claim")
