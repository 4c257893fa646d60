"""Where a run ran: the CI provider and job URL; and an index for listing one branch's runs newest first.

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
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("ci_provider", sa.String(40), nullable=True))
        batch.add_column(sa.Column("ci_job_url", sa.Text(), nullable=True))
    op.create_index("ix_runs_branch_created", "runs", ["git_branch", "created_at", "pk"])


def downgrade() -> None:
    op.drop_index("ix_runs_branch_created", "runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("ci_job_url")
        batch.drop_column("ci_provider")
