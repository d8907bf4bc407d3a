"""Cascades on request records: which cascade, tier and outcome an attempt was, the
checks its answer failed and why the request started at its tier (one JSON column, null
for a request to a route).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-07
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("requests") as batch:
        batch.add_column(sa.Column("cascade", sa.JSON(), nullable=True))


def downgrade() -> None:
    # batch mode: SQLite cannot drop a column in place.
    with op.batch_alter_table("requests") as batch:
        batch.drop_column("cascade")
