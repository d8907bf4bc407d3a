"""Fleet state views: kept between decisions, rebuilt whenever what they show could differ."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from gateway.config.backends import BackendConfig
from gateway.config.root import HealthConfig
from gateway.fleet.scrape.engine_metrics import EngineLoad
from gateway.fleet.state import FleetState
from providers.rate_limits import RateLimitSignal

Change = Callable[[FleetState], object]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def backend(name: str, **fields: Any) -> BackendConfig:
    return BackendConfig.model_validate(
        {"name": name, "kind": "vllm", "base_url": "http://10.0.0.11:8000/v1", "models": ["m"]}
        | {"metrics": {"stale_after_s": 5.0}}
        | fields
    )


def fleet(clock: Clock) -> FleetState:
    return FleetState(
        [backend("a"), backend("b")], HealthConfig(), clock=clock, rng=random.Random(0)
    )


def test_a_view_is_kept_while_nothing_changes() -> None:
    clock = Clock()
    state = fleet(clock)
    first = state.views(["a", "b"])
    clock.now += 30.0
    again = state.views(["a", "b"])
    assert again["a"] is first["a"] and again["b"] is first["b"]


def nothing(state: FleetState) -> None:
    pass


CHANGES: dict[str, tuple[Change, Change]] = {
    # name: (set-up, the change whose effect the next view must show)
    "acquire": (nothing, lambda s: s.acquire("a", uncached_tokens=700)),
    "prefill done": (lambda s: s.acquire("a", 700), lambda s: s.prefill_done("a", 300)),
    "decode started": (nothing, lambda s: s.decode_started("a")),
    "decode ended": (lambda s: s.decode_started("a"), lambda s: s.decode_ended("a")),
    "release": (lambda s: s.acquire("a"), lambda s: s.release("a")),
    "remote load": (nothing, lambda s: s.set_remote({"a": (3, 900, 1)})),
    "engine reading": (
        nothing,
        lambda s: s.record_engine_load("a", EngineLoad("vllm", 12, 3, 0.5)),
    ),
    "ejection": (nothing, lambda s: [s.record_failure("a", "HTTP 503") for _ in range(3)]),
    "cool-down": (nothing, lambda s: s.cool_down("a", 30.0, "429: retry after 30s")),
    "rate limited": (nothing, lambda s: s.rate_limited("a", 30.0, None)),
    "provider budget": (
        nothing,
        lambda s: s.record_provider_limits("a", RateLimitSignal(remaining_requests=2)),
    ),
    "provider budget spent": (
        nothing,
        lambda s: s.record_provider_limits("a", RateLimitSignal(0, requests_reset_s=12.0)),
    ),
    "failed probe": (nothing, lambda s: s.record_probe("a", False, "connection refused")),
    "probe ok again": (
        lambda s: s.record_probe("a", False, "connection refused"),
        lambda s: s.record_probe("a", True, "ok"),
    ),
    "ttft estimate": (nothing, lambda s: s.estimates("a").observe_ttft(0.4, 2_000, True)),
    "tpot estimate": (nothing, lambda s: s.estimates("a").observe_tpot(3.0, 101)),
    "network estimate": (nothing, lambda s: s.estimates("a").observe_ttft(0.05, 10, True)),
}


@pytest.mark.parametrize(("setup", "change"), CHANGES.values(), ids=CHANGES.keys())
def test_every_change_shows_in_the_next_view(setup: Change, change: Change) -> None:
    """A state whose views were taken (and kept) before the change shows the same as one
    that never built any."""
    viewed, fresh = fleet(Clock()), fleet(Clock())
    for state in (viewed, fresh):
        setup(state)
    before = viewed.views(["a", "b"])["a"]
    for state in (viewed, fresh):
        change(state)
    after = viewed.views(["a", "b"])["a"]
    assert after == fresh.views(["a", "b"])["a"]
    assert after != before


def test_an_ejection_counts_down_and_ends_with_time_alone() -> None:
    clock = Clock()
    state = FleetState([backend("a")], HealthConfig(ejection_base_s=5.0), clock=clock)
    state.cool_down("a", 5.0, "429")
    assert state.views(["a"])["a"].health_reason == "429; back in 5.0s"
    clock.now += 2.0
    assert state.views(["a"])["a"].health_reason == "429; back in 3.0s"
    clock.now += 3.5
    view = state.views(["a"])["a"]
    assert (view.healthy, view.health_reason) == (True, "healthy")


def test_an_engine_reading_goes_stale_with_time_alone() -> None:
    clock = Clock()
    state = fleet(clock)
    state.record_engine_load("a", EngineLoad("vllm", 12, 3, 0.5))
    assert state.views(["a"])["a"].engine_running == 12
    clock.now += 5.0  # stale_after_s: still fresh at the limit
    assert state.views(["a"])["a"].engine_running == 12
    clock.now += 0.01
    view = state.views(["a"])["a"]
    assert (view.engine_running, view.engine_waiting, view.engine_kv_usage) == (None,) * 3


def test_a_failed_scrape_keeps_the_view() -> None:
    clock = Clock()
    state = fleet(clock)
    state.record_engine_load("a", EngineLoad("vllm", 12, 3, 0.5))
    first = state.views(["a"])["a"]
    state.record_engine_load("a", None, "timed out")
    assert state.views(["a"])["a"] == first


def test_a_refused_key_is_logged_at_most_once_a_minute_and_counted_each_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    state = fleet(clock)
    message = "backend a: upstream rejected the credentials from SY_KEY_A (HTTP 401)"
    with caplog.at_level("WARNING", logger="switchyard"):
        for seconds in (0.0, 1.0, 59.0, 61.0):
            clock.now = 100.0 + seconds
            state.credentials_refused("a", message)
    assert [r.getMessage() for r in caplog.records] == [message, message]
    [row] = [r for r in state.describe() if r["name"] == "a"]
    assert row["failures"] == 4
