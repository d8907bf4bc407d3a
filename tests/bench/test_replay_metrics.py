"""Summary statistics: percentiles, imbalance, goodput, time scaling, cache ratio."""

from __future__ import annotations

import pytest

from bench.replay.metrics import (
    Slo,
    backend_counts,
    cache_summary,
    imbalance,
    imbalance_summary,
    latency_summary,
    percentile,
    throughput_summary,
    tpot_ms,
    ttft_ms,
)
from bench.replay.schedule import ReplayRun, RequestResult


def result(
    ttft_s: float | None = 0.1,
    total_s: float = 1.0,
    tokens: int | None = 11,
    *,
    ok: bool = True,
    prompt: int | None = 100,
    cached: int | None = 50,
    backend: str | None = None,
    sent: float = 0.0,
) -> RequestResult:
    return RequestResult(
        "r", ok=ok, sent_at=sent, done_at=sent + total_s,
        first_token_at=None if ttft_s is None else sent + ttft_s,
        prompt_tokens=prompt, completion_tokens=tokens, cached_tokens=cached, backend=backend,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([1, 2, 3, 4, 5], 50, 3),
        ([1, 2, 3, 4, 5], 90, 4.6),
        ([1, 2, 3, 4, 5], 0, 1),
        ([1, 2, 3, 4, 5], 100, 5),
        ([5, 1, 4, 2, 3], 25, 2),
        ([7], 99, 7),
        ([1, 2], 50, 1.5),
    ],
)
def test_percentile_interpolates_between_ranks(
    values: list[float], q: float, expected: float
) -> None:
    assert percentile(values, q) == pytest.approx(expected)


def test_percentile_of_nothing_is_none() -> None:
    assert percentile([], 50) is None


@pytest.mark.parametrize(
    ("counts", "expected"),
    [({"a": 2, "b": 2}, 1.0), ({"a": 3, "b": 1}, 1.5), ({"a": 4, "b": 0, "c": 0, "d": 0}, 4.0)],
)
def test_imbalance_is_max_over_mean(counts: dict[str, float], expected: float) -> None:
    assert imbalance(counts) == pytest.approx(expected)


def test_imbalance_of_nothing_is_none() -> None:
    assert imbalance({}) is None
    assert imbalance({"a": 0, "b": 0}) is None


def test_ttft_tpot_and_scale() -> None:
    r = result(ttft_s=0.2, total_s=1.2, tokens=11)
    assert ttft_ms(r) == pytest.approx(200)
    assert tpot_ms(r) == pytest.approx(100)  # 1000 ms over 10 gaps
    assert ttft_ms(r, scale=0.5) == pytest.approx(400)
    assert tpot_ms(result(tokens=1)) is None
    assert ttft_ms(result(ok=False)) is None


def test_goodput_needs_success_and_both_limits() -> None:
    slo = Slo(ttft_ms=300, tpot_ms=50)
    assert slo.met_by(result(ttft_s=0.2, total_s=0.6, tokens=11))  # 40 ms per token
    assert not slo.met_by(result(ttft_s=0.4, total_s=0.6, tokens=11))  # TTFT too long
    assert not slo.met_by(result(ttft_s=0.2, total_s=1.2, tokens=11))  # 100 ms per token
    assert not slo.met_by(result(ok=False))
    assert slo.met_by(result(ttft_s=0.2, total_s=0.2, tokens=1))  # one token: no TPOT
    assert not slo.met_by(result(ttft_s=0.2, total_s=0.6, tokens=11), scale=0.5)


def test_throughput_and_goodput_in_trace_time() -> None:
    results = (
        result(ttft_s=0.1, total_s=0.5, tokens=11, sent=0.0),
        result(ttft_s=0.1, total_s=1.0, tokens=21, sent=1.0),  # ends at 2.0
        result(ok=False, sent=0.5, total_s=0.1),
    )
    run = ReplayRun(results, started_at=0.0, finished_at=2.0, time_scale=0.5)
    summary = throughput_summary(run, Slo(ttft_ms=250, tpot_ms=200))
    assert summary["wall_s"] == 2.0 and summary["duration_s"] == 4.0
    assert summary["requests"] == 3 and summary["errors"] == 1
    assert summary["throughput_rps"] == 0.5  # 2 ok in 4 trace seconds
    assert summary["output_tokens_per_s"] == 8.0
    assert summary["goodput_ratio"] == pytest.approx(2 / 3, abs=1e-4)
    assert summary["goodput_rps"] == 0.5


def test_latency_summary_keys() -> None:
    summary = latency_summary([result(), result(ttft_s=0.3)], scale=1.0)
    assert summary["ttft_ms_p50"] == pytest.approx(200)
    assert set(summary) >= {
        "ttft_ms_p90",
        "ttft_ms_p99",
        "tpot_ms_p50",
        "tpot_ms_p99",
        "e2e_ms_p99",
    }


def test_cache_ratio_is_token_weighted() -> None:
    summary = cache_summary([result(prompt=100, cached=90), result(prompt=300, cached=10)])
    assert summary["token_cache_hit_ratio"] == pytest.approx(0.25)
    assert cache_summary([result(cached=None)])["token_cache_hit_ratio"] is None


def test_backend_counts_include_idle_backends() -> None:
    results = [
        result(backend="e0", prompt=10),
        result(backend="e0", prompt=30),
        result(backend="e1"),
    ]
    counts = backend_counts(results, ["e0", "e1", "e2"])
    assert counts["e0"] == {
        "requests": 2,
        "prompt_tokens": 40,
        "cached_tokens": 100,
        "completion_tokens": 22,
    }
    assert counts["e2"]["requests"] == 0
    summary = imbalance_summary(counts)
    assert summary["imbalance_requests"] == pytest.approx(2.0)
    assert summary["imbalance_prompt_tokens"] == pytest.approx(100 / (140 / 3), abs=1e-3)
