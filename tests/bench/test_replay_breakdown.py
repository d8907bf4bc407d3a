"""Per class and per tenant measures on synthetic results, their table, and how the overall
measures already treat a shed request (as a failed one)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.replay.breakdown import breakdowns, group_measures
from bench.replay.metrics import Slo, cache_summary, error_kinds, throughput_summary
from bench.replay.report import complete_row, group_lines
from bench.replay.schedule import ReplayRun, RequestResult
from bench.replay.trace import Message, TraceRequest

SLO = Slo(ttft_ms=300, tpot_ms=50)


def served(
    ttft_s: float = 0.1, total_s: float = 0.5, *, queue_ms: float | None = None, rid: str = "r"
) -> RequestResult:
    """A success with 11 tokens: TPOT = (total - TTFT) / 10."""
    return RequestResult(
        rid, ok=True, sent_at=0.0, done_at=total_s, first_token_at=ttft_s, status=200,
        completion_tokens=11, prompt_tokens=100, cached_tokens=50, queue_ms=queue_ms,
        admission=None if queue_ms is None else "queued",
    )  # fmt: skip


def refused(status: int = 429, code: str | None = "request_shed", rid: str = "r") -> RequestResult:
    error = f"HTTP {status} {code}: no" if code else f"HTTP {status}: no"
    return RequestResult(
        rid, ok=False, sent_at=0.0, done_at=0.01, status=status, error=error, error_code=code
    )


CASES: list[tuple[str, list[RequestResult], dict[str, Any]]] = [
    (
        "all good",
        [served(0.1), served(0.2), served(0.3)],
        {"requests": 3, "succeeded": 3, "shed": 0, "failed": 0, "goodput_ratio": 1.0,
         "ttft_ms_p50": 200.0, "queue_ms_p50": None, "shed_codes": {}, "admission": {}},
    ),
    (
        "sheds and failures count against goodput, not in TTFT",
        [served(0.1), refused(429, "request_shed"), refused(429, "queue_full"), refused(500, None)],
        {"requests": 4, "succeeded": 1, "shed": 2, "failed": 1, "goodput_ratio": 0.25,
         "ttft_ms_p50": 100.0, "ttft_ms_p99": 100.0,
         "shed_codes": {"request_shed": 1, "queue_full": 1}},
    ),
    (
        "a 429 without a code is still a shed",
        [refused(429, None), refused(503, "deadline_unmeetable")],
        {"shed": 1, "failed": 1, "goodput_ratio": 0.0, "ttft_ms_p50": None,
         "shed_codes": {"(none)": 1}},
    ),
    (
        "slow first token or slow tokens are not good",
        [served(0.4, 0.6), served(0.1, 1.1), served(0.1, 0.5)],
        {"succeeded": 3, "goodput_ratio": 0.3333, "ttft_ms_p90": 340.0},
    ),
    (
        "queue waits where reported",
        [served(queue_ms=10), served(queue_ms=30), served(), refused()],
        {"queue_ms_p50": 20.0, "queue_ms_p99": 29.8, "admission": {"queued": 2}},
    ),
    ("no requests", [], {"requests": 0, "goodput_ratio": None, "ttft_ms_p50": None}),
]  # fmt: skip


@pytest.mark.parametrize(("results", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_group_measures(results: list[RequestResult], expected: dict[str, Any]) -> None:
    measures = group_measures(results, SLO, scale=1.0)
    assert {key: measures[key] for key in expected} == expected  # values are rounded


def test_latencies_and_queue_waits_are_in_trace_time() -> None:
    measures = group_measures([served(0.1, 0.2, queue_ms=20)], Slo(300, 50), scale=0.5)
    assert measures["ttft_ms_p50"] == pytest.approx(200)
    assert measures["queue_ms_p50"] == pytest.approx(40)
    assert measures["goodput_ratio"] == 1.0  # TPOT 20 ms at half scale: within 50


def _request(rid: str, priority: str | None, tenant: str | None) -> TraceRequest:
    message = (Message("user", ("a",)),)
    return TraceRequest(0, 1, rid, "m", message, 4, start_s=0.0, priority=priority, tenant=tenant)


def test_breakdowns_group_by_class_and_tenant() -> None:
    requests = [
        _request("a", "interactive", "t0"),
        _request("b", "batch", "t0"),
        _request("c", "batch", "t1"),
        _request("d", None, "t1"),
        _request("never-sent", "interactive", "t2"),
    ]
    results = [served(rid="a"), refused(rid="b"), served(0.5, rid="c"), served(rid="d")]
    found = breakdowns(results, requests, SLO, scale=1.0)
    by_class, by_tenant = found["by_class"], found["by_tenant"]
    assert list(by_class) == ["(none)", "batch", "interactive"]
    assert list(by_tenant) == ["t0", "t1"]
    assert (by_class["batch"]["requests"], by_class["batch"]["shed"]) == (2, 1)
    assert by_class["batch"]["goodput_ratio"] == 0.0  # one shed, one too slow
    assert by_tenant["t0"]["goodput_ratio"] == 0.5
    assert by_tenant["t1"]["succeeded"] == 2


def test_no_breakdown_without_classes_or_tenants() -> None:
    found = breakdowns([served(rid="a")], [_request("a", None, None)], SLO, scale=1.0)
    assert found == {"by_class": {}, "by_tenant": {}}


def test_the_report_prints_one_table_per_target_with_groups() -> None:
    requests = [_request("a", "interactive", "t0"), _request("b", "batch", "t0")]
    results = [served(rid="a", queue_ms=12), refused(rid="b")]
    row = {"policy": "fair", "error": None, **breakdowns(results, requests, SLO, 1.0)}
    lines = group_lines(complete_row(row, 0.5, {}))
    assert "fair per class and tenant (trace-time ms):" in lines
    assert "| class batch | 1 | 0 | 1 | 0.0% | - | - | - | - | - |" in lines
    assert "| class interactive | 1 | 1 | 0 | 100.0% | 100 | 100 | 100 | 12 | 12 |" in lines
    assert "| tenant t0 | 2 | 1 | 1 | 50.0% | 100 | 100 | 100 | 12 | 12 |" in lines
    assert group_lines(complete_row({"policy": "plain", "error": None}, 0.5, {})) == []


def test_overall_measures_count_a_shed_as_a_failed_request() -> None:
    results = (served(0.1, 0.5), refused(429, "request_shed"))
    run = ReplayRun(results, started_at=0.0, finished_at=0.5, time_scale=1.0)
    summary = throughput_summary(run, SLO)
    assert (summary["requests"], summary["errors"], summary["goodput_ratio"]) == (2, 1, 0.5)
    assert cache_summary(results)["prompt_tokens"] == 100  # the shed one is not in the ratio
    assert error_kinds(results) == {"HTTP 429 request_shed: no": 1}
