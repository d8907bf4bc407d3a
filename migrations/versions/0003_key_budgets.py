"""Budgets on virtual keys: spend limits per UTC day and month, and what happens when spent.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("client_keys") as batch:
        batch.add_column(sa.Column("budget_usd_per_day", sa.Float(), nullable=True))
        batch.add_column(sa.Column("budget_usd_per_month", sa.Float(), nullable=True))
        batch.add_column(sa.Column("budget_on_exhausted", sa.String(16), nullable=True))


def downgrade() -> None:
    # batch mode: SQLite cannot drop a column in place.
    with op.batch_alter_table("client_keys") as batch:
        batch.drop_column("budget_on_exhausted")
        batch.drop_column("budget_usd_per_month")
        batch.drop_column("budget_usd_per_day")
