from __future__ import annotations

import random
from typing import Any

import pytest

from policies.filters.bounded_load_filter import BoundedLoadFilter
from tests.policies.builders import backend, snapshot


@pytest.mark.parametrize(
    ("in_flight", "params", "kept", "reasons"),
    [
        pytest.param(
            {"a": 0, "b": 0},
            {},
            {"a", "b"},
            dict.fromkeys("ab", "0 in flight < min 2, not bounded"),
            id="idle-fleet",
        ),
        # total 16 over 4, mean 4.0: bound ceil(1.25 * 17 / 4) = 6
        pytest.param(
            {"a": 7, "b": 4, "c": 3, "d": 2},
            {},
            {"b", "c", "d"},
            {
                "a": "7 + 1 in flight > bound 6 (mean 4.0, ε 0.25)",
                "b": "4 + 1 in flight ≤ bound 6 (mean 4.0, ε 0.25)",
                "c": "3 + 1 in flight ≤ bound 6 (mean 4.0, ε 0.25)",
                "d": "2 + 1 in flight ≤ bound 6 (mean 4.0, ε 0.25)",
            },
            id="hot-dropped",
        ),
        pytest.param(
            {"a": 6, "b": 4, "c": 3, "d": 3},
            {},
            {"b", "c", "d"},
            {
                "a": "6 + 1 in flight > bound 6 (mean 4.0, ε 0.25)",
                "b": "4 + 1 in flight ≤ bound 6 (mean 4.0, ε 0.25)",
                "c": "3 + 1 in flight ≤ bound 6 (mean 4.0, ε 0.25)",
                "d": "3 + 1 in flight ≤ bound 6 (mean 4.0, ε 0.25)",
            },
            id="at-bound-is-full",
        ),
        # ceil(1.0 * 15 / 3) = 5
        pytest.param(
            {"a": 5, "b": 5, "c": 4},
            {"epsilon": 0},
            {"c"},
            {
                "a": "5 + 1 in flight > bound 5 (mean 4.7, ε 0)",
                "b": "5 + 1 in flight > bound 5 (mean 4.7, ε 0)",
                "c": "4 + 1 in flight ≤ bound 5 (mean 4.7, ε 0)",
            },
            id="epsilon-0",
        ),
        # 1.1 * 10 / 1 is 11.000000000000002 in floats; the bound must still be 11
        pytest.param(
            {"a": 9},
            {"epsilon": 0.1},
            {"a"},
            {"a": "9 + 1 in flight ≤ bound 11 (mean 9.0, ε 0.1)"},
            id="float-noise",
        ),
        pytest.param(
            {"a": 2, "b": 0},
            {"min_in_flight": 3},
            {"a", "b"},
            {
                "a": "2 in flight < min 3, not bounded",
                "b": "0 in flight < min 3, not bounded",
            },
            id="under-min",
        ),
        pytest.param(
            {"a": 2, "b": 0},
            {"min_in_flight": 0},
            {"b"},
            {
                "a": "2 + 1 in flight > bound 2 (mean 1.0, ε 0.25)",
                "b": "0 + 1 in flight ≤ bound 2 (mean 1.0, ε 0.25)",
            },
            id="min-0",
        ),
    ],
)
def test_bounded_by_requests(
    in_flight: dict[str, int], params: dict[str, Any], kept: set[str], reasons: dict[str, str]
) -> None:
    policy = BoundedLoadFilter("bounded", BoundedLoadFilter.Params.model_validate(params))
    candidates = [backend(n, in_flight=k) for n, k in in_flight.items()]
    verdicts = policy.filter(snapshot(candidates), candidates)
    assert {n for n, v in verdicts.items() if v.keep} == kept
    assert {n: v.reason for n, v in verdicts.items()} == reasons


@pytest.mark.parametrize(
    ("queued", "cached", "kept", "reasons"),
    [
        # total 40,000 over 3; bound ceil(1.25 * (40,000 + 10,000) / 3) = 20,834
        pytest.param(
            {"a": 30_000, "b": 10_000, "c": 0},
            {"a": 9_000},
            {"b", "c"},
            {
                "a": "30,000 + 1,000 prefill tokens > bound 20,834 (mean 13,333, ε 0.25)",
                "b": "10,000 + 10,000 prefill tokens ≤ bound 20,834 (mean 13,333, ε 0.25)",
                "c": "0 + 10,000 prefill tokens ≤ bound 20,834 (mean 13,333, ε 0.25)",
            },
            id="tokens",
        ),
        # a large prompt on an idle fleet exceeds any share: the least loaded survive
        pytest.param(
            {"a": 0, "b": 0},
            {},
            {"a", "b"},
            dict.fromkeys(
                "ab",
                "least loaded, kept: 0 + 10,000 prefill tokens > bound 6,250 (mean 0, ε 0.25)",
            ),
            id="least-loaded-kept",
        ),
    ],
)
def test_bounded_by_tokens(
    queued: dict[str, int], cached: dict[str, int], kept: set[str], reasons: dict[str, str]
) -> None:
    policy = BoundedLoadFilter("bounded", BoundedLoadFilter.Params(by="tokens"))
    candidates = [backend(n, in_flight=2, queued_prefill_tokens=q) for n, q in queued.items()]
    snap = snapshot(candidates, prompt_tokens=10_000, cached_tokens=cached)
    verdicts = policy.filter(snap, candidates)
    assert {n for n, v in verdicts.items() if v.keep} == kept
    assert {n: v.reason for n, v in verdicts.items()} == reasons


@pytest.mark.parametrize("by", ["requests", "tokens"])
@pytest.mark.parametrize("seed", range(20))
def test_never_drops_the_least_loaded(by: str, seed: int) -> None:
    rng = random.Random(seed)
    candidates = [
        backend(f"b{i}", in_flight=rng.randrange(0, 40), queued_prefill_tokens=rng.randrange(0, 9))
        for i in range(rng.randrange(1, 9))
    ]
    policy = BoundedLoadFilter(
        "bounded", BoundedLoadFilter.Params.model_validate({"by": by, "epsilon": 0})
    )
    verdicts = policy.filter(snapshot(candidates, prompt_tokens=4), candidates)
    field = "in_flight" if by == "requests" else "queued_prefill_tokens"
    least = min(getattr(b, field) for b in candidates)
    assert all(verdicts[b.name].keep for b in candidates if getattr(b, field) == least)


def test_no_candidates() -> None:
    policy = BoundedLoadFilter("bounded", BoundedLoadFilter.Params())
    assert policy.filter(snapshot(), []) == {}
