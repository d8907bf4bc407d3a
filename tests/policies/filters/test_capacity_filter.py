from __future__ import annotations

import pytest

from policies.filters.capacity_filter import CapacityFilter
from tests.policies.builders import backend, snapshot


@pytest.mark.parametrize(
    ("in_flight", "limit", "keep", "reason"),
    [
        (0, 64, True, "0 of 64 in flight"),
        (63, 64, True, "63 of 64 in flight"),
        (64, 64, False, "at capacity: 64 of 64 in flight"),
        (70, 64, False, "at capacity: 70 of 64 in flight"),
        (1, 1, False, "at capacity: 1 of 1 in flight"),
    ],
)
def test_capacity(in_flight: int, limit: int, keep: bool, reason: str) -> None:
    policy = CapacityFilter("cap", CapacityFilter.Params())
    b = backend("a", in_flight=in_flight, max_concurrency=limit)
    verdict = policy.filter(snapshot([b]), [b])["a"]
    assert (verdict.keep, verdict.reason) == (keep, reason)


@pytest.mark.parametrize(
    ("tokens_left", "prompt_tokens", "max_tokens", "keep", "reason"),
    [
        (None, 4_000, 196, True, "0 of 64 in flight"),
        (10_000, 4_000, 196, True, "0 of 64 in flight"),
        (4_196, 4_000, 196, True, "0 of 64 in flight"),
        (
            1_200,
            4_000,
            196,
            False,
            "provider token budget: 1,200 tokens left before its reset, this request may use 4,196",
        ),
        (
            3_999,
            4_000,
            None,
            False,
            "provider token budget: 3,999 tokens left before its reset, this request may use 4,000",
        ),
    ],
    ids=["unreported", "plenty", "exactly-enough", "too-few", "no-max-tokens"],
)
def test_provider_token_budget(
    tokens_left: int | None, prompt_tokens: int, max_tokens: int | None, keep: bool, reason: str
) -> None:
    policy = CapacityFilter("cap", CapacityFilter.Params())
    b = backend("a", provider_tokens_left=tokens_left)
    snap = snapshot([b], prompt_tokens=prompt_tokens, max_tokens=max_tokens)
    verdict = policy.filter(snap, [b])["a"]
    assert (verdict.keep, verdict.reason) == (keep, reason)
