"""`switchyard bench hold`: N streaming clients held open at once through the gateway.

Clients start over `ramp_s`; each stream lasts about `ramp_s + hold_s` (slow tokens), so
after the ramp all of them are open together for about `hold_s`. Reported: how many were
open at once, how they ended, time to first byte, and the gateway's RSS and open fds.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.resilience.client import Outcome, chat_body, percentile, send
from bench.resilience.servers import (
    ROUTE,
    EngineSpec,
    GatewaySpec,
    ProcessReading,
    raise_fd_limit,
    read_process,
    running,
)
from bench.resilience.traffic import summary


@dataclass(frozen=True)
class HoldParams:
    clients: int = 1000
    hold_s: float = 60.0
    ramp_s: float = 10.0
    token_delay_ms: float = 500.0
    engines: int = 2
    sample_every_s: float = 1.0


def _open(outcomes: list[Outcome]) -> int:
    """Streams that have sent their first byte and not ended."""
    return sum(1 for o in outcomes if o.first_byte is not None and not o.ended)


async def _watch(
    pid: int, outcomes: list[Outcome], every_s: float, stop: asyncio.Event
) -> tuple[list[int], list[ProcessReading]]:
    held: list[int] = []
    readings: list[ProcessReading] = []
    while not stop.is_set():
        held.append(_open(outcomes))
        readings.append(read_process(pid))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s)
    return held, readings


async def _drive(params: HoldParams, port: int, pid: int) -> dict[str, Any]:
    tokens = math.ceil((params.ramp_s + params.hold_s) * 1000 / params.token_delay_ms)
    body = chat_body(ROUTE, stream=True, max_tokens=tokens, prompt="Hold this line open.")
    timeout_s = 2 * params.ramp_s + params.hold_s + 120
    idle = read_process(pid)
    outcomes = [Outcome(started=0.0, stream=True) for _ in range(params.clients)]
    stop = asyncio.Event()
    watcher = asyncio.create_task(_watch(pid, outcomes, params.sample_every_s, stop))

    async def client(index: int) -> None:
        await asyncio.sleep(params.ramp_s * index / params.clients)
        outcomes[index].started = time.monotonic()
        await send(
            "127.0.0.1", port, body, stream=True, timeout_s=timeout_s, outcome=outcomes[index]
        )

    await asyncio.gather(*(client(i) for i in range(params.clients)))
    stop.set()
    held, readings = await watcher
    first = [s for o in outcomes if (s := o.first_byte_s) is not None]
    peak_rss = max(r.rss_kb for r in readings)
    return {
        "max_tokens_per_stream": tokens,
        "held_at_once_max": max(held),
        "all_held_at_once": max(held) == params.clients,
        "first_byte_p50_ms": _ms(percentile(first, 0.5)),
        "first_byte_p99_ms": _ms(percentile(first, 0.99)),
        "gateway_rss_idle_mb": round(idle.rss_kb / 1024, 1),
        "gateway_rss_peak_mb": round(peak_rss / 1024, 1),
        "gateway_kb_per_stream": round((peak_rss - idle.rss_kb) / params.clients, 1),
        "gateway_fds_idle": idle.fds,
        "gateway_fds_peak": max(r.fds for r in readings),
        **summary(outcomes),
    }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


def run(params: HoldParams, workdir: Path) -> dict[str, Any]:
    # Per held stream: the client's socket, the gateway's two, the engine's one.
    fd_limit = raise_fd_limit(4 * params.clients + 1024)
    engine = EngineSpec(count=params.engines, token_delay_ms=params.token_delay_ms)
    with running(engine, GatewaySpec(), workdir) as fleet:
        result = asyncio.run(_drive(params, fleet.port, fleet.gateway.pid))
    return {"params": asdict(params), "fd_limit": fd_limit, **result}


def passed(result: dict[str, Any]) -> bool:
    return bool(result["all_held_at_once"]) and result["failed"] == 0
