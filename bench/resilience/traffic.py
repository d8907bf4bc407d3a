"""Open-loop traffic at a steady rate: a request starts every 1/rate s, whether or not the
earlier ones have finished, up to a cap on requests in flight."""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass, field

from bench.resilience.client import Outcome, chat_body, send
from bench.resilience.servers import ROUTE

_PROMPTS = 512  # distinct prompts: the prefix index and caches see varied traffic


@dataclass(frozen=True)
class Mix:
    """What each request asks for; every `stream_every`-th request is not streamed."""

    max_tokens: int = 16
    stream_every: int = 4  # 1 in 4 whole answers, 3 in 4 streams
    timeout_s: float = 60.0


@dataclass
class Traffic:
    """Requests sent so far and their outcomes; `skipped` counts starts over the cap."""

    outcomes: list[Outcome] = field(default_factory=list)
    skipped: int = 0
    in_flight: int = 0


def _prompt(number: int) -> str:
    return f"Request {number % _PROMPTS}: tell me about rail yards and their switches."


async def steady(
    port: int, rate_per_s: float, duration_s: float, mix: Mix, traffic: Traffic, max_in_flight: int
) -> None:
    """Send for `duration_s` at `rate_per_s`, then wait for the last answers."""
    tasks: set[asyncio.Task[None]] = set()
    started = time.monotonic()
    for number in itertools.count():
        due = started + number / rate_per_s
        if due - started >= duration_s:
            break
        await asyncio.sleep(max(0.0, due - time.monotonic()))
        if traffic.in_flight >= max_in_flight:
            traffic.skipped += 1
            continue
        task = asyncio.create_task(_one(port, number, mix, traffic))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.gather(*tasks)


async def _one(port: int, number: int, mix: Mix, traffic: Traffic) -> None:
    stream = number % mix.stream_every != 0
    body = chat_body(ROUTE, stream=stream, max_tokens=mix.max_tokens, prompt=_prompt(number))
    traffic.in_flight += 1
    try:
        outcome = await send("127.0.0.1", port, body, stream=stream, timeout_s=mix.timeout_s)
    finally:
        traffic.in_flight -= 1
    traffic.outcomes.append(outcome)


def summary(outcomes: list[Outcome]) -> dict[str, object]:
    ok = sum(o.ok for o in outcomes)
    errors: dict[str, int] = {}
    for outcome in outcomes:
        if not outcome.ok:
            kind = outcome.error.split(":", 1)[0][:60] or f"HTTP {outcome.status}"
            errors[kind] = errors.get(kind, 0) + 1
    return {
        "requests": len(outcomes),
        "ok": ok,
        "failed": len(outcomes) - ok,
        "success_rate": ok / len(outcomes) if outcomes else None,
        "errors": errors,
        "error_examples": [o.error for o in outcomes if not o.ok][:3],
    }
