"""What a replay cost: each answered request priced from its usage at its backend's prices.

The client sees every response's usage (prompt, cached, cache-write and completion tokens,
normalised by the gateway's adapters to OpenAI's fields) and, from the
`x-switchyard-backend` header, the backend that served it; `Prices.cost_of` is the same
function the gateway prices its request records with. So the sum is exact per request and
needs nothing from the gateway, and good requests (those meeting the SLOs) can be told
apart from the rest. Spend on requests that missed the SLOs still counts: cost per good
request is everything spent over the good requests. The gateway's own total
(`switchyard_cost_usd_total` on its /metrics, from its request records) is read as a check.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp

from policies.prices import Prices, TokenUse

from .metrics import Slo
from .schedule import RequestResult


def token_use(result: RequestResult) -> TokenUse | None:
    """The request's usage as the prices see it; None without a reported usage."""
    if not result.ok or result.prompt_tokens is None:
        return None
    return TokenUse(
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens or 0,
        cached_tokens=result.cached_tokens or 0,
        cache_write_tokens=result.cache_write_tokens or 0,
        cache_write_1h_tokens=result.cache_write_1h_tokens or 0,
    )


def request_cost_usd(result: RequestResult, prices: Mapping[str, Prices]) -> float:
    """What the request cost at its backend's prices; 0 without usage or prices (as the
    gateway's records count it)."""
    use = token_use(result)
    found = prices.get(result.backend) if result.backend is not None else None
    return 0.0 if use is None or found is None else found.cost_of(use)


def cost_summary(
    results: Sequence[RequestResult], prices: Mapping[str, Prices], slo: Slo, scale: float
) -> dict[str, Any]:
    """Total cost, per 1,000 requests (all sent), per good request, and per backend."""
    per_backend: dict[str, float] = dict.fromkeys(prices, 0.0)
    total = 0.0
    for result in results:
        cost = request_cost_usd(result, prices)
        total += cost
        if result.backend is not None and cost:
            per_backend[result.backend] = per_backend.get(result.backend, 0.0) + cost
    good = sum(1 for r in results if slo.met_by(r, scale))
    return {
        "total_cost_usd": round(total, 6),
        "cost_per_1k_requests_usd": round(1000 * total / len(results), 6) if results else None,
        "cost_per_good_request_usd": round(total / good, 8) if good else None,
        "cost_usd_by_backend": {name: round(v, 6) for name, v in per_backend.items()},
    }


COST_METRIC = "switchyard_cost_usd_total"
REQUESTS_METRIC = "switchyard_requests_total"
_SETTLE_WITHIN_S = 15.0
_SETTLE_S = 0.2


def metric_total(text: str, name: str = COST_METRIC) -> float:
    """The sum of a counter's samples over all its label sets in a Prometheus text page."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and line[len(name) : len(name) + 1] in ("{", " "):
            try:
                total += float(line.rsplit(" ", 1)[1])
            except (IndexError, ValueError):
                continue
    return total


async def gateway_cost_usd(
    session: aiohttp.ClientSession, base_url: str, requests: int
) -> float | None:
    """The gateway's own total spend once its metrics count all `requests` (its telemetry
    thread records requests in batches, a moment after they end; after `_SETTLE_WITHIN_S`
    the last read); None when /metrics cannot be read."""
    deadline = time.monotonic() + _SETTLE_WITHIN_S
    while True:
        try:
            async with session.get(f"{base_url}/metrics") as response:
                if response.status != 200:
                    return None
                text = await response.text()
        except (aiohttp.ClientError, TimeoutError):
            return None
        if metric_total(text, REQUESTS_METRIC) >= requests or time.monotonic() > deadline:
            return round(metric_total(text), 6)
        await asyncio.sleep(_SETTLE_S)
