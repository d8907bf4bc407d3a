"""The record store's tables: request records, quality events and scores, probe results,
and the virtual client keys (`client_keys`, outside `TABLES`: no retention, no writer).

The migrations in `migrations/versions` create exactly these tables; a change here needs a
new migration there.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

TableName = Literal["requests", "quality_events", "quality_scores", "probe_results"]
"""The record tables: appended to by the writer, deleted by age (not `client_keys`)."""

# SQLite only autoincrements an INTEGER PRIMARY KEY, not a BIGINT one.
RowId = BigInteger().with_variant(Integer, "sqlite")


class Base(DeclarativeBase):
    metadata = MetaData()


class _Row:
    """Columns every table has: rows are appended and deleted by age, never updated."""

    id: Mapped[int] = mapped_column(RowId, primary_key=True, autoincrement=True, sort_order=-2)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True, sort_order=-1)


class RequestRecord(_Row, Base):
    """One client request: where it went, why, what it cost, how long it took."""

    __tablename__ = "requests"
    __table_args__ = (Index("ix_requests_backend_created_at", "backend", "created_at"),)

    decision_id: Mapped[str] = mapped_column(String(32))
    key_id: Mapped[str | None] = mapped_column(String(32))  # a virtual key's id, or a hash
    team: Mapped[str | None] = mapped_column(String(64), sort_order=1)  # the key's team
    route: Mapped[str] = mapped_column(String(128))
    model: Mapped[str] = mapped_column(String(256))
    endpoint: Mapped[str] = mapped_column(String(32))
    stream: Mapped[bool] = mapped_column(Boolean)
    backend: Mapped[str | None] = mapped_column(String(128))
    status: Mapped[int] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(String(64))
    attempts: Mapped[int] = mapped_column(Integer)
    retries: Mapped[int] = mapped_column(Integer)
    attempt_log: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    deciding_policy: Mapped[str] = mapped_column(String(64))
    reasons: Mapped[dict[str, str]] = mapped_column(JSON)
    prompt_tokens: Mapped[int] = mapped_column(Integer)
    cached_tokens: Mapped[int] = mapped_column(Integer)
    predicted_cached_tokens: Mapped[int] = mapped_column(Integer)
    completion_tokens: Mapped[int] = mapped_column(Integer)
    ttft_ms: Mapped[float | None] = mapped_column(Float)
    tpot_ms: Mapped[float | None] = mapped_column(Float)
    e2e_ms: Mapped[float] = mapped_column(Float)
    overhead_ms: Mapped[float] = mapped_column(Float)
    decision_us: Mapped[float] = mapped_column(Float)
    cost_usd: Mapped[float] = mapped_column(Float)
    # Flow control: the class, what it did (immediate, queued, fallback, or the refusal's
    # code) and how long it held the request; null when it did not look at the request.
    priority: Mapped[str | None] = mapped_column(String(32))
    admission: Mapped[str | None] = mapped_column(String(32))
    queue_ms: Mapped[float | None] = mapped_column(Float)
    # A cascade's attempt: its tier, outcome, failed checks, start (`CascadeNote.describe`).
    cascade: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # Only with store.store_prompts: the messages as JSON text the gateway serialised (and
    # cut to max_prompt_bytes) itself, so a queued row's size is known.
    prompt: Mapped[str | None] = mapped_column(Text)


class _FromReplica:
    """Which gateway process wrote the row ("hostname:pid"): with several workers or
    replicas, each writes its own quality rows. Rows written without one hold ''."""

    replica: Mapped[str] = mapped_column(String(64), server_default="", sort_order=1)


class QualityEvent(_FromReplica, _Row, Base):
    """A backend's quality state changed (for example healthy → degraded)."""

    __tablename__ = "quality_events"

    backend: Mapped[str] = mapped_column(String(128))
    model: Mapped[str] = mapped_column(String(256))
    from_state: Mapped[str] = mapped_column(String(16))
    to_state: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text)
    fidelity: Mapped[float] = mapped_column(Float)
    sla: Mapped[float] = mapped_column(Float)


class QualityScore(_FromReplica, _Row, Base):
    """A periodic snapshot of one backend's quality score and the signals behind it."""

    __tablename__ = "quality_scores"

    backend: Mapped[str] = mapped_column(String(128))
    model: Mapped[str] = mapped_column(String(256))
    state: Mapped[str] = mapped_column(String(16))
    fidelity: Mapped[float] = mapped_column(Float)
    sla: Mapped[float] = mapped_column(Float)
    signals: Mapped[list[dict[str, Any]]] = mapped_column(JSON)


class ProbeResult(_FromReplica, _Row, Base):
    """One active quality probe's outcome; `ok` is None when it was inconclusive."""

    __tablename__ = "probe_results"

    backend: Mapped[str] = mapped_column(String(128))
    model: Mapped[str] = mapped_column(String(256))
    kind: Mapped[str] = mapped_column(String(32))
    ok: Mapped[bool | None] = mapped_column(Boolean)
    detail: Mapped[str] = mapped_column(Text)
    tokens: Mapped[int] = mapped_column(Integer)
    latency_ms: Mapped[float] = mapped_column(Float)


class ClientKey(Base):
    """A virtual client key: its rules, and the HMAC of its secret (never the secret).

    Updated in place (rotated, revoked, edited) and never deleted by retention; revoked
    rows stay for the records that name them.
    """

    __tablename__ = "client_keys"
    __table_args__ = (Index("ix_client_keys_prefix", "prefix", unique=True),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(128))
    prefix: Mapped[str] = mapped_column(String(32))
    """The key's public first characters (`sk-sy-` + lookup): how a presented key is found."""
    secret_hash: Mapped[str] = mapped_column(String(64))
    """HMAC-SHA256 of the whole key under the server secret, hex."""
    routes: Mapped[list[str] | None] = mapped_column(JSON)
    """Routes it may use; null: every route."""
    tags: Mapped[list[str]] = mapped_column(JSON)
    rpm: Mapped[int | None] = mapped_column(Integer)
    tpm: Mapped[int | None] = mapped_column(Integer)
    team: Mapped[str | None] = mapped_column(String(64))
    owner: Mapped[str | None] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    rotated_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    budget_usd_per_day: Mapped[float | None] = mapped_column(Float)
    budget_usd_per_month: Mapped[float | None] = mapped_column(Float)
    budget_on_exhausted: Mapped[str | None] = mapped_column(String(16))
    """`reject` or `fallback`; null: the config's `budgets.keys.on_exhausted`."""


metadata = Base.metadata
KEYS_TABLE: Table = metadata.tables["client_keys"]
TABLES: dict[str, Table] = {
    name: table for name, table in metadata.tables.items() if table is not KEYS_TABLE
}
