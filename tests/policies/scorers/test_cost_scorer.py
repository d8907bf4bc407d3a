from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from policies.prices import Prices
from policies.scorers.cost_scorer import CostScorer, per_mtok, usd
from policies.snapshot import Snapshot
from tests.policies.builders import backend, snapshot

CLAUDE = Prices(input_usd_per_mtok=3.0, cached_input_usd_per_mtok=0.3, output_usd_per_mtok=15.0)
GEMINI = Prices(input_usd_per_mtok=0.3, cached_input_usd_per_mtok=0.075, output_usd_per_mtok=2.5)
PROMPT, CACHED = 4_100, 3_900
# 100 output tokens: claude (200 x 3 + 3,900 x 0.3 + 100 x 15) / 1e6 = $0.00327,
# gemini (4,100 x 0.3 + 100 x 2.5) / 1e6 = $0.00148.
CLAUDE_USD, GEMINI_USD = 3_270e-6, 1_480e-6
FLOOR = 1e-6


def scored(
    prices: dict[str, Prices],
    *,
    params: dict[str, Any] | None = None,
    names: tuple[str, ...] = ("claude", "gemini"),
    cached: dict[str, int] | None = None,
    prompt_tokens: int = PROMPT,
    max_tokens: int | None = 100,
) -> tuple[dict[str, float], dict[str, str]]:
    policy = CostScorer("cost", CostScorer.Params.model_validate(params or {}))
    candidates = [backend(n) for n in names]
    snap: Snapshot = snapshot(
        candidates,
        prompt_tokens=prompt_tokens,
        max_tokens=max_tokens,
        cached_tokens={"claude": CACHED} if cached is None else cached,
    )
    scores = policy.score(replace(snap, prices=prices), candidates)
    return {n: s.value for n, s in scores.items()}, {n: s.reason for n, s in scores.items()}


@pytest.mark.parametrize(
    ("prices", "kwargs", "expected"),
    [
        pytest.param(
            {"claude": CLAUDE, "gemini": GEMINI},
            {},
            {"claude": GEMINI_USD / CLAUDE_USD, "gemini": 1.0},
            id="cheaper-despite-cache",
        ),
        pytest.param(
            {"claude": CLAUDE, "gemini": GEMINI},
            {"max_tokens": None},
            # 256 expected output tokens: claude 1,770 + 3,840; gemini 1,230 + 640 (micro-$).
            {"claude": 1_870 / 5_610, "gemini": 1.0},
            id="default-output",
        ),
        pytest.param(
            {"claude": CLAUDE, "gemini": GEMINI},
            {"max_tokens": 100_000, "params": {"max_output_tokens": 100}},
            {"claude": GEMINI_USD / CLAUDE_USD, "gemini": 1.0},
            id="output-capped",
        ),
        pytest.param(
            {"claude": CLAUDE, "gemini": GEMINI},
            {"names": ("claude", "gemini", "local")},
            {"claude": FLOOR / CLAUDE_USD, "gemini": FLOOR / GEMINI_USD, "local": 1.0},
            id="unpriced-is-free",
        ),
        pytest.param(
            {"claude": CLAUDE, "gemini": GEMINI},
            {"names": ("gemini", "local"), "params": {"unpriced_usd_per_mtok": 0.05}},
            # local: 4,200 tokens x $0.05/M = $0.00021.
            {"gemini": 210e-6 / GEMINI_USD, "local": 1.0},
            id="unpriced-amortised",
        ),
        pytest.param(
            {},
            {"names": ("a", "b")},
            {"a": 1.0, "b": 1.0},
            id="all-free-tie",
        ),
        pytest.param(
            {"claude": CLAUDE, "gemini": CLAUDE.model_copy(update={"request_usd": 0.01})},
            {"cached": {}},
            # Same prices, no cache: 4,100 x 3 + 100 x 15 = $0.0138; the fee adds $0.01.
            {"claude": 1.0, "gemini": 13_800 / 23_800},
            id="fee",
        ),
    ],
)
def test_cheapest_scores_highest(
    prices: dict[str, Prices], kwargs: dict[str, Any], expected: dict[str, float]
) -> None:
    values, _ = scored(prices, **kwargs)
    assert values == pytest.approx(expected)


@pytest.mark.parametrize(
    ("cached", "winner", "loser_score"),
    [
        # a: input $1, cached $0.10, output $1; b: input $0.50, output $0.50, no cache.
        # Prompt 10,000, 100 output: a cached 1,000 + 100 = 1,100; b 5,000 + 50 = 5,050.
        pytest.param({"a": 10_000}, "a", 1_100 / 5_050, id="cache-makes-a-cheaper"),
        # a uncached: 10,000 + 100 = 10,100.
        pytest.param({}, "b", 5_050 / 10_100, id="cold-a-costs-more"),
    ],
)
def test_predicted_cache_changes_the_cheapest(
    cached: dict[str, int], winner: str, loser_score: float
) -> None:
    prices = {
        "a": Prices(input_usd_per_mtok=1, cached_input_usd_per_mtok=0.1, output_usd_per_mtok=1),
        "b": Prices(input_usd_per_mtok=0.5, output_usd_per_mtok=0.5),
    }
    values, _ = scored(prices, names=("a", "b"), cached=cached, prompt_tokens=10_000)
    loser = "b" if winner == "a" else "a"
    assert values[winner] == 1.0
    assert values[loser] == pytest.approx(loser_score)


LONG = Prices.model_validate(
    {
        "input_usd_per_mtok": 1.25,
        "output_usd_per_mtok": 10.0,
        "tiers": [{"above_prompt_tokens": 200_000, "input_usd_per_mtok": 2.5}],
    }
)


@pytest.mark.parametrize(
    ("prompt", "expected_usd", "tier"),
    [
        pytest.param(200_000, 200_000 * 1.25e-6 + 100 * 10e-6, "tier ≤ 200K", id="base"),
        pytest.param(200_001, 200_001 * 2.5e-6 + 100 * 10e-6, "tier > 200K", id="long"),
    ],
)
def test_the_whole_request_is_priced_at_its_tier(
    prompt: int, expected_usd: float, tier: str
) -> None:
    flat = Prices(input_usd_per_mtok=2.0, output_usd_per_mtok=10.0)
    values, reasons = scored(
        {"claude": LONG, "gemini": flat}, cached={}, prompt_tokens=prompt, max_tokens=100
    )
    flat_usd = prompt * 2e-6 + 100 * 10e-6
    assert values["claude"] == pytest.approx(min(expected_usd, flat_usd) / expected_usd)
    assert reasons["claude"].endswith(tier)


@pytest.mark.parametrize(
    ("name", "prices", "params", "reason"),
    [
        pytest.param(
            "claude",
            CLAUDE,
            {},
            "predicted $0.0033: 3,900 of 4,100 prompt tokens cached at $0.30/M, "
            "200 at $3/M, 100 output at $15/M",
            id="cached",
        ),
        pytest.param(
            "gemini",
            GEMINI,
            {},
            "predicted $0.0015: 4,100 prompt tokens at $0.30/M, 100 output at $2.50/M",
            id="uncached",
        ),
        pytest.param(
            "claude",
            LONG,
            {},
            "predicted $0.0061: 3,900 of 4,100 prompt tokens cached at $1.25/M, "
            "200 at $1.25/M, 100 output at $10/M, tier ≤ 200K",
            id="tiered",
        ),
        pytest.param(
            "claude",
            CLAUDE.model_copy(update={"request_usd": 0.002}),
            {},
            "predicted $0.0053: 3,900 of 4,100 prompt tokens cached at $0.30/M, "
            "200 at $3/M, 100 output at $15/M, fee $0.0020",
            id="fee",
        ),
        pytest.param("claude", None, {}, "predicted $0: no prices (free)", id="free"),
        pytest.param(
            "claude",
            None,
            {"unpriced_usd_per_mtok": 0.05},
            "predicted $0.00021: no prices; 4,200 tokens at $0.05/M assumed",
            id="amortised",
        ),
    ],
)
def test_reasons_in_money(
    name: str, prices: Prices | None, params: dict[str, Any], reason: str
) -> None:
    _, reasons = scored({name: prices} if prices else {}, params=params, names=(name,))
    assert reasons[name] == reason


@pytest.mark.parametrize(
    ("amount", "text"),
    [
        (0.0, "$0"),
        (0.0041, "$0.0041"),
        (0.000012, "$0.000012"),
        (1.256, "$1.26"),
        (0.05, "$0.0500"),
    ],
)
def test_usd(amount: float, text: str) -> None:
    assert usd(amount) == text


@pytest.mark.parametrize(
    ("rate", "text"), [(15.0, "$15/M"), (0.3, "$0.30/M"), (0.075, "$0.075/M"), (2.5, "$2.50/M")]
)
def test_per_mtok(rate: float, text: str) -> None:
    assert per_mtok(rate) == text


def test_no_candidates() -> None:
    policy = CostScorer("cost", CostScorer.Params())
    assert dict(policy.score(snapshot([]), [])) == {}


@pytest.mark.parametrize(
    ("use_cache", "expected"),
    [
        # a's cache counted: 1,100 micro-$ against b's 5,050 (as above).
        pytest.param(True, {"a": 1.0, "b": 1_100 / 5_050}, id="cache-counted"),
        # Ignored: a costs 10,000 + 100 = 10,100 micro-$, b 5,050: the list price wins.
        pytest.param(False, {"a": 5_050 / 10_100, "b": 1.0}, id="cache-ignored"),
    ],
)
def test_use_cache_false_prices_every_prompt_token_as_input(
    use_cache: bool, expected: dict[str, float]
) -> None:
    prices = {
        "a": Prices(input_usd_per_mtok=1, cached_input_usd_per_mtok=0.1, output_usd_per_mtok=1),
        "b": Prices(input_usd_per_mtok=0.5, output_usd_per_mtok=0.5),
    }
    values, reasons = scored(
        prices,
        names=("a", "b"),
        cached={"a": 10_000},
        prompt_tokens=10_000,
        params={"use_cache": use_cache},
    )
    assert values == pytest.approx(expected)
    assert ("cached" in reasons["a"]) is use_cache
