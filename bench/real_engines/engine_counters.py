"""llama-server's own Prometheus counters, read before and after a replay: what each replica
says it evaluated, found cached and spent on prompts, independent of what clients saw."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aiohttp

from gateway.fleet.scrape.engine_metrics import samples

PROMPT_TOKENS = "llamacpp:prompt_tokens_total"
"""Prompt tokens evaluated (cached ones are not counted)."""
CACHED_TOKENS = "llamacpp:prompt_tokens_cached_total"
"""Prompt tokens taken from the cache (newer llama.cpp only)."""
PROMPT_SECONDS = "llamacpp:prompt_seconds_total"
PREDICTED_TOKENS = "llamacpp:tokens_predicted_total"
COUNTERS = (PROMPT_TOKENS, CACHED_TOKENS, PROMPT_SECONDS, PREDICTED_TOKENS)

Counters = dict[str, float]


def parse_counters(text: str) -> Counters:
    """The `COUNTERS` present in an exposition, summed over their series."""
    found: Counters = {}
    for sample in samples(text, COUNTERS):
        found[sample.name] = found.get(sample.name, 0.0) + sample.value
    return found


async def read_counters(session: aiohttp.ClientSession, origin: str) -> Counters | None:
    """GET `origin/metrics`; None when it does not answer (metrics off, engine gone)."""
    try:
        async with session.get(
            f"{origin}/metrics", timeout=aiohttp.ClientTimeout(total=10)
        ) as response:
            if response.status != 200:
                return None
            return parse_counters(await response.text())
    except (aiohttp.ClientError, TimeoutError, OSError):
        return None


def delta(before: Counters | None, after: Counters | None) -> Counters | None:
    """after - before for each counter both readings hold; None without both readings."""
    if before is None or after is None:
        return None
    return {name: after[name] - before.get(name, 0.0) for name in after}


def summed(deltas: Mapping[str, Counters | None], name: str) -> float | None:
    """One counter summed over the replicas; None unless every replica reported it."""
    values = [d.get(name) if d is not None else None for d in deltas.values()]
    if not values or any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None)


def per_replica(deltas: Mapping[str, Counters | None]) -> dict[str, dict[str, Any]]:
    """The deltas as the JSON report keeps them, per replica name."""
    return {name: dict(d) if d is not None else {} for name, d in deltas.items()}
