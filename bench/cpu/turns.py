"""The measuring turns `bench.cpu` and `bench.ab_trees` share: one server's turn under
load or idle, the cell its CPU adds to, and how a chunk's CPU is derived from two cells."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.load import Pool, Target, request_bytes
from bench.procs import thread_run_s


@dataclass
class Cell:
    """One variant in one phase, summed over its turns."""

    cpu_s: float = 0.0
    requests: int = 0
    chunks: int = 0
    errors: int = 0
    per_request_us: list[float] = field(default_factory=list)
    idle_s: float = 0.0
    """An idle phase's seconds without traffic (`cpu_s` then is the CPU over them)."""
    wakes: int = 0
    """An idle phase's wake-ups."""

    def add_idle(self, cpu_s: float, wakes: int, idle_s: float) -> None:
        self.cpu_s += cpu_s
        self.wakes += wakes
        self.idle_s += idle_s


async def load_turn(
    target: Target,
    concurrency: int,
    requests: int,
    stream: bool,
    max_tokens: int,
    cpu_of: Callable[[], float],
    cell: Cell,
) -> None:
    """One turn of one server in a load phase: a warm-up, then `requests` with the
    server's CPU (`cpu_of`, seconds) read around them, added to `cell`."""
    body = request_bytes(target, stream, max_tokens)
    pool = Pool(target, concurrency)
    try:
        await pool.run(max(2 * concurrency, 20), concurrency, body, stream)
        before = cpu_of()
        got = await pool.run(requests, concurrency, body, stream)
        used = cpu_of() - before
    finally:
        await pool.close()
    done = len(got.latencies)
    cell.cpu_s += used
    cell.requests += done
    cell.chunks += got.chunks
    cell.errors += got.errors
    cell.per_request_us.append(used / max(done, 1) * 1e6)


def chunk_us(stream: Cell, plain: Cell) -> float:
    """CPU µs per chunk: the streams' CPU less their count times the same server's
    non-streaming CPU per request (`plain`, same concurrency), per chunk relayed."""
    plain_us = plain.cpu_s / max(plain.requests, 1) * 1e6
    extra = stream.cpu_s * 1e6 - stream.requests * plain_us
    return extra / max(stream.chunks, 1)


async def idle_turn(pid: int, seconds: float) -> tuple[float, int, float]:
    """(CPU seconds, wake-ups, wall seconds) of process `pid` over `seconds` of no traffic."""
    cpu0, wakes0 = thread_run_s(pid)
    started = time.monotonic()
    await asyncio.sleep(seconds)
    cpu1, wakes1 = thread_run_s(pid)
    return cpu1 - cpu0, wakes1 - wakes0, time.monotonic() - started
