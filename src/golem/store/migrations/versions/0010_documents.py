"""Documents: what the layers above keep as JSON under a kind and a key (an automation and
its schedule, a goal loop, a tracker's link to a run), each with its tenant and a version
that counts its writes (compare and swap).

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "documents",
        sa.Column("kind", sa.String(32), primary_key=True),
        sa.Column("key", sa.String(200), primary_key=True),
        sa.Column("tenant", sa.String(64), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("updated", sa.Float, nullable=False),
        sa.Column("document", sa.Text, nullable=False),
    )
    op.create_index("ix_documents_tenant_kind", "documents", ["tenant", "kind"])


def downgrade() -> None:
    op.drop_index("ix_documents_tenant_kind", table_name="documents")
    op.drop_table("documents")
