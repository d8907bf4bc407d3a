"""Health detection: when failures eject a backend, for how long, and what ends it."""

from __future__ import annotations

import random

import pytest

from gateway.config.backends import BackendConfig
from gateway.config.root import HealthConfig
from gateway.fleet.health import HealthDetector
from gateway.fleet.state import FleetState

HEALTH = HealthConfig(consecutive_failures=3, ejection_base_s=5.0, ejection_max_s=30.0)
SEED = 0


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def detector(clock: Clock, health: HealthConfig = HEALTH) -> HealthDetector:
    return HealthDetector(["a", "b"], health, clock=clock, rng=random.Random(SEED))


def jittered(lengths: list[float]) -> list[float]:
    """Each ejection's length as the detector draws it: 1 + 0.2 x the seeded rng's next."""
    rng = random.Random(SEED)
    return [length * (1.0 + 0.2 * rng.random()) for length in lengths]


def eject(health: HealthDetector, name: str = "a", failures: int = 3) -> None:
    results = [health.record_failure(name, "HTTP 503") for _ in range(failures)]
    assert results == [False] * (failures - 1) + [True]


@pytest.mark.parametrize("threshold", [1, 3, 5])
def test_the_nth_failure_in_a_row_ejects(threshold: int) -> None:
    clock = Clock()
    health = detector(clock, HealthConfig(consecutive_failures=threshold))
    for _ in range(threshold - 1):
        assert health.record_failure("a", "HTTP 503") is False
        assert health.of("a").status(clock.now) == (True, "healthy")
    assert health.record_failure("a", "HTTP 503") is True
    until = clock.now + jittered([5.0])[0]
    assert health.of("a").ejected_until == until
    assert health.of("a").status(clock.now) == (
        False,
        f"ejected after {threshold} consecutive failures (HTTP 503); back in "
        f"{until - clock.now:.1f}s",
    )
    assert health.of("b").status(clock.now) == (True, "healthy")
    # The count starts over: the next ejection needs as many failures again.
    assert health.record_failure("a", "HTTP 503") is (threshold == 1)


def test_a_success_between_failures_breaks_the_run() -> None:
    health = detector(Clock())
    assert [health.record_failure("a", "timeout") for _ in range(2)] == [False, False]
    health.record_success("a")
    assert [health.record_failure("a", "timeout") for _ in range(2)] == [False, False]
    assert health.of("a").ejected_until == 0.0
    assert health.of("a").failures == 4


def test_each_ejection_in_a_row_doubles_up_to_the_cap() -> None:
    clock = Clock()
    health = detector(clock)
    lengths = []
    for _ in range(5):
        eject(health)
        lengths.append(health.of("a").ejected_until - clock.now)
        clock.now = health.of("a").ejected_until  # back in: fails again at once
    assert lengths == pytest.approx(jittered([5.0, 10.0, 20.0, 30.0, 30.0]), rel=1e-12)
    assert lengths[0] == pytest.approx(5.844421851525048, rel=1e-12)
    assert health.of("a").ejections == 5


def test_a_success_starts_the_back_off_over() -> None:
    clock = Clock()
    health = detector(clock)
    eject(health)
    eject(health)
    health.record_success("a")
    eject(health)
    # The third ejection is as short as the first again (with its own jitter draw).
    assert health.of("a").ejected_until == clock.now + jittered([5.0, 10.0, 5.0])[2]


def test_a_cool_down_never_shortens_an_ejection() -> None:
    clock = Clock()
    health = detector(clock)
    eject(health)
    until = health.of("a").ejected_until
    health.cool_down("a", 2.0, "429: retry after 2s")
    assert health.of("a").ejected_until == until
    assert health.of("a").ejected_reason.startswith("ejected after 3 consecutive failures")
    health.cool_down("a", 60.0, "429: retry after 60s")
    assert health.of("a").ejected_until == clock.now + 60.0
    assert health.of("a").status(clock.now) == (False, "429: retry after 60s; back in 60.0s")
    assert health.of("a").ejections == 1  # a cool-down is not an ejection


@pytest.mark.parametrize(
    ("after_s", "ok", "until_cleared", "status"),
    [
        pytest.param(3.0, True, False, (False, "ejected after 3 consecutive failures"), id="early"),
        pytest.param(10.0, True, True, (True, "healthy"), id="expired-good-probe"),
        pytest.param(10.0, False, False, (False, "connection refused"), id="expired-bad-probe"),
    ],
)
def test_a_good_probe_ends_only_an_expired_ejection(
    after_s: float, ok: bool, until_cleared: bool, status: tuple[bool, str]
) -> None:
    clock = Clock()
    health = detector(clock)
    eject(health)  # 5.84 s
    until = health.of("a").ejected_until
    clock.now += after_s
    health.record_probe("a", ok, "ok" if ok else "connection refused")
    assert health.of("a").ejected_until == (0.0 if until_cleared else until)
    healthy, reason = health.of("a").status(clock.now)
    assert (healthy, reason.split(" (")[0]) == status


def backend(name: str) -> BackendConfig:
    return BackendConfig.model_validate(
        {"name": name, "kind": "vllm", "base_url": "http://10.0.0.11:8000/v1", "models": ["m"]}
    )


def test_the_views_and_describe_show_the_detectors_state() -> None:
    clock = Clock()
    state = FleetState([backend("a"), backend("b")], HEALTH, clock=clock, rng=random.Random(SEED))
    for _ in range(3):
        state.record_failure("a", "HTTP 503")
    view = state.views(["a"])["a"]
    reason = "ejected after 3 consecutive failures (HTTP 503); back in 5.8s"
    assert (view.healthy, view.health_reason) == (False, reason)
    row = state.describe()[0]
    assert (row["healthy"], row["health_reason"], row["failures"], row["ejections"]) == (
        False,
        reason,
        3,
        1,
    )
    clock.now += 5.9
    state.record_probe("a", True, "ok")
    view = state.views(["a"])["a"]
    assert (view.healthy, view.health_reason) == (True, "healthy")


@pytest.mark.parametrize("times", [1, 5])
def test_not_ready_waits_for_a_good_probe_and_counts_no_failure(times: int) -> None:
    clock = Clock()
    health = detector(clock)
    for _ in range(times):
        health.not_ready("a", "not ready: loading the model (HTTP 503)")
    record = health.of("a")
    assert record.status(clock.now) == (False, "not ready: loading the model (HTTP 503)")
    assert (record.failures, record.consecutive_failures, record.ejections) == (0, 0, 0)
    assert record.backoff.attempts == 0
    clock.now += 3600.0
    assert not record.status(clock.now)[0], "until a probe says it is ready"
    health.record_probe("a", True, "probe ok (HTTP 200)")
    assert record.status(clock.now) == (True, "healthy")


def test_not_ready_without_probes_is_out_for_one_probe_interval() -> None:
    clock = Clock()
    health = detector(clock, HealthConfig(active_probes=False, probe_interval_s=10.0))
    health.not_ready("a", "not ready: loading the model (HTTP 503)")
    record = health.of("a")
    assert record.status(clock.now) == (
        False,
        "not ready: loading the model (HTTP 503); back in 10.0s",
    )
    assert (record.failures, record.ejections) == (0, 0)
    clock.now += 10.0
    assert record.status(clock.now) == (True, "healthy")
