"""The first history schema: runs, their gate and metric results, and their artifacts as compressed chunks.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("pk", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(200), nullable=False, unique=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("recorded_at", sa.DateTime(), nullable=False),
        sa.Column("source", sa.String(20), nullable=False),
        sa.Column("tool_version", sa.String(50), nullable=False),
        sa.Column("config_path", sa.Text(), nullable=False),
        sa.Column("config_fingerprint", sa.String(80), nullable=False),
        sa.Column("ledger_fingerprint", sa.String(80), nullable=False),
        sa.Column("dataset_name", sa.Text(), nullable=False),
        sa.Column("dataset_fingerprint", sa.String(80), nullable=False),
        sa.Column("definitions_fingerprint", sa.String(80), nullable=False),
        sa.Column("scores_sha256", sa.String(80), nullable=False),
        sa.Column("examples", sa.Integer(), nullable=False),
        sa.Column("verdict", sa.String(20), nullable=False),
        sa.Column("exit_code", sa.Integer(), nullable=False),
        sa.Column("git_commit", sa.String(64), nullable=True),
        sa.Column("git_branch", sa.Text(), nullable=True),
        sa.Column("git_dirty", sa.Boolean(), nullable=True),
    )
    op.create_index("ix_runs_created", "runs", ["created_at", "pk"])
    op.create_table(
        "gate_results",
        sa.Column("run_pk", sa.Integer(), sa.ForeignKey("runs.pk", ondelete="CASCADE"), primary_key=True),
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("subject", sa.String(200), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("outcome", sa.String(20), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("threshold", sa.Float(), nullable=True),
        sa.Column("reasons", sa.Text(), nullable=False),
    )
    op.create_index("ix_gate_results_name", "gate_results", ["name", "run_pk"])
    op.create_table(
        "metric_results",
        sa.Column("run_pk", sa.Integer(), sa.ForeignKey("runs.pk", ondelete="CASCADE"), primary_key=True),
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("point", sa.Float(), nullable=True),
        sa.Column("low", sa.Float(), nullable=True),
        sa.Column("high", sa.Float(), nullable=True),
        sa.Column("level", sa.Float(), nullable=True),
        sa.Column("method", sa.String(40), nullable=True),
        sa.Column("included", sa.Integer(), nullable=False),
        sa.Column("excluded", sa.Integer(), nullable=False),
    )
    op.create_index("ix_metric_results_name", "metric_results", ["name", "run_pk"])
    op.create_table(
        "artifacts",
        sa.Column("run_pk", sa.Integer(), sa.ForeignKey("runs.pk", ondelete="CASCADE"), primary_key=True),
        sa.Column("name", sa.String(500), primary_key=True),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(80), nullable=False),
        sa.Column("chunks", sa.Integer(), nullable=False),
    )
    op.create_table(
        "artifact_chunks",
        sa.Column("run_pk", sa.Integer(), sa.ForeignKey("runs.pk", ondelete="CASCADE"), primary_key=True),
        sa.Column("name", sa.String(500), primary_key=True),
        sa.Column("seq", sa.Integer(), primary_key=True),
        sa.Column("data", sa.LargeBinary(), nullable=False),
    )


def downgrade() -> None:
    for table in ("artifact_chunks", "artifacts", "metric_results", "gate_results", "runs"):
        op.drop_table(table)
