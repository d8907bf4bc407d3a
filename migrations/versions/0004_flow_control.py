"""Flow control on request records: the priority class, what flow control did with the
request and how long it was held.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-07
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("requests") as batch:
        batch.add_column(sa.Column("priority", sa.String(32), nullable=True))
        batch.add_column(sa.Column("admission", sa.String(32), nullable=True))
        batch.add_column(sa.Column("queue_ms", sa.Float(), nullable=True))


def downgrade() -> None:
    # batch mode: SQLite cannot drop a column in place.
    with op.batch_alter_table("requests") as batch:
        batch.drop_column("queue_ms")
        batch.drop_column("admission")
        batch.drop_column("priority")
