"""`switchyard bench soak`: a steady rate for minutes; does the gateway's memory settle?

Requests arrive open-loop at `rate_per_s` (3 in 4 streamed), the gateway writes every
record to a SQLite store, and its RSS is read every `sample_every_s`. Growth is measured
from the end of the warm-up (bounded structures such as the decision ring, the prefix
index and the dashboard's series fill during it) to the end of the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.resilience.servers import (
    EngineSpec,
    GatewaySpec,
    ProcessReading,
    raise_fd_limit,
    read_process,
    running,
)
from bench.resilience.traffic import Mix, Traffic, steady, summary

_ENDS = 3  # samples averaged at each end of the measured window


@dataclass(frozen=True)
class SoakParams:
    minutes: float = 10.0
    rate_per_s: float = 40.0
    warmup_s: float = 120.0
    sample_every_s: float = 5.0
    engines: int = 2
    token_delay_ms: float = 5.0
    max_tokens: int = 16
    max_in_flight: int = 2000


async def _sample(pid: int, every_s: float, stop: asyncio.Event) -> list[ProcessReading]:
    readings: list[ProcessReading] = []
    while not stop.is_set():
        readings.append(read_process(pid))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s)
    return readings


async def _drive(params: SoakParams, port: int, pid: int) -> dict[str, Any]:
    started = time.monotonic()
    stop = asyncio.Event()
    sampler = asyncio.create_task(_sample(pid, params.sample_every_s, stop))
    traffic = Traffic()
    mix = Mix(max_tokens=params.max_tokens)
    await steady(port, params.rate_per_s, params.minutes * 60, mix, traffic, params.max_in_flight)
    stop.set()
    readings = await sampler
    return {**_growth(readings, started + params.warmup_s), **summary(traffic.outcomes)}


def _growth(readings: list[ProcessReading], warm_at: float) -> dict[str, Any]:
    warm = [r for r in readings if r.at >= warm_at]
    if len(warm) < 2 * _ENDS:
        return {"rss_growth_pct": None, "note": "too few samples after the warm-up"}
    start = statistics.fmean(r.rss_kb for r in warm[:_ENDS])
    end = statistics.fmean(r.rss_kb for r in warm[-_ENDS:])
    first = readings[0].at
    return {
        "rss_start_mb": round(readings[0].rss_kb / 1024, 1),
        "rss_after_warmup_mb": round(start / 1024, 1),
        "rss_end_mb": round(end / 1024, 1),
        "rss_max_mb": round(max(r.rss_kb for r in readings) / 1024, 1),
        "rss_growth_pct": round(100 * (end - start) / start, 2),
        "fds_max": max(r.fds for r in readings),
        "rss_mb_timeline": [
            [round(r.at - first), round(r.rss_kb / 1024, 1)]
            for r in readings[:: max(1, len(readings) // 40)]
        ],
    }


def run(params: SoakParams, workdir: Path) -> dict[str, Any]:
    raise_fd_limit(4 * params.max_in_flight + 1024)
    engine = EngineSpec(count=params.engines, token_delay_ms=params.token_delay_ms)
    store = GatewaySpec(store_url=f"sqlite+aiosqlite:///{workdir}/records.db")
    with running(engine, store, workdir) as fleet:
        result = asyncio.run(_drive(params, fleet.port, fleet.gateway.pid))
    return {"params": asdict(params), **result}


def passed(result: dict[str, Any], max_growth_pct: float = 10.0) -> bool:
    growth = result.get("rss_growth_pct")
    return result["failed"] == 0 and growth is not None and growth < max_growth_pct
