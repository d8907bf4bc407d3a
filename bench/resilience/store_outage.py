"""`switchyard bench store-outage`: Redis, then PostgreSQL, stopped under traffic and
brought back.

The gateway shares routing state and rate-limit buckets through a private Redis and
writes its records to a private PostgreSQL. Steady traffic runs through five phases of
`phase_s` each: both up; Redis stopped; PostgreSQL stopped too; Redis back; PostgreSQL
back. At the end of each phase the bench reads `/readyz`, the store and Redis metrics and
`/v1/switchyard/state`. After the run it waits for the writer to catch up and compares
the `requests` table with what the clients were answered: every record must be there.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.resilience.client import Outcome
from bench.resilience.servers import (
    EngineSpec,
    GatewaySpec,
    get_json,
    get_text,
    raise_fd_limit,
    running,
)
from bench.resilience.stores import PrivatePostgres, PrivateRedis
from bench.resilience.traffic import Mix, Traffic, steady, summary

_METRICS = (
    "switchyard_store_up",
    'switchyard_store_rows_written_total{table="requests"}',
    "switchyard_telemetry_dropped_total",
    "switchyard_redis_up",
)


@dataclass(frozen=True)
class OutageParams:
    phase_s: float = 20.0
    rate_per_s: float = 20.0
    catch_up_s: float = 120.0
    token_delay_ms: float = 10.0
    max_tokens: int = 16
    engines: int = 2
    max_in_flight: int = 2000


def _metric_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(_METRICS)]


def _observe(port: int) -> dict[str, Any]:
    base = f"http://127.0.0.1:{port}"
    status, ready = get_json(f"{base}/readyz")
    _, state = get_json(f"{base}/v1/switchyard/state")
    state = state or {}
    limits = state.get("tenancy", {}).get("limits", {})
    return {
        "readyz_status": status,
        "readyz": ready,
        "metrics": _metric_lines(get_text(f"{base}/metrics")),
        "sync_connected": state.get("connected"),
        "limits_redis": limits.get("redis"),
    }


async def _phase(
    name: str, seconds: float, traffic: Traffic, port: int, action: Callable[[], None] | None
) -> dict[str, Any]:
    if action is not None:
        await asyncio.to_thread(action)
    first = len(traffic.outcomes)
    started = time.monotonic()
    await asyncio.sleep(seconds)
    observed = await asyncio.to_thread(_observe, port)
    finished = [o for o in traffic.outcomes[first:] if o.ended >= started]
    return {"phase": name, **observed, "answered": summary(finished)}


async def _drive(
    params: OutageParams, port: int, redis: PrivateRedis, postgres: PrivatePostgres
) -> dict[str, Any]:
    traffic = Traffic()
    mix = Mix(max_tokens=params.max_tokens)
    total_s = 5 * params.phase_s
    load = asyncio.create_task(
        steady(port, params.rate_per_s, total_s, mix, traffic, params.max_in_flight)
    )
    steps: list[tuple[str, Callable[[], None] | None]] = [
        ("both up", None),
        ("redis down", redis.stop),
        ("redis and postgres down", postgres.stop),
        ("postgres down", redis.start),
        ("both back", postgres.start),
    ]
    phases = [await _phase(name, params.phase_s, traffic, port, act) for name, act in steps]
    await load
    records = await _catch_up(postgres, traffic.outcomes, params.catch_up_s)
    after = await asyncio.to_thread(_observe, port)
    return {"phases": phases, "after": after, "all": summary(traffic.outcomes), **records}


async def _catch_up(
    postgres: PrivatePostgres, outcomes: list[Outcome], timeout_s: float
) -> dict[str, Any]:
    """Wait until the table holds a row per request (or `timeout_s`), then compare."""
    expected = {o.decision for o in outcomes if o.decision}
    started = time.monotonic()
    ids: list[str] = []
    while time.monotonic() - started < timeout_s:
        ids = await postgres.decision_ids()
        if len(ids) >= len(outcomes):
            break
        await asyncio.sleep(1.0)
    stored = set(ids)
    return {
        "requests_sent": len(outcomes),
        "records_in_db": len(ids),
        "records_missing": len(expected - stored),
        "records_duplicated": len(ids) - len(stored),
        "catch_up_s": round(time.monotonic() - started, 1),
    }


def run(params: OutageParams, workdir: Path) -> dict[str, Any]:
    raise_fd_limit(4 * params.max_in_flight + 1024)
    redis = PrivateRedis(workdir)
    postgres = PrivatePostgres()
    try:
        postgres.create()
        redis.start()
        postgres.start()
        engine = EngineSpec(count=params.engines, token_delay_ms=params.token_delay_ms)
        spec = GatewaySpec(store_url=postgres.url, redis_url=redis.url)
        with running(engine, spec, workdir) as fleet:
            result = asyncio.run(_drive(params, fleet.port, redis, postgres))
    finally:
        redis.stop()
        postgres.remove()
    return {"params": asdict(params), **result}


def passed(result: dict[str, Any]) -> bool:
    served = all(p["answered"]["failed"] == 0 for p in result["phases"])
    return served and result["records_missing"] == 0 and result["all"]["failed"] == 0
