"""The dashboard's series: buckets, percentiles, ratios, shares, bounds."""

from __future__ import annotations

import random

import pytest

from gateway.routing.decisions import HeldNote
from gateway.telemetry.config import PricingConfig, TelemetryConfig
from gateway.telemetry.histogram import Histogram, quantiles_ms
from gateway.telemetry.series import DashboardSeries
from policies.prices import PriceBook
from providers.usage import Usage
from tests.gateway.telemetry.builders import record


def test_histogram_quantiles_are_within_five_percent() -> None:
    rng = random.Random(7)
    values = sorted(rng.lognormvariate(-2.0, 1.0) for _ in range(20_000))
    histogram = Histogram()
    for v in values:
        histogram.add(v)
    p50, p90, p99 = quantiles_ms([histogram], (0.5, 0.9, 0.99))
    for got, q in ((p50, 0.5), (p90, 0.9), (p99, 0.99)):
        exact = values[int(q * len(values)) - 1] * 1000.0
        assert got == pytest.approx(exact, rel=0.05)
    assert quantiles_ms([Histogram()], (0.5,)) == [None]


def series(now: float = 1_000_000.0) -> DashboardSeries:
    config = TelemetryConfig(bucket_s=10, window_s=600, max_error_codes=2)
    prices = PriceBook({"a": PricingConfig(input_usd_per_mtok=1.0, output_usd_per_mtok=2.0)}, {})
    return DashboardSeries(config, prices, {}, clock=lambda: now)


def test_summary_counts_ratios_shares_and_spend() -> None:
    s = series()
    t = 1_000_000.0 - 25
    for _ in range(3):
        s.consume(
            record(
                at=t,
                backend="a",
                usage=Usage(1000, 10, 800),
                predicted_cached=900,
                stream=True,
                ttft_s=0.2,
                decode_s=0.9,
                e2e_s=1.1,
            )
        )
    s.consume(record(at=t + 10, backend="b", status=502, error="upstream_error", e2e_s=0.1))
    snap = s.snapshot(600)
    fleet = snap["fleet"]["summary"]
    assert fleet["requests"] == 4
    assert fleet["success_rate"] == 0.75
    assert fleet["status"] == {"2xx": 3, "5xx": 1}
    assert fleet["errors"] == {"upstream_error": 1}
    assert fleet["cache_hit_ratio"] == 0.8  # 2,400 of 3,000 reported prompt tokens
    assert fleet["ttft_ms"]["p50"] == pytest.approx(200, rel=0.05)
    assert fleet["tpot_ms"]["p50"] == pytest.approx(100, rel=0.05)
    assert fleet["spend_usd"] == pytest.approx(3 * (1000 * 1.0 + 10 * 2.0) / 1e6)
    a, b = snap["backends"]["a"]["summary"], snap["backends"]["b"]["summary"]
    assert (a["share"], b["share"]) == (0.75, 0.25)
    assert a["predicted_cache_hit_ratio"] == 0.9
    assert b["cache_hit_ratio"] is None  # b reported no usage: no ratio, not 0%


def test_series_puts_requests_in_their_buckets_and_drops_old_ones() -> None:
    now = 1_000_007.0
    s = series(now)
    s.consume(record(at=now - 5))
    s.consume(record(at=now - 5))
    s.consume(record(at=now - 35))
    s.consume(record(at=now - 3600))  # far outside the window: overwritten or ignored
    snap = s.snapshot(60)
    t, requests = snap["fleet"]["series"]["t"], snap["fleet"]["series"]["requests"]
    assert len(t) == len(requests) == 6
    assert t == sorted(t) and t[-1] <= now < t[-1] + 10
    assert requests[-1] == 2 and requests[-4] == 1 and sum(requests) == 3
    assert snap["fleet"]["series"]["ttft_p50_ms"][-1] is None  # no stream in that bucket


def test_error_codes_per_bucket_are_bounded() -> None:
    s = series()
    for i in range(5):
        s.consume(record(at=1_000_000.0 - 1, status=500, error=f"code_{i}"))
    errors = s.snapshot(60)["fleet"]["summary"]["errors"]
    assert sum(errors.values()) == 5
    assert len(errors) == 3 and errors["other"] == 3  # two codes kept, the rest lumped


def test_reasons_rank_policies_with_an_example() -> None:
    s = series()
    for _ in range(3):
        s.consume(record(at=1_000_000.0 - 1))
    reasons = s.snapshot(60)["backends"]["a"]["reasons"]
    assert reasons[0]["policy"] == "only-candidate"
    assert reasons[0]["count"] == 3 and reasons[0]["share"] == 1.0
    assert "only backend" in reasons[0]["example"]


def test_a_request_older_than_the_ring_does_not_wipe_a_live_bucket() -> None:
    now = 1_000_007.0
    s = series(now)  # 600 s window in 10 s buckets: 61 slots
    for _ in range(50):
        s.consume(record(at=now - 1))
    # A long stream that arrived one ring-length earlier finishes now: same slot, older.
    s.consume(record(at=now - 1 - 610, stream=True, ttft_s=0.1))
    assert s.snapshot(60)["fleet"]["summary"]["requests"] == 50


def test_abandoned_requests_do_not_count_against_success() -> None:
    s = series()
    s.consume(record(at=1_000_000.0 - 1))
    s.consume(record(at=1_000_000.0 - 1, status=499, error="client_disconnected"))
    s.consume(record(at=1_000_000.0 - 1, status=200, error="cancelled", stream=True))
    summary = s.snapshot(60)["fleet"]["summary"]
    assert summary["requests"] == 3 and summary["abandoned"] == 2
    assert summary["success_rate"] == 1.0


def test_requests_flow_control_held_are_counted_with_their_wait() -> None:
    s = series()
    t = 1_000_000.0 - 25
    notes = [
        HeldNote("standard", "-", "immediate", 0.0, "a has room"),
        HeldNote("standard", "-", "queued", 400.0, "a has room"),
        HeldNote("batch", "-", "fallback", 100.0, "late"),
        HeldNote("batch", "-", "deadline_unmeetable", 50.0, "late"),
    ]
    for note in notes:
        made = record(at=t, backend="a")
        made.decision.held = note
        s.consume(made)
    fleet = s.snapshot(600)["fleet"]
    summary = fleet["summary"]
    assert (summary["held"], summary["shed"], summary["moved"]) == (3, 1, 1)
    assert summary["queue_wait_ms"]["p99"] == pytest.approx(400, rel=0.05)
    assert sum(fleet["series"]["held"]) == 3 and sum(fleet["series"]["shed"]) == 1
