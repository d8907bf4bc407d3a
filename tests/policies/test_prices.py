"""Prices: defaults, context-length tiers, cache reads and writes, reasoning, the fee."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from policies.prices import PriceBook, Prices, TokenUse, short_tokens

SONNET: dict[str, Any] = {
    "input_usd_per_mtok": 3.0,
    "cached_input_usd_per_mtok": 0.3,
    "cache_write_usd_per_mtok": 3.75,
    "cache_write_1h_usd_per_mtok": 6.0,
    "output_usd_per_mtok": 15.0,
    "tiers": [
        {
            "above_prompt_tokens": 200_000,
            "input_usd_per_mtok": 6.0,
            "cached_input_usd_per_mtok": 0.6,
            "cache_write_usd_per_mtok": 7.5,
            "output_usd_per_mtok": 22.5,
        }
    ],
}


@pytest.mark.parametrize(
    ("prices", "use", "expected"),
    [
        pytest.param({}, TokenUse(1000, 1000, 500), 0.0, id="free-by-default"),
        pytest.param(
            {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 2.0},
            TokenUse(1_000_000, 1_000_000, 400_000),
            1.0 + 2.0,
            id="cached-at-input-price-when-unset",
        ),
        pytest.param(
            SONNET,
            TokenUse(prompt_tokens=4_100, completion_tokens=0, cached_tokens=3_900),
            (200 * 3.0 + 3_900 * 0.3) / 1e6,
            id="cached-reads",
        ),
        pytest.param(
            SONNET,
            TokenUse(10_000, 100, cached_tokens=4_000, cache_write_tokens=5_000),
            (1_000 * 3.0 + 4_000 * 0.3 + 5_000 * 3.75 + 100 * 15.0) / 1e6,
            id="cache-writes-short",
        ),
        pytest.param(
            SONNET,
            TokenUse(10_000, 0, cache_write_tokens=2_000, cache_write_1h_tokens=3_000),
            (5_000 * 3.0 + 2_000 * 3.75 + 3_000 * 6.0) / 1e6,
            id="cache-writes-long",
        ),
        pytest.param(
            SONNET,
            TokenUse(200_000, 1_000),
            (200_000 * 3.0 + 1_000 * 15.0) / 1e6,
            id="at-threshold-base-tier",
        ),
        pytest.param(
            SONNET,
            TokenUse(200_001, 1_000, cached_tokens=100_001),
            (100_000 * 6.0 + 100_001 * 0.6 + 1_000 * 22.5) / 1e6,
            id="above-threshold-whole-request-at-tier",
        ),
        pytest.param(
            {"output_usd_per_mtok": 10.0, "reasoning_usd_per_mtok": 30.0},
            TokenUse(0, 1_000, reasoning_tokens=400),
            (600 * 10.0 + 400 * 30.0) / 1e6,
            id="reasoning-apart",
        ),
        pytest.param(
            {"output_usd_per_mtok": 10.0},
            TokenUse(0, 1_000, reasoning_tokens=400),
            1_000 * 10.0 / 1e6,
            id="reasoning-at-output-price",
        ),
        pytest.param(
            {"input_usd_per_mtok": 1.0, "request_usd": 0.002},
            TokenUse(1_000),
            0.002 + 0.001,
            id="per-request-fee",
        ),
        pytest.param(
            {"input_usd_per_mtok": 1.0, "cached_input_usd_per_mtok": 0.1},
            TokenUse(100, 0, cached_tokens=500, cache_write_tokens=50),
            100 * 0.1 / 1e6,
            id="counts-clamped",
        ),
    ],
)
def test_cost(prices: dict[str, Any], use: TokenUse, expected: float) -> None:
    assert Prices.model_validate(prices).cost_of(use) == pytest.approx(expected)


def test_three_count_cost_keeps_its_old_meaning() -> None:
    prices = Prices(input_usd_per_mtok=2.0, cached_input_usd_per_mtok=0.5, output_usd_per_mtok=8.0)
    assert prices.cost_usd(1_000_000, 250_000, 500_000) == pytest.approx(1.5 + 0.125 + 4.0)


def test_a_tier_restates_only_what_changes() -> None:
    prices = Prices.model_validate(
        {
            "input_usd_per_mtok": 1.25,
            "output_usd_per_mtok": 10.0,
            "request_usd": 0.01,
            "tiers": [{"above_prompt_tokens": 200_000, "input_usd_per_mtok": 2.5}],
        }
    )
    tier = prices.rates(300_000)
    # Unset cached input follows the tier's own input; set prices are the base's.
    assert (tier.input, tier.cached_input, tier.output, tier.request_usd) == (2.5, 2.5, 10.0, 0.01)
    assert prices.tier_text(tier) == "tier > 200K"
    assert prices.tier_text(prices.rates(10)) == "tier ≤ 200K"
    assert Prices().tier_text(Prices().rates(10)) == ""


def test_the_highest_tier_below_the_prompt_applies() -> None:
    prices = Prices.model_validate(
        {
            "input_usd_per_mtok": 1.0,
            "tiers": [
                {"above_prompt_tokens": 128_000, "input_usd_per_mtok": 2.0},
                {"above_prompt_tokens": 1_000_000, "input_usd_per_mtok": 4.0},
            ],
        }
    )
    assert [prices.rates(n).input for n in (1, 128_000, 128_001, 2_000_000)] == [1, 1, 2, 4]
    assert prices.tier_text(prices.rates(2_000_000)) == "tier > 1M"


@pytest.mark.parametrize(
    ("prices", "message"),
    [
        pytest.param(
            {"tiers": [{"above_prompt_tokens": 9}, {"above_prompt_tokens": 9}]},
            "tiers.1.above_prompt_tokens: 9 must be above the previous tier's 9",
            id="not-ascending",
        ),
        pytest.param({"tiers": [{"above_prompt_tokens": 0}]}, "greater than or equal to 1", id="0"),
        pytest.param({"input_usd_per_mtok": -1}, "greater than or equal to 0", id="negative"),
        pytest.param({"input_per_mtok": 1}, "Extra inputs are not permitted", id="unknown-key"),
        pytest.param(
            {"tiers": [{"above_prompt_tokens": i + 1} for i in range(9)]},
            "at most 8 items",
            id="too-many-tiers",
        ),
    ],
)
def test_invalid_prices(prices: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Prices.model_validate(prices)


def test_a_model_price_overrides_the_backends() -> None:
    default, mini = Prices(input_usd_per_mtok=2.5), Prices(input_usd_per_mtok=0.15)
    book = PriceBook({"openai": default}, {("openai", "gpt-4o-mini"): mini})
    assert book.lookup("openai", "gpt-4o-mini") is mini
    assert book.lookup("openai", "gpt-4o") is default
    assert book.lookup("local", "gpt-4o") is None
    assert book.lookup(None, "gpt-4o") is None


@pytest.mark.parametrize(
    ("tokens", "text"), [(200_000, "200K"), (1_000_000, "1M"), (32_768, "32,768")]
)
def test_short_tokens(tokens: int, text: str) -> None:
    assert short_tokens(tokens) == text
