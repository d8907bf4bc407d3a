"""The jittered doubling back-off: its doubling, cap, jitter bounds and reset."""

from __future__ import annotations

import random

import pytest

from gateway.fleet.backoff import Backoff


def draws(seed: int, count: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.random() for _ in range(count)]


@pytest.mark.parametrize(
    ("base_s", "cap_s", "cap_first", "expected"),
    [
        pytest.param(5.0, 120.0, True, [5, 10, 20, 40, 80, 120, 120], id="health-defaults"),
        pytest.param(30.0, 900.0, True, [30, 60, 120, 240, 480, 900, 900], id="quality-defaults"),
        pytest.param(0.02, 0.2, False, [0.02, 0.04, 0.08, 0.16, 0.2, 0.2], id="reconnect"),
        pytest.param(50.0, 10.0, True, [10, 10, 10], id="base-above-cap-capped"),
        pytest.param(0.5, 0.2, False, [0.5, 0.2, 0.2], id="base-above-cap-first-in-full"),
    ],
)
def test_doubles_up_to_the_cap(
    base_s: float, cap_s: float, cap_first: bool, expected: list[float]
) -> None:
    backoff = Backoff(base_s, cap_s, rng=random.Random(0), jitter=0.0, cap_first=cap_first)
    assert [backoff.next_s() for _ in expected] == expected
    assert backoff.attempts == len(expected)


def test_the_cap_applies_before_the_jitter() -> None:
    backoff = Backoff(5.0, 120.0, rng=random.Random(0))
    delays = [backoff.next_s() for _ in range(8)]
    raw = [5.0, 10.0, 20.0, 40.0, 80.0, 120.0, 120.0, 120.0]
    assert delays == [r * (1.0 + 0.2 * u) for r, u in zip(raw, draws(0, 8), strict=True)]
    assert delays[0] == 5.844421851525048  # 5 s stretched by 0.2 x random.Random(0)'s first draw
    assert delays[-1] > 120.0  # a capped delay may still be up to a fifth longer


@pytest.mark.parametrize("jitter", [0.0, 0.2, 1.0])
def test_jitter_stays_within_its_share(jitter: float) -> None:
    backoff = Backoff(1.0, 1.0, rng=random.Random(7), jitter=jitter)
    delays = [backoff.next_s() for _ in range(2_000)]
    assert all(1.0 <= d <= 1.0 + jitter for d in delays)
    if jitter:  # spread over the range, never quite reaching its top
        assert min(delays) < 1.0 + 0.05 * jitter
        assert 1.0 + 0.95 * jitter < max(delays) < 1.0 + jitter


def test_a_reset_starts_the_doubling_over() -> None:
    backoff = Backoff(5.0, 120.0, rng=random.Random(0), jitter=0.0)
    assert [backoff.next_s() for _ in range(3)] == [5.0, 10.0, 20.0]
    backoff.reset()
    assert backoff.attempts == 0
    assert [backoff.next_s() for _ in range(2)] == [5.0, 10.0]


def test_one_draw_per_delay_from_the_shared_rng() -> None:
    """Sites share one rng: each delay takes exactly the next draw, resets take none."""
    rng = random.Random(3)
    first, second = Backoff(2.0, 8.0, rng=rng), Backoff(2.0, 8.0, rng=rng)
    got = [first.next_s(), second.next_s(), first.next_s()]
    first.reset()
    got.append(first.next_s())
    raw = [2.0, 2.0, 4.0, 2.0]
    assert got == [r * (1.0 + 0.2 * u) for r, u in zip(raw, draws(3, 4), strict=True)]


def test_days_of_attempts_stay_at_the_cap() -> None:
    # base * 2**n would overflow a float after about a thousand attempts in a row.
    backoff = Backoff(5.0, 120.0, rng=random.Random(0), jitter=0.0)
    delays = [backoff.next_s() for _ in range(5_000)]
    assert delays[5:] == [120.0] * 4_995


@pytest.mark.parametrize(
    ("base_s", "cap_s", "jitter"), [(0.0, 1.0, 0.2), (1.0, 0.0, 0.2), (1.0, 1.0, -0.1)]
)
def test_impossible_parameters_are_refused(base_s: float, cap_s: float, jitter: float) -> None:
    with pytest.raises(ValueError, match="back-off"):
        Backoff(base_s, cap_s, rng=random.Random(0), jitter=jitter)
