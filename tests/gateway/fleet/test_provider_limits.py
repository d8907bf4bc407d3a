"""Provider rate limits in the fleet: 429 cool-downs, spent budgets, capacity from the
remaining request count, and what `describe()` shows; on a fake clock throughout."""

from __future__ import annotations

import random
from typing import Any

import pytest

from gateway.config.backends import BackendConfig
from gateway.config.root import HealthConfig
from gateway.fleet.provider_limits import rate_limited_wait, spent_budget
from gateway.fleet.state import FleetState
from providers.rate_limits import RateLimitSignal
from tests.gateway.fleet.test_state import Clock


def fleet(clock: Clock, **rate_limits: Any) -> FleetState:
    config = BackendConfig.model_validate(
        {"name": "a", "base_url": "http://10.0.0.11:8000/v1", "models": ["m"]}
        | {"max_concurrency": 64, "rate_limits": rate_limits}
    )
    return FleetState([config], HealthConfig(), clock=clock, rng=random.Random(0))


def health_of(state: FleetState) -> tuple[bool, str]:
    view = state.views(["a"])["a"]
    return view.healthy, view.health_reason


def row(state: FleetState) -> dict[str, object]:
    [found] = state.describe()
    return found


SPENT_REQUESTS = RateLimitSignal(remaining_requests=0, requests_reset_s=12.0)


@pytest.mark.parametrize(
    ("retry_after_s", "signal", "rate_limits", "seconds", "reason"),
    [
        (30.0, None, {}, 30.0, "Retry-After 30.0 s"),
        (30.0, SPENT_REQUESTS, {}, 30.0, "Retry-After 30.0 s"),
        (None, SPENT_REQUESTS, {}, 12.0, "budget resets in 12.0 s"),
        (None, RateLimitSignal(retry_after_s=4.0), {}, 4.0, "budget resets in 4.0 s"),
        (None, RateLimitSignal(remaining_requests=5), {}, 1.0, "no wait given"),
        (None, None, {}, 1.0, "no wait given"),
        (None, SPENT_REQUESTS, {"enabled": False}, 1.0, "no wait given"),
        (
            900.0,
            None,
            {"max_cool_down_s": 60.0},
            60.0,
            "Retry-After 900.0 s, kept out 60.0 s (rate_limits.max_cool_down_s)",
        ),
    ],
    ids=[
        "retry-after",
        "retry-after-wins",
        "headers-reset",
        "signal-retry-after",
        "nothing-spent",
        "no-signal",
        "headers-off",
        "capped",
    ],
)
def test_a_429_cools_down_for_its_wait(
    retry_after_s: float | None,
    signal: RateLimitSignal | None,
    rate_limits: dict[str, Any],
    seconds: float,
    reason: str,
) -> None:
    clock = Clock()
    state = fleet(clock, **rate_limits)
    state.rate_limited("a", retry_after_s, signal)
    assert health_of(state) == (False, f"rate limited upstream: {reason}; back in {seconds:.1f}s")
    clock.now += seconds - 0.01
    assert not health_of(state)[0]
    clock.now += 0.02
    assert health_of(state) == (True, "healthy")


@pytest.mark.parametrize(
    ("signal", "reason"),
    [
        (SPENT_REQUESTS, "0 requests left, resets in 12.0 s"),
        (
            RateLimitSignal(remaining_tokens=0, tokens_reset_s=12.0),
            "0 tokens left, resets in 12.0 s",
        ),
        (
            RateLimitSignal(
                remaining_requests=0, requests_reset_s=3.0, remaining_tokens=0, tokens_reset_s=12.0
            ),
            "0 requests and 0 tokens left, resets in 12.0 s",
        ),
    ],
    ids=["requests", "tokens", "both"],
)
def test_a_spent_budget_cools_down_until_its_reset(signal: RateLimitSignal, reason: str) -> None:
    clock = Clock()
    state = fleet(clock)
    state.record_provider_limits("a", signal)
    assert health_of(state) == (False, f"provider budget spent: {reason}; back in 12.0s")
    clock.now += 12.01
    assert health_of(state) == (True, "healthy")


@pytest.mark.parametrize(
    "signal",
    [
        RateLimitSignal(remaining_requests=1, requests_reset_s=12.0),
        RateLimitSignal(remaining_requests=0),
        RateLimitSignal(remaining_tokens=0),
    ],
    ids=["one-left", "spent-without-reset", "tokens-without-reset"],
)
def test_a_budget_not_spent_with_a_reset_cools_nothing(signal: RateLimitSignal) -> None:
    state = fleet(Clock())
    state.record_provider_limits("a", signal)
    assert health_of(state) == (True, "healthy")
    assert spent_budget(signal) is None


def test_a_spent_budget_on_a_failed_answer_only_shows() -> None:
    state = fleet(Clock())
    state.record_provider_limits("a", SPENT_REQUESTS, cool_spent=False)
    assert health_of(state) == (True, "healthy")
    assert row(state)["provider_remaining_requests"] == 0


def test_a_spent_budget_is_capped() -> None:
    state = fleet(Clock(), max_cool_down_s=5.0)
    state.record_provider_limits("a", RateLimitSignal(remaining_requests=0, requests_reset_s=600))
    assert health_of(state)[1].endswith(
        "kept out 5.0 s (rate_limits.max_cool_down_s); back in 5.0s"
    )


def test_the_remaining_requests_cap_the_capacity() -> None:
    clock = Clock()
    state = fleet(clock)
    state.record_provider_limits("a", RateLimitSignal(remaining_requests=3, requests_reset_s=5.0))
    assert state.views(["a"])["a"].max_concurrency == 3
    state.acquire("a")
    state.acquire("a")
    # Two in flight, one more request before the reset: three in flight at most.
    assert state.views(["a"])["a"].max_concurrency == 3
    state.release("a")
    state.release("a")
    assert state.views(["a"])["a"].max_concurrency == 1
    state.acquire("a")
    assert state.at_capacity("a")
    clock.now += 5.0
    # The reading lapses at its reset, with time alone.
    assert state.views(["a"])["a"].max_concurrency == 64
    assert not state.at_capacity("a")


def test_a_reading_lapses_after_stale_after_s_when_its_reset_is_later() -> None:
    clock = Clock()
    state = fleet(clock, stale_after_s=2.0)
    state.record_provider_limits("a", RateLimitSignal(remaining_requests=1, requests_reset_s=600))
    assert state.views(["a"])["a"].max_concurrency == 1
    clock.now += 2.0
    assert state.views(["a"])["a"].max_concurrency == 64


def test_the_remaining_tokens_less_those_sent_since_are_shown_to_policies() -> None:
    clock = Clock()
    state = fleet(clock)
    state.acquire("a", budget_tokens=500)
    assert state.views(["a"])["a"].provider_tokens_left is None
    state.record_provider_limits("a", RateLimitSignal(remaining_tokens=10_000, tokens_reset_s=6.0))
    assert state.views(["a"])["a"].provider_tokens_left == 10_000
    # Tokens sent before the reading are in it already; those sent after come off it.
    state.acquire("a", budget_tokens=4_196)
    assert state.views(["a"])["a"].provider_tokens_left == 5_804
    state.acquire("a", budget_tokens=9_000)
    assert state.views(["a"])["a"].provider_tokens_left == 0
    clock.now += 6.0
    # The reading lapses at its reset.
    assert state.views(["a"])["a"].provider_tokens_left is None


def test_a_plentiful_budget_leaves_max_concurrency() -> None:
    state = fleet(Clock())
    state.record_provider_limits("a", RateLimitSignal(remaining_requests=5000, remaining_tokens=9))
    assert state.views(["a"])["a"].max_concurrency == 64


def test_describe_shows_the_reading_while_it_holds() -> None:
    clock = Clock()
    state = fleet(clock)
    assert row(state)["provider_remaining_requests"] is None
    signal = RateLimitSignal(remaining_requests=4, remaining_tokens=900, requests_reset_s=8.0)
    state.record_provider_limits("a", signal)
    found = row(state)
    assert (found["provider_remaining_requests"], found["provider_remaining_tokens"]) == (4, 900)
    assert isinstance(found["provider_limits_read_at"], float)
    assert (found["max_concurrency"], found["effective_max_concurrency"]) == (64, 4)
    clock.now += 8.0
    found = row(state)
    assert found["provider_remaining_requests"] is None
    assert found["provider_limits_read_at"] is None
    assert found["effective_max_concurrency"] == 64


def test_a_signal_without_counts_keeps_the_last_reading() -> None:
    state = fleet(Clock())
    state.record_provider_limits("a", RateLimitSignal(remaining_requests=4, requests_reset_s=8))
    state.record_provider_limits("a", RateLimitSignal(retry_after_s=1.0))
    assert row(state)["provider_remaining_requests"] == 4


def test_headers_are_ignored_when_rate_limits_are_off() -> None:
    state = fleet(Clock(), enabled=False)
    state.record_provider_limits("a", SPENT_REQUESTS)
    assert health_of(state) == (True, "healthy")
    assert row(state)["provider_remaining_requests"] is None
    assert state.views(["a"])["a"].max_concurrency == 64


def test_rate_limited_wait_prefers_retry_after() -> None:
    assert rate_limited_wait(2.5, SPENT_REQUESTS) == (2.5, "Retry-After 2.5 s")
    assert rate_limited_wait(None, SPENT_REQUESTS) == (12.0, "budget resets in 12.0 s")
