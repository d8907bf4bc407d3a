"""One realistic row per table, and reading rows back for comparison."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select

from gateway.store.database import make_engine
from gateway.store.models import TABLES, TableName

Row = dict[str, Any]
REPLICA = "gw-7f3c:4242"


def request_row(created_at: datetime, **changes: Any) -> Row:
    row: Row = {
        "created_at": created_at,
        "decision_id": "d-0001",
        "key_id": "k-1f3a",
        "team": "search",
        "route": "chat",
        "model": "llama-3-8b",
        "endpoint": "chat.completions",
        "stream": True,
        "backend": "gpu-a",
        "status": 200,
        "error": None,
        "attempts": 2,
        "retries": 1,
        "attempt_log": [
            {"backend": "gpu-b", "outcome": "timeout", "duration_ms": 1500.0},
            {"backend": "gpu-a", "outcome": "ok", "duration_ms": 812.5},
        ],
        "deciding_policy": "prefix-cache-scorer",
        "reasons": {"prefix-cache-scorer": "prefix: 14,208 of 15,002 tokens cached"},
        "prompt_tokens": 15_002,
        "cached_tokens": 14_208,
        "predicted_cached_tokens": 14_000,
        "completion_tokens": 96,
        "ttft_ms": 120.25,
        "tpot_ms": None,
        "e2e_ms": 812.5,
        "overhead_ms": 0.75,
        "decision_us": 210.0,
        "cost_usd": 0.001234,
        "priority": "interactive",
        "admission": "queued",
        "queue_ms": 12.5,
        "cascade": {"cascade": "auto", "tier": 0, "outcome": "escalated", "failures": []},
        "prompt": '[{"role":"user","content":"Grüß dich, 世界"}]',  # JSON the gateway made
    }
    return row | changes


def quality_event_row(created_at: datetime) -> Row:
    return {
        "created_at": created_at,
        "backend": "gpu-a",
        "model": "llama-3-8b",
        "from_state": "healthy",
        "to_state": "degraded",
        "reason": "tool calls: 4 of 20 arguments failed the schema",
        "fidelity": 0.62,
        "sla": 0.97,
        "replica": REPLICA,
    }


def quality_score_row(created_at: datetime) -> Row:
    return {
        "created_at": created_at,
        "backend": "gpu-a",
        "model": "llama-3-8b",
        "state": "degraded",
        "fidelity": 0.62,
        "sla": 0.97,
        "signals": [{"signal": "tool-args", "score": 0.8, "rate": 0.2, "total": 20}],
        "replica": REPLICA,
    }


def probe_row(created_at: datetime) -> Row:
    return {
        "created_at": created_at,
        "backend": "gpu-a",
        "model": "llama-3-8b",
        "kind": "arithmetic",
        "ok": None,
        "detail": "answer cut off",
        "tokens": 12,
        "latency_ms": 33.5,
        "replica": REPLICA,
    }


SAMPLES: dict[TableName, Callable[[datetime], Row]] = {
    "requests": request_row,
    "quality_events": quality_event_row,
    "quality_scores": quality_score_row,
    "probe_results": probe_row,
}


async def read_rows(url: str, table: str) -> list[Row]:
    """Every row of `table` in insertion order, without ids, `created_at` as aware UTC."""
    engine = make_engine(url, connect_timeout_s=5)
    try:
        async with engine.connect() as conn:
            query = select(TABLES[table]).order_by(TABLES[table].c.id)
            rows = [dict(row) for row in (await conn.execute(query)).mappings()]
    finally:
        await engine.dispose()
    for row in rows:
        del row["id"]
        if row["created_at"].tzinfo is None:  # SQLite keeps no zone; the writer stores UTC
            row["created_at"] = row["created_at"].replace(tzinfo=UTC)
    return rows
