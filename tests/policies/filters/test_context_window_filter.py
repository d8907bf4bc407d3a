"""context-window-filter: prompt plus reply against each backend's window, in tokens."""

from __future__ import annotations

import pytest

from policies.answers import Verdicts
from policies.filters.context_window_filter import ContextWindowFilter
from policies.snapshot import Endpoint
from tests.policies.builders import backend, snapshot


@pytest.mark.parametrize(
    ("prompt", "max_tokens", "window", "keep", "reason"),
    [
        (9_800, 4_096, 8_192, False, "prompt 9,800 + max_tokens 4,096 > window 8,192"),
        (4_000, 4_096, 8_192, True, "prompt 4,000 + max_tokens 4,096 <= window 8,192"),
        (4_096, 4_096, 8_192, True, "prompt 4,096 + max_tokens 4,096 <= window 8,192"),
        (4_097, 4_096, 8_192, False, "prompt 4,097 + max_tokens 4,096 > window 8,192"),
        (8_000, None, 8_192, False, "prompt 8,000 + reserve 256 > window 8,192"),
        (7_936, None, 8_192, True, "prompt 7,936 + reserve 256 <= window 8,192"),
        (1_000_000, 1_000, None, True, "window unknown"),
        (0, None, 1, False, "prompt 0 + reserve 256 > window 1"),
    ],
)
def test_window(
    prompt: int, max_tokens: int | None, window: int | None, keep: bool, reason: str
) -> None:
    policy = ContextWindowFilter("cw", ContextWindowFilter.Params())
    b = backend("a", context_window_tokens=window)
    snap = snapshot([b], prompt_tokens=prompt, max_tokens=max_tokens)
    verdict = policy.filter(snap, [b])["a"]
    assert (verdict.keep, verdict.reason) == (keep, reason)


@pytest.mark.parametrize(
    ("reserve", "endpoint", "keep", "reason"),
    [
        (0, "chat.completions", True, "prompt 8,000 + reserve 0 <= window 8,192"),
        (1_000, "completions", False, "prompt 8,000 + reserve 1,000 > window 8,192"),
        # An embedding has no reply: only the input must fit.
        (1_000, "embeddings", True, "prompt 8,000 + reserve 0 <= window 8,192"),
    ],
)
def test_reserve_without_max_tokens(
    reserve: int, endpoint: Endpoint, keep: bool, reason: str
) -> None:
    policy = ContextWindowFilter("cw", ContextWindowFilter.Params(default_reserve_tokens=reserve))
    b = backend("a", context_window_tokens=8_192)
    snap = snapshot([b], prompt_tokens=8_000, endpoint=endpoint)
    verdict = policy.filter(snap, [b])["a"]
    assert (verdict.keep, verdict.reason) == (keep, reason)


def test_each_candidate_against_its_own_window() -> None:
    fleet = [
        backend("small", context_window_tokens=8_192),
        backend("large", context_window_tokens=131_072),
        backend("unknown"),
    ]
    policy = ContextWindowFilter("cw", ContextWindowFilter.Params())
    answer = policy.filter(snapshot(fleet, prompt_tokens=20_000, max_tokens=1_000), fleet)
    assert isinstance(answer, Verdicts) and list(answer.keep) == [False, True, True]
    assert {name: v.reason for name, v in answer.items()} == {
        "small": "prompt 20,000 + max_tokens 1,000 > window 8,192",
        "large": "prompt 20,000 + max_tokens 1,000 <= window 131,072",
        "unknown": "window unknown",
    }


def test_negative_reserve_is_refused() -> None:
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        ContextWindowFilter.Params(default_reserve_tokens=-1)
