"""Token buckets on a fake clock, and OpenAI's duration format."""

from __future__ import annotations

import pytest

from gateway.tenancy.buckets import BucketSpec, LocalBuckets, duration, reset_s


def spec(key: str = "k:requests", per_minute: int = 3, cost: int = 1) -> BucketSpec:
    return BucketSpec(key, "requests", per_minute, cost, "key k")


def test_a_bucket_admits_its_limit_then_refills_at_its_rate() -> None:
    buckets = LocalBuckets(10)
    outcomes = [buckets.take([spec()], now_s=100.0) for _ in range(4)]
    assert [o.admitted for o in outcomes] == [True, True, True, False]
    assert [o.levels[0] for o in outcomes] == [2.0, 1.0, 0.0, 0.0]
    assert not buckets.take([spec()], now_s=119.0).admitted  # 3/min: one per 20 s
    assert buckets.take([spec()], now_s=120.0).admitted


def test_a_request_is_charged_to_every_bucket_or_to_none() -> None:
    buckets = LocalBuckets(10)
    tokens = BucketSpec("k:tokens", "tokens", 100, 80, "key k")
    assert buckets.take([spec(), tokens], now_s=0.0).admitted
    refused = buckets.take([spec(), tokens], now_s=0.0)
    assert not refused.admitted
    assert refused.levels == (2.0, 20.0)  # the request bucket was not charged
    assert buckets.take([spec()], now_s=0.0).levels == (1.0,)


def test_a_clock_going_back_refunds_nothing() -> None:
    buckets = LocalBuckets(10)
    buckets.take([spec(per_minute=1)], now_s=100.0)
    assert not buckets.take([spec(per_minute=1)], now_s=50.0).admitted
    assert not buckets.take([spec(per_minute=1)], now_s=159.0).admitted
    assert buckets.take([spec(per_minute=1)], now_s=160.0).admitted


def test_the_least_recently_used_bucket_is_forgotten_beyond_the_bound() -> None:
    buckets = LocalBuckets(2)
    for name in ("a", "b", "c"):
        buckets.take([spec(f"{name}:requests", per_minute=1)], now_s=0.0)
    assert len(buckets) == 2
    assert buckets.take([spec("a:requests", per_minute=1)], now_s=0.0).admitted  # forgotten
    assert not buckets.take([spec("c:requests", per_minute=1)], now_s=0.0).admitted


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(0.0, "0ms"), (0.0201, "21ms"), (1.0, "1s"), (1.5, "1.5s"), (59.9991, "60s"), (360, "6m0s")],
)
def test_durations_read_as_openai_writes_them(seconds: float, shown: str) -> None:
    assert duration(seconds) == shown


def test_reset_is_the_time_until_the_bucket_is_full() -> None:
    assert reset_s(spec(per_minute=60), 30.0) == pytest.approx(30.0)
