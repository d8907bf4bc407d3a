from __future__ import annotations

import math
from typing import Any

import pytest

from policies.base import Verdict
from policies.filters.sla_filter import SlaFilter
from tests.policies.builders import backend, snapshot

# 12,400-token prompt at 10,000 tokens/s: 1,240 ms uncached; "fast" holds 12,000 (40 ms).
PROMPT = 12_400


@pytest.mark.parametrize(
    ("slow", "targets", "strict", "kept", "reasons"),
    [
        pytest.param(
            {}, {}, False, {"fast", "slow"}, dict.fromkeys(("fast", "slow"), "no SLA"), id="no-sla"
        ),
        pytest.param(
            {},
            {"ttft_slo_ms": 500},
            False,
            {"fast"},
            {
                "fast": "predicted TTFT 40 ms ≤ target 500 ms",
                "slow": "predicted TTFT 1,240 ms > target 500 ms",
            },
            id="ttft",
        ),
        pytest.param(
            {"tpot_ms": 22.0, "decoding": 20},
            {"tpot_slo_ms": 25},
            False,
            {"fast"},
            {
                "fast": "predicted TPOT 20 ms ≤ target 25 ms",
                "slow": "predicted TPOT 26.4 ms > target 25 ms",
            },
            id="tpot",
        ),
        pytest.param(
            {"tpot_ms": 22.0, "decoding": 20},
            {"ttft_slo_ms": 2_000, "tpot_slo_ms": 25},
            False,
            {"fast"},
            {
                "fast": "predicted TTFT 40 ms ≤ target 2,000 ms; "
                "predicted TPOT 20 ms ≤ target 25 ms",
                # 1,240 ms + 7 chunked steps * 22 ms of decode batch
                "slow": "predicted TTFT 1,394 ms ≤ target 2,000 ms; "
                "predicted TPOT 26.4 ms > target 25 ms",
            },
            id="both",
        ),
        pytest.param(
            {},
            {"ttft_slo_ms": 1_240},
            False,
            {"fast", "slow"},
            {
                "fast": "predicted TTFT 40 ms ≤ target 1,240 ms",
                "slow": "predicted TTFT 1,240 ms ≤ target 1,240 ms",
            },
            id="exactly-on-target",
        ),
    ],
)
def test_sla_filter(
    slow: dict[str, Any],
    targets: dict[str, float],
    strict: bool,
    kept: set[str],
    reasons: dict[str, str],
) -> None:
    policy = SlaFilter("sla", SlaFilter.Params(strict=strict))
    candidates = [backend("fast"), backend("slow", **slow)]
    snap = snapshot(candidates, prompt_tokens=PROMPT, cached_tokens={"fast": 12_000}, **targets)
    verdicts = policy.filter(snap, candidates)
    assert {n for n, v in verdicts.items() if v.keep} == kept
    assert {n: v.reason for n, v in verdicts.items()} == reasons


@pytest.mark.parametrize(
    ("strict", "kept", "slow_reason"),
    [
        (
            False,
            {"fast", "slow"},
            "all candidates predicted to miss TTFT 500 ms or TPOT 25 ms; keeping all "
            "(predicted TTFT 1,240 ms > target 500 ms; predicted TPOT 20 ms ≤ target 25 ms)",
        ),
        (
            True,
            set(),
            "predicted TTFT 1,240 ms > target 500 ms; predicted TPOT 20 ms ≤ target 25 ms",
        ),
    ],
)
def test_all_miss_keeps_all_unless_strict(strict: bool, kept: set[str], slow_reason: str) -> None:
    policy = SlaFilter("sla", SlaFilter.Params(strict=strict))
    # "fast" meets TTFT but its decode batch misses TPOT; "slow" misses TTFT.
    candidates = [backend("fast", tpot_ms=30.0), backend("slow")]
    snap = snapshot(
        candidates,
        prompt_tokens=PROMPT,
        cached_tokens={"fast": 12_000},
        ttft_slo_ms=500,
        tpot_slo_ms=25,
    )
    verdicts = policy.filter(snap, candidates)
    assert {n for n, v in verdicts.items() if v.keep} == kept
    assert verdicts["slow"].reason == slow_reason


def test_all_miss_one_target_names_only_that_target() -> None:
    policy = SlaFilter("sla", SlaFilter.Params())
    candidates = [backend("a", queued_prefill_tokens=5_000), backend("b")]
    snap = snapshot(candidates, prompt_tokens=PROMPT, ttft_slo_ms=500)
    verdicts = policy.filter(snap, candidates)
    assert verdicts["b"] == Verdict(
        True,
        "all candidates predicted to miss TTFT 500 ms; keeping all "
        "(predicted TTFT 1,240 ms > target 500 ms)",
    )
    assert verdicts["a"].keep


def test_a_nan_prediction_is_not_a_miss() -> None:
    """Only a prediction above the target misses it; NaN (no estimate) keeps the candidate."""
    candidates = [backend("a", tpot_ms=math.nan), backend("b", tpot_ms=500.0)]
    flt = SlaFilter("sla-filter", SlaFilter.Params(strict=True))
    verdicts = flt.filter(snapshot(candidates, tpot_slo_ms=50.0), candidates)
    assert (verdicts["a"].keep, verdicts["b"].keep) == (True, False)
