"""What the gateway reads back from its store: the last quality scores, at start."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from gateway.store.database import make_engine, within
from gateway.store.models import TABLES


@dataclass(frozen=True, slots=True)
class SavedQuality:
    backend: str
    model: str
    age_s: float
    evidence: dict[str, tuple[float, float]]
    """signal -> (bad, total) evidence weights when saved."""


async def latest_quality(
    url: str, *, max_age_s: float, max_rows: int, timeout_s: float
) -> list[SavedQuality]:
    """The newest `quality_scores` row of every backend x model saved in the last
    `max_age_s` (looking at `max_rows` rows at most). Raises on database errors."""
    table = TABLES["quality_scores"]
    now = datetime.now(UTC)
    query = (
        select(table.c.backend, table.c.model, table.c.signals, table.c.created_at)
        .where(table.c.created_at >= now - timedelta(seconds=max_age_s))
        .order_by(table.c.created_at.desc())
        .limit(max_rows)
    )
    engine = make_engine(url, timeout_s)
    try:
        async with engine.connect() as conn:
            rows = (await within(timeout_s, conn.execute(query))).all()
    finally:
        await engine.dispose()
    out: dict[tuple[str, str], SavedQuality] = {}
    for backend, model, signals, created_at in rows:
        if (backend, model) in out:
            continue  # an older row of a pair already seen
        saved_at = created_at if created_at.tzinfo else created_at.replace(tzinfo=UTC)
        out[(backend, model)] = SavedQuality(
            backend, model, max(0.0, (now - saved_at).total_seconds()), _evidence(signals)
        )
    return list(out.values())


def _evidence(signals: object) -> dict[str, tuple[float, float]]:
    out: dict[str, tuple[float, float]] = {}
    for item in signals if isinstance(signals, list) else []:
        pair = item.get("evidence") if isinstance(item, dict) else None
        if isinstance(pair, list) and len(pair) == 2 and isinstance(item.get("signal"), str):
            out[item["signal"]] = (float(pair[0]), float(pair[1]))
    return out
