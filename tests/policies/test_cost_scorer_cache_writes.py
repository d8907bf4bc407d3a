"""`cost-scorer` prices the prompt tokens a request writes to an explicit cache (the
snapshot's `cache_writes`) at the write price of the retention asked."""

from __future__ import annotations

from dataclasses import replace

import pytest

from policies.prices import Prices
from policies.scorers.cost_scorer import CostScorer
from policies.snapshot import CacheWrite
from tests.policies.builders import backend, snapshot

# Anthropic's Sonnet prices: writes at 1.25x input (5 min) and 2x (1 h), reads at 0.1x.
SONNET = Prices(
    input_usd_per_mtok=3.0,
    cached_input_usd_per_mtok=0.3,
    cache_write_usd_per_mtok=3.75,
    cache_write_1h_usd_per_mtok=6.0,
    output_usd_per_mtok=15.0,
)
NO_WRITE_PRICES = Prices(
    input_usd_per_mtok=3.0, cached_input_usd_per_mtok=0.3, output_usd_per_mtok=15.0
)
PROMPT, OUTPUT = 4_100, 100


def scored(
    prices: dict[str, Prices],
    cached: dict[str, int],
    writes: dict[str, CacheWrite],
    *,
    use_cache: bool = True,
) -> tuple[dict[str, float], dict[str, str]]:
    params = CostScorer.Params(use_cache=use_cache)
    candidates = [backend(name) for name in prices]
    snap = snapshot(candidates, prompt_tokens=PROMPT, max_tokens=OUTPUT, cached_tokens=cached)
    snap = replace(snap, prices=prices, cache_writes=writes)
    scores = CostScorer("cost", params).score(snap, candidates)
    return {n: s.value for n, s in scores.items()}, {n: s.reason for n, s in scores.items()}


@pytest.mark.parametrize(
    ("cached", "write", "reason"),
    [
        pytest.param(
            3_900,
            CacheWrite(200, "5m"),
            # 3,900 x 0.3 + 200 x 3.75 + 100 x 15 = 3,420 micro-$.
            "predicted $0.0034: 3,900 of 4,100 prompt tokens cached at $0.30/M, "
            "200 written at $3.75/M, 100 output at $15/M",
            id="read-then-write",
        ),
        pytest.param(
            0,
            CacheWrite(4_000, "1h"),
            # 4,000 x 6 + 100 x 3 + 100 x 15 = 25,800 micro-$.
            "predicted $0.0258: 4,000 of 4,100 prompt tokens written at $6/M, "
            "100 at $3/M, 100 output at $15/M",
            id="cold-1h-write",
        ),
        pytest.param(
            2_000,
            CacheWrite(1_000, "5m"),
            # 2,000 x 0.3 + 1,000 x 3.75 + 1,100 x 3 + 100 x 15 = 9,150 micro-$.
            "predicted $0.0092: 2,000 of 4,100 prompt tokens cached at $0.30/M, "
            "1,000 written at $3.75/M, 1,100 at $3/M, 100 output at $15/M",
            id="read-write-and-plain",
        ),
    ],
)
def test_written_tokens_at_the_write_price_in_the_reason(
    cached: int, write: CacheWrite, reason: str
) -> None:
    _, reasons = scored({"claude": SONNET}, {"claude": cached}, {"claude": write})
    assert reasons["claude"] == reason


def test_a_backend_with_write_prices_costs_more_than_one_without() -> None:
    """Same list prices; only one bills writes above input (or writes nothing)."""
    write = CacheWrite(4_000, "5m")
    prices = {"writes": SONNET, "plain": NO_WRITE_PRICES, "none": SONNET}
    values, reasons = scored(prices, {}, {"writes": write, "plain": write})
    # writes: 4,000 x 3.75 + 100 x 3 + 1,500 = 16,800; plain and none: 12,300 + 1,500 = 13,800.
    assert values == pytest.approx({"writes": 13_800 / 16_800, "plain": 1.0, "none": 1.0})
    assert "4,000 of 4,100 prompt tokens written at $3.75/M" in reasons["writes"]
    assert "4,000 of 4,100 prompt tokens written at $3/M" in reasons["plain"]
    assert reasons["none"].startswith("predicted $0.0138: 4,100 prompt tokens at $3/M")


def test_writes_beyond_the_uncached_prompt_are_clamped() -> None:
    _, reasons = scored({"claude": SONNET}, {"claude": 4_000}, {"claude": CacheWrite(900, "5m")})
    assert (
        "4,000 of 4,100 prompt tokens cached at $0.30/M, 100 written at $3.75/M,"
        in (reasons["claude"])
    )


def test_list_price_baseline_ignores_writes() -> None:
    _, reasons = scored(
        {"claude": SONNET}, {"claude": 3_900}, {"claude": CacheWrite(200, "5m")}, use_cache=False
    )
    assert reasons["claude"] == (
        "predicted $0.0138: 4,100 prompt tokens at $3/M, 100 output at $15/M"
    )
