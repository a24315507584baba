"""Scheduler state: background reviews, cron jobs and their runs, Curator runs.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels = None
depends_on = None

_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    _reviews()
    _cron_jobs()
    _cron_runs()
    _curator_runs()
    _scheduler_state()


def _reviews() -> None:
    # One row per background review: the audit trail, and the marker the review cadence
    # counts from (reviews never write to the user's transcript).
    op.create_table(
        "reviews",
        sa.Column("id", _id, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(64), sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("session_key", sa.String(512), nullable=False),
        sa.Column("kinds", sa.String(32), nullable=False),
        # scheduled -> running -> done | failed
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("at_message_count", sa.Integer, nullable=False),
        sa.Column("scheduled_at", sa.Float, nullable=False),
        sa.Column("started_at", sa.Float),
        sa.Column("finished_at", sa.Float),
        sa.Column("iterations", sa.Integer, nullable=False, server_default="0"),
        sa.Column("changes", sa.JSON),
        sa.Column("transcript", sa.JSON),
        sa.Column("error", sa.Text),
        sa.Column("input_tokens", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("output_tokens", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("cache_read_tokens", sa.BigInteger, nullable=False, server_default="0"),
    )
    op.create_index("ix_reviews_session", "reviews", ["session_id", "id"])
    op.create_index("ix_reviews_status", "reviews", ["status", "id"])


def _cron_jobs() -> None:
    op.create_table(
        "cron_jobs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("prompt", sa.Text, nullable=False),
        sa.Column("schedule", sa.String(255), nullable=False),
        sa.Column("skills", sa.JSON),
        # "origin", "platform:chat_id[:thread_id]" or "file:<path>"
        sa.Column("deliver", sa.String(1024), nullable=False),
        sa.Column("origin_platform", sa.String(32)),
        sa.Column("origin_route", sa.String(255)),
        sa.Column("origin_chat_id", sa.String(255)),
        sa.Column("origin_thread_id", sa.String(255)),
        sa.Column("origin_user_id", sa.String(255)),
        sa.Column("created_by", sa.String(16), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.Column("paused", sa.Boolean, nullable=False, server_default=sa.false()),
        # NULL once a one-shot job has run.
        sa.Column("next_run_at", sa.Float),
        sa.Column("last_run_at", sa.Float),
        sa.Column("last_status", sa.String(16)),
        sa.Column("last_error", sa.Text),
        sa.Column("run_count", sa.Integer, nullable=False, server_default="0"),
    )
    op.create_index("ix_cron_jobs_next_run", "cron_jobs", ["next_run_at"])


def _cron_runs() -> None:
    op.create_table(
        "cron_runs",
        sa.Column("id", _id, primary_key=True, autoincrement=True),
        sa.Column("job_id", sa.String(32), nullable=False),
        sa.Column("scheduled_for", sa.Float),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("finished_at", sa.Float),
        # running -> ok | silent | failed | refused | skipped
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("session_id", sa.String(64)),
        sa.Column("output", sa.Text),
        sa.Column("delivered_to", sa.String(1024)),
        sa.Column("error", sa.Text),
    )
    op.create_index("ix_cron_runs_job", "cron_runs", ["job_id", "id"])


def _curator_runs() -> None:
    op.create_table(
        "curator_runs",
        sa.Column("id", _id, primary_key=True, autoincrement=True),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("finished_at", sa.Float),
        # "schedule" or "manual"
        sa.Column("trigger", sa.String(16), nullable=False),
        sa.Column("dry_run", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("consolidate", sa.Boolean, nullable=False, server_default=sa.false()),
        # running -> done | failed
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("backup_id", sa.String(64)),
        sa.Column("counts", sa.JSON),
        sa.Column("report", sa.Text),
        sa.Column("error", sa.Text),
    )


def _scheduler_state() -> None:
    # Small named facts of the scheduler: when the Curator was first armed, whether paused.
    op.create_table(
        "scheduler_state",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("scheduler_state")
    op.drop_table("curator_runs")
    op.drop_index("ix_cron_runs_job", table_name="cron_runs")
    op.drop_table("cron_runs")
    op.drop_index("ix_cron_jobs_next_run", table_name="cron_jobs")
    op.drop_table("cron_jobs")
    op.drop_index("ix_reviews_status", table_name="reviews")
    op.drop_index("ix_reviews_session", table_name="reviews")
    op.drop_table("reviews")
