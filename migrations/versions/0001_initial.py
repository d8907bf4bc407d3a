"""The record store's first tables: requests, quality events and scores, probe results.

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# SQLite only autoincrements an INTEGER PRIMARY KEY, not a BIGINT one.
_ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _row_columns() -> list[sa.Column[Any]]:
    return [
        sa.Column("id", _ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    ]


def _backend_model() -> list[sa.Column[Any]]:
    return [
        sa.Column("backend", sa.String(128), nullable=False),
        sa.Column("model", sa.String(256), nullable=False),
    ]


def _replica() -> sa.Column[Any]:
    # The gateway process that wrote the row ("hostname:pid"); '' when it gave none.
    return sa.Column("replica", sa.String(64), nullable=False, server_default="")


def _create_requests() -> None:
    op.create_table(
        "requests",
        *_row_columns(),
        sa.Column("decision_id", sa.String(32), nullable=False),
        sa.Column("key_id", sa.String(32), nullable=True),
        sa.Column("route", sa.String(128), nullable=False),
        sa.Column("model", sa.String(256), nullable=False),
        sa.Column("endpoint", sa.String(32), nullable=False),
        sa.Column("stream", sa.Boolean(), nullable=False),
        sa.Column("backend", sa.String(128), nullable=True),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("error", sa.String(64), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("retries", sa.Integer(), nullable=False),
        sa.Column("attempt_log", sa.JSON(), nullable=False),
        sa.Column("deciding_policy", sa.String(64), nullable=False),
        sa.Column("reasons", sa.JSON(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("cached_tokens", sa.Integer(), nullable=False),
        sa.Column("predicted_cached_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("ttft_ms", sa.Float(), nullable=True),
        sa.Column("tpot_ms", sa.Float(), nullable=True),
        sa.Column("e2e_ms", sa.Float(), nullable=False),
        sa.Column("overhead_ms", sa.Float(), nullable=False),
        sa.Column("decision_us", sa.Float(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("prompt", sa.Text(), nullable=True),  # JSON text the gateway serialised
    )
    op.create_index("ix_requests_created_at", "requests", ["created_at"])
    op.create_index("ix_requests_backend_created_at", "requests", ["backend", "created_at"])


def _create_quality_tables() -> None:
    op.create_table(
        "quality_events",
        *_row_columns(),
        *_backend_model(),
        sa.Column("from_state", sa.String(16), nullable=False),
        sa.Column("to_state", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("fidelity", sa.Float(), nullable=False),
        sa.Column("sla", sa.Float(), nullable=False),
        _replica(),
    )
    op.create_index("ix_quality_events_created_at", "quality_events", ["created_at"])
    op.create_table(
        "quality_scores",
        *_row_columns(),
        *_backend_model(),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("fidelity", sa.Float(), nullable=False),
        sa.Column("sla", sa.Float(), nullable=False),
        sa.Column("signals", sa.JSON(), nullable=False),
        _replica(),
    )
    op.create_index("ix_quality_scores_created_at", "quality_scores", ["created_at"])


def _create_probe_results() -> None:
    op.create_table(
        "probe_results",
        *_row_columns(),
        *_backend_model(),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=True),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("latency_ms", sa.Float(), nullable=False),
        _replica(),
    )
    op.create_index("ix_probe_results_created_at", "probe_results", ["created_at"])


def upgrade() -> None:
    _create_requests()
    _create_quality_tables()
    _create_probe_results()


def downgrade() -> None:
    for table in ("probe_results", "quality_scores", "quality_events", "requests"):
        op.drop_table(table)  # its indexes go with it
