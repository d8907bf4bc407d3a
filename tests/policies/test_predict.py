from __future__ import annotations

from typing import Any

import pytest

from policies.predict import (
    cached_prompt_tokens,
    decode_interference_ms,
    describe_cache,
    predicted_tpot_ms,
    predicted_ttft_ms,
    uncached_tokens,
)
from tests.policies.builders import backend, snapshot


@pytest.mark.parametrize(
    ("prompt", "cached", "expected_cached", "expected_uncached"),
    [
        pytest.param(13_100, {"a": 12_800}, 12_800, 300, id="partial-hit"),
        pytest.param(13_100, {}, 0, 13_100, id="miss"),
        pytest.param(13_100, {"a": 20_000}, 13_100, 0, id="capped-at-prompt"),
        pytest.param(13_100, {"a": -5}, 0, 13_100, id="negative-is-none"),
        pytest.param(0, {"a": 4_000}, 4_000, 0, id="prompt-not-counted"),
    ],
)
def test_cached_and_uncached_tokens(
    prompt: int, cached: dict[str, int], expected_cached: int, expected_uncached: int
) -> None:
    b = backend("a")
    snap = snapshot([b], prompt_tokens=prompt, cached_tokens=cached)
    assert cached_prompt_tokens(snap, b) == expected_cached
    assert uncached_tokens(snap, b) == expected_uncached


@pytest.mark.parametrize(
    ("fields", "cached", "chunk_tokens", "expected_ms"),
    [
        pytest.param({}, 12_800, 2048, 30.0, id="hit-idle"),
        pytest.param({}, 0, 2048, 1_310.0, id="miss-idle"),
        pytest.param({"network_ms": 15.0}, 0, 2048, 1_325.0, id="network"),
        pytest.param({"queued_prefill_tokens": 40_000}, 12_800, 2048, 4_030.0, id="queue"),
        pytest.param({"prefill_tokens_per_s": 5_000.0}, 0, 2048, 2_620.0, id="slow-engine"),
        # 13,100 tokens in steps of 2,048 - 48 = 2,000: 7 steps, each also a 20 ms decode step
        pytest.param({"decoding": 48}, 0, 2048, 1_310.0 + 7 * 20.0, id="decodes-interfere"),
        pytest.param({"decoding": 48}, 0, 8192, 1_310.0 + 2 * 20.0, id="bigger-chunks"),
        # a full hit on a decoding backend still waits for one step
        pytest.param({"decoding": 1}, 13_100, 2048, 20.0, id="full-hit-one-step"),
        pytest.param({"prefill_tokens_per_s": 0.0}, 13_099, 2048, 1_000.0, id="zero-speed-guard"),
    ],
)
def test_predicted_ttft_ms(
    fields: dict[str, Any], cached: int, chunk_tokens: int, expected_ms: float
) -> None:
    b = backend("a", **fields)
    snap = snapshot([b], prompt_tokens=13_100, cached_tokens={"a": cached})
    assert predicted_ttft_ms(snap, b, chunk_tokens=chunk_tokens) == pytest.approx(expected_ms)


@pytest.mark.parametrize(
    ("decoding", "prefill_tokens", "chunk_tokens", "expected_ms"),
    [
        (0, 50_000, 2048, 0.0),
        (1, 0, 2048, 20.0),
        (1, 2047, 2048, 20.0),
        (1, 2048, 2048, 40.0),
        (4000, 10, 2048, 200.0),  # a batch over the budget: one prefill token per step
    ],
)
def test_decode_interference_ms(
    decoding: int, prefill_tokens: int, chunk_tokens: int, expected_ms: float
) -> None:
    b = backend("a", decoding=decoding)
    assert decode_interference_ms(b, prefill_tokens, chunk_tokens=chunk_tokens) == expected_ms


@pytest.mark.parametrize(
    ("tpot_ms", "decoding", "growth", "expected_ms"),
    [
        (20.0, 0, 0.01, 20.0),
        (20.0, 10, 0.01, 22.0),
        (20.0, 100, 0.01, 40.0),
        (20.0, 100, 0.0, 20.0),
        (35.0, 4, 0.05, 42.0),
    ],
)
def test_predicted_tpot_ms(
    tpot_ms: float, decoding: int, growth: float, expected_ms: float
) -> None:
    b = backend("a", tpot_ms=tpot_ms, decoding=decoding)
    assert predicted_tpot_ms(b, growth_per_decode=growth) == pytest.approx(expected_ms)


@pytest.mark.parametrize(
    ("cached", "prompt", "text"),
    [
        (12_800, 13_100, "12,800 of 13,100 prompt tokens cached"),
        (0, 13_100, "no cached prefix (13,100 prompt tokens)"),
        (4_096, 0, "4,096 prompt tokens cached"),
        (0, 0, "no cached prefix"),
    ],
)
def test_describe_cache(cached: int, prompt: int, text: str) -> None:
    assert describe_cache(cached, prompt) == text
