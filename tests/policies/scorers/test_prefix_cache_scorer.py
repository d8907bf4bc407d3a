from __future__ import annotations

import pytest

from policies.scorers.prefix_cache_scorer import PrefixCacheScorer
from tests.policies.builders import backend, snapshot


@pytest.mark.parametrize(
    ("cached", "scale_tokens", "value", "reason"),
    [
        pytest.param(0, 2048, 0.0, "no cached prefix (13,100 prompt tokens)", id="miss"),
        pytest.param(100, 2048, 0.0476, "100 of 13,100 prompt tokens cached", id="tiny-hit"),
        pytest.param(2_048, 2048, 0.6321, "2,048 of 13,100 prompt tokens cached", id="2k"),
        pytest.param(8_192, 2048, 0.9817, "8,192 of 13,100 prompt tokens cached", id="8k"),
        pytest.param(12_800, 2048, 0.9981, "12,800 of 13,100 prompt tokens cached", id="most"),
        pytest.param(50_000, 2048, 0.9983, "13,100 of 13,100 prompt tokens cached", id="capped"),
        pytest.param(2_048, 1024, 0.8647, "2,048 of 13,100 prompt tokens cached", id="scale"),
    ],
)
def test_scores_tokens_saved(cached: int, scale_tokens: int, value: float, reason: str) -> None:
    policy = PrefixCacheScorer("prefix", PrefixCacheScorer.Params(scale_tokens=scale_tokens))
    b = backend("a")
    score = policy.score(snapshot([b], prompt_tokens=13_100, cached_tokens={"a": cached}), [b])["a"]
    assert score.value == pytest.approx(value, abs=1e-4)
    assert score.reason == reason


def test_tokens_saved_not_share_of_prompt() -> None:
    # 90% of a short prompt is worth less than 20% of a long one.
    policy = PrefixCacheScorer("prefix", PrefixCacheScorer.Params())
    b = backend("a")
    short = policy.score(snapshot([b], prompt_tokens=200, cached_tokens={"a": 180}), [b])["a"]
    long = policy.score(snapshot([b], prompt_tokens=30_000, cached_tokens={"a": 6_000}), [b])["a"]
    assert short.value < 0.1 < 0.9 < long.value


def test_scores_every_candidate() -> None:
    policy = PrefixCacheScorer("prefix", PrefixCacheScorer.Params())
    candidates = [backend("a"), backend("b"), backend("c")]
    snap = snapshot(candidates, prompt_tokens=4_000, cached_tokens={"b": 4_000, "c": 1_000})
    scores = policy.score(snap, candidates)
    assert sorted(scores, key=lambda n: -scores[n].value) == ["b", "c", "a"]
