"""The record store's tables: request records, quality events and scores, probe results.

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
    key_id: Mapped[str | None] = mapped_column(String(32))  # a hash of the client key
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


metadata = Base.metadata
TABLES: dict[str, Table] = dict(metadata.tables)
