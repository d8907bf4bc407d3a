"""`switchyard bench slow-clients`: a slowloris flood beside a normal client.

`slow_clients` connections each send half a request head, then one more header line every
`dribble_every_s`, never finishing it. A normal client sends `requests` chat requests one
after another (`concurrency` at a time, a connection each) three times: alone, while the
flood is held open, and alone again once the gateway has ended the flood with its header
timeout (`server.clients.header_timeout_s`). Reported: the normal requests' latency in
each phase and the flooded median over the alone one (the ratio), how the slow
connections ended (status, after how long), the gateway's open connections at the peak.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from bench.resilience.client import Outcome, chat_body, percentile, send
from bench.resilience.servers import (
    ROUTE,
    EngineSpec,
    GatewaySpec,
    get_text,
    raise_fd_limit,
    running,
)
from bench.resilience.traffic import summary

if TYPE_CHECKING:
    from pathlib import Path

HALF_A_HEAD = b"POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\n"


@dataclass(frozen=True)
class SlowParams:
    slow_clients: int = 300
    dribble_every_s: float = 2.0
    header_timeout_s: float = 20.0
    requests: int = 300
    concurrency: int = 4
    max_tokens: int = 8


@dataclass
class Slow:
    """One slow connection: when it opened and closed, and the status it was answered."""

    opened: float
    closed: float | None = None
    status: int = 0


async def _open_slow(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, Slow]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(HALF_A_HEAD)
    return reader, writer, Slow(opened=time.monotonic())


async def _hold(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, every_s: float, slow: Slow
) -> None:
    """One more header line every `every_s` until the gateway answers and closes."""
    reading = asyncio.ensure_future(reader.read())
    try:
        while not reading.done():
            await asyncio.wait({reading}, timeout=every_s)
            if not reading.done():
                with contextlib.suppress(OSError):
                    writer.write(b"x-slow: 1\r\n")  # the client's own pace
        answer = reading.result()
        slow.closed = time.monotonic()
        slow.status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0
    finally:
        writer.close()


async def _normal(port: int, params: SlowParams) -> list[Outcome]:
    body = chat_body(ROUTE, stream=False, max_tokens=params.max_tokens, prompt="Hello.")
    outcomes: list[Outcome] = []
    queue = iter(range(params.requests))

    async def worker() -> None:
        for _ in queue:
            outcomes.append(await send("127.0.0.1", port, body, stream=False, timeout_s=60))

    await asyncio.gather(*(worker() for _ in range(params.concurrency)))
    return outcomes


def _latency(phase: str, outcomes: list[Outcome]) -> dict[str, Any]:
    times = [(o.ended - o.started) * 1000 for o in outcomes]
    p99 = percentile(times, 0.99)
    return {
        f"{phase}_p50_ms": round(statistics.median(times), 2),
        f"{phase}_p99_ms": None if p99 is None else round(p99, 2),
        f"{phase}_failed": sum(not o.ok for o in outcomes),
    }


def _open_connections(port: int) -> float | None:
    for line in get_text(f"http://127.0.0.1:{port}/metrics").splitlines():
        if line.startswith("switchyard_client_connections "):
            return float(line.split()[1])
    return None


async def _until_counted(port: int, flood: int) -> float | None:
    """The gateway's count of open connections once it includes the flood (the gauge is
    sampled once a second), or after 5 s whatever it says."""
    counted = None
    for _ in range(50):
        counted = await asyncio.to_thread(_open_connections, port)
        if counted is not None and counted >= flood:
            break
        await asyncio.sleep(0.1)
    return counted


async def _drive(params: SlowParams, port: int) -> dict[str, Any]:
    await _normal(port, SlowParams(requests=50, concurrency=params.concurrency))  # warm-up
    alone = await _normal(port, params)
    opened = await asyncio.gather(*(_open_slow(port) for _ in range(params.slow_clients)))
    slows = [slow for _, _, slow in opened]
    every_s = params.dribble_every_s
    flood = [asyncio.create_task(_hold(r, w, every_s, slow)) for r, w, slow in opened]
    held_from = max(s.opened for s in slows)
    peak = await _until_counted(port, params.slow_clients)
    flooded = await _normal(port, params)
    measured_within_s = time.monotonic() - held_from
    flood_held = all(s.closed is None for s in slows)
    await asyncio.gather(*flood, return_exceptions=True)
    after = await _normal(port, params)
    waited = [s.closed - s.opened for s in slows if s.closed is not None]
    baseline = statistics.median([o.ended - o.started for o in alone + after])
    during = statistics.median([o.ended - o.started for o in flooded])
    return {
        "latency_ratio_flooded_to_alone": round(during / baseline, 3),
        **_latency("alone", alone),
        **_latency("flooded", flooded),
        **_latency("alone_after", after),
        "flood_held_while_measured": flood_held,
        "flood_measured_within_s": round(measured_within_s, 1),
        "open_connections_counted_during_flood": peak,
        "slow_answered_408": sum(s.status == 408 for s in slows),
        "slow_closed_after_s_min": round(min(waited), 2) if waited else None,
        "slow_closed_after_s_max": round(max(waited), 2) if waited else None,
        "all": summary(alone + flooded + after),
    }


def run(params: SlowParams, workdir: Path) -> dict[str, Any]:
    fd_limit = raise_fd_limit(2 * params.slow_clients + 1024)
    clients = {
        "header_timeout_s": params.header_timeout_s,
        "max_connections": params.slow_clients + 4 * params.concurrency + 64,
    }
    gateway = GatewaySpec(server={"clients": clients})
    with running(EngineSpec(count=1, token_delay_ms=0.0), gateway, workdir) as fleet:
        result = asyncio.run(_drive(params, fleet.port))
    return {"params": asdict(params), "fd_limit": fd_limit, **result}


def passed(result: dict[str, Any]) -> bool:
    every_408 = result["slow_answered_408"] == result["params"]["slow_clients"]
    held = bool(result["flood_held_while_measured"])
    return result["all"]["failed"] == 0 and every_408 and held
