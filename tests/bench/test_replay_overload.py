"""Overload measures on synthetic results: answers against the TTFT deadline, the timeline
of the schedule, recovery after a burst, their report lines and the `--timeline-s` flag."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from bench.replay.cli import add_arguments
from bench.replay.metrics import Slo
from bench.replay.overload import (
    Window,
    deadline_measures,
    overload_measures,
    pre_burst_goodput,
    recovery_s,
    timeline,
)
from bench.replay.report import MEASURE_KEYS, complete_row, overload_lines
from bench.replay.schedule import ReplayRun, RequestResult

SLO = Slo(ttft_ms=2000, tpot_ms=50)
STARTED = 100.0
"""The replay's clock at its start: results' times are on that clock, not from 0."""


def served(
    ttft_s: float = 0.5, *, due_s: float = 0.0, scale: float = 1.0, gap_s: float = 0.01
) -> RequestResult:
    """A success of 11 tokens sent when due, its tokens `gap_s` of trace time apart."""
    sent = STARTED + due_s * scale
    first = sent + ttft_s * scale
    tokens = 11
    return RequestResult(
        "r", ok=True, sent_at=sent, done_at=first + gap_s * (tokens - 1) * scale,
        first_token_at=first, status=200, completion_tokens=tokens, due_at=sent,
    )  # fmt: skip


def refused(
    after_s: float = 0.1, *, status: int = 429, due_s: float = 0.0, scale: float = 1.0
) -> RequestResult:
    """A failure answered `after_s` trace seconds after sending."""
    sent = STARTED + due_s * scale
    return RequestResult(
        "r", ok=False, sent_at=sent, done_at=sent + after_s * scale, status=status,
        error=f"HTTP {status}", due_at=sent,
    )  # fmt: skip


DEADLINE_CASES: list[tuple[str, list[RequestResult], float, tuple[int, int]]] = [
    ("served in time", [served(0.5), served(2.0)], 1.0, (0, 0)),
    ("a first token past the SLO is late", [served(2.001)], 1.0, (1, 0)),
    ("a quick 429 is refused in time", [refused(0.1), refused(2.0)], 1.0, (0, 2)),
    ("a 429 past the SLO is late", [refused(2.5)], 1.0, (1, 0)),
    ("another failure in time is neither", [refused(0.1, status=503)], 1.0, (0, 0)),
    ("a timeout is late", [refused(30.0, status=504)], 1.0, (1, 0)),
    (
        "trace time: wall / scale",
        [served(1.5, scale=0.25), refused(1.9, scale=0.25), served(2.5, scale=0.25)],
        0.25,
        (1, 1),
    ),
]


@pytest.mark.parametrize(
    ("results", "scale", "expected"),
    [case[1:] for case in DEADLINE_CASES],
    ids=[case[0] for case in DEADLINE_CASES],
)
def test_deadline_measures(
    results: list[RequestResult], scale: float, expected: tuple[int, int]
) -> None:
    late, refused_in_time = expected
    assert deadline_measures(results, SLO, scale) == {
        "late_unanswered": late,
        "refused_before_deadline": refused_in_time,
    }


def test_a_success_without_a_first_token_is_answered_at_its_end() -> None:
    ended = served(0.5)
    ended.first_token_at, ended.done_at = None, ended.sent_at + 3.0
    assert deadline_measures([ended], SLO)["late_unanswered"] == 1


def _run(results: list[RequestResult], scale: float = 1.0) -> ReplayRun:
    return ReplayRun(tuple(results), STARTED, STARTED + 1000, scale)


def test_timeline_counts_each_outcome_by_when_requests_were_due() -> None:
    scale = 0.03  # (100 + 10 x 0.03 - 100) / 0.03 is 9.9999…: the boundary needs rounding
    results = [
        served(0.5, due_s=1.0, scale=scale),
        served(2.5, due_s=9.9, scale=scale),  # slow: TTFT past the SLO, yet in window 0
        refused(due_s=10.0, scale=scale),  # exactly on the boundary: window 1
        refused(status=500, due_s=12.0, scale=scale),
        served(0.2, due_s=35.0, scale=scale),
    ]
    windows = timeline(_run(results, scale), SLO, 10.0)
    assert windows == [
        Window(0.0, 10.0, requests=2, good=1, slow=1),
        Window(10.0, 20.0, requests=2, shed=1, failed=1),
        Window(20.0, 30.0),  # nothing due: kept, its goodput undefined
        Window(30.0, 40.0, requests=1, good=1),
    ]
    assert [w.goodput_ratio for w in windows] == [0.5, 0.0, None, 1.0]
    assert windows[0].as_dict() == {
        "start_s": 0.0, "end_s": 10.0, "requests": 2, "good": 1, "slow": 1, "shed": 0,
        "failed": 0, "goodput_ratio": 0.5,
    }  # fmt: skip


def test_a_slow_token_stream_is_slow_not_good() -> None:
    (window,) = timeline(_run([served(0.1, gap_s=0.2)]), SLO, 5.0)
    assert (window.good, window.slow) == (0, 1)


def _windows(ratios: list[float | None], width: float = 10.0) -> list[Window]:
    """A window per ratio, of 20 requests each (none for None)."""
    return [
        Window(i * width, (i + 1) * width, requests=0 if r is None else 20,
               good=0 if r is None else round(20 * r))
        for i, r in enumerate(ratios)
    ]  # fmt: skip


BEFORE = [1.0, 0.8, 0.9, 0.9, 0.9, 0.9]  # 0-60 s, mean 0.9: recovered at >= 0.81
RECOVERY_CASES: list[tuple[str, list[float | None], tuple[float, float], float | None]] = [
    ("at once", [*BEFORE, 0.1, 0.1, 0.85, 0.9, 0.8], (60, 80), 0.0),
    ("a fluke is not recovery", [*BEFORE, *[0.0] * 6, 0.9, 0.3, 0.85, 0.85], (60, 120), 20.0),
    ("never", [*BEFORE, 0.1, 0.5, 0.7, 0.8], (60, 70), None),
    ("the last window alone does not count", [*BEFORE, 0.1, 0.1, 0.95], (60, 70), None),
    ("an empty window breaks a run", [*BEFORE, 0.0, 0.9, None, 0.9, 0.9], (60, 70), 20.0),
    ("from the first window starting after the end", [*BEFORE, 0.0, 0.9, 0.9, 0.9], (60, 75), 5.0),
    ("the burst window itself never counts", [*BEFORE, 0.9, 0.9, 0.5], (60, 80), None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("ratios", "burst", "expected"),
    [case[1:] for case in RECOVERY_CASES],
    ids=[case[0] for case in RECOVERY_CASES],
)
def test_recovery(
    ratios: list[float | None], burst: tuple[float, float], expected: float | None
) -> None:
    windows = _windows(ratios)
    reference = pre_burst_goodput(windows, burst[0])
    assert reference == pytest.approx(0.9)
    assert recovery_s(windows, burst[1], reference) == expected


def test_the_reference_takes_only_whole_windows_before_the_burst_and_skips_empty_ones() -> None:
    windows = _windows([1.0, None, 0.5, 0.0])
    assert pre_burst_goodput(windows, 30.0) == pytest.approx(0.75)
    assert pre_burst_goodput(windows, 25.0) == pytest.approx(1.0)  # [20, 30) ends after it
    assert pre_burst_goodput(windows, 5.0) is None
    assert recovery_s(windows, 10.0, None) is None


def test_overload_measures_with_and_without_a_timeline() -> None:
    early = [served(0.5, due_s=t) for t in (1.0, 2.0, 11.0, 12.0)]
    during = [refused(due_s=t) for t in (21.0, 22.0, 23.0)]
    late = [served(0.5, due_s=t) for t in (31.0, 41.0, 42.0, 51.0)]
    run = _run([*early, *during, late[0], refused(3.0, due_s=33.0), *late[1:]])
    assert overload_measures(run, SLO) == {"late_unanswered": 1, "refused_before_deadline": 3}
    plain = overload_measures(run, SLO, timeline_s=10.0)
    assert [w["goodput_ratio"] for w in plain["timeline"]] == [1.0, 1.0, 0.0, 0.5, 1.0, 1.0]
    assert plain["recovery_s"] is None and plain["pre_burst_goodput_ratio"] is None
    burst = overload_measures(run, SLO, timeline_s=10.0, burst_s=(20.0, 30.0))
    assert burst["pre_burst_goodput_ratio"] == 1.0
    assert burst["recovery_s"] == 10.0  # 0.5 at 30-40 s, then 1.0 at 40-50 and 50-60
    assert overload_measures(run, SLO, 10.0, (20.0, 25.0))["recovery_s"] == 15.0


def _row(**measures: Any) -> dict[str, Any]:
    return complete_row({"policy": "deadline", "error": None, **measures}, 0.5, {})


PARAMETERS = {"ttft_slo_ms": 2000.0, "timeline_s": 10.0, "burst_start_s": 10.0, "burst_end_s": 20.0}


def test_the_report_prints_the_deadline_line_and_the_timeline() -> None:
    windows = [w.as_dict() for w in _windows([1.0, 0.25, 0.95])]
    row = _row(late_unanswered=3, refused_before_deadline=1_234, timeline=windows,
               pre_burst_goodput_ratio=1.0, recovery_s=0.0)  # fmt: skip
    lines = overload_lines(row, PARAMETERS)
    assert lines[1] == (
        "deadline deadlines (TTFT SLO 2,000 ms): 3 late without an answer, 1,234 refused "
        "within it; goodput back to 90% of the pre-burst 100.0% 0 s after the burst"
    )
    assert "per 10 s window" in lines[3] and "burst 10-20 s" in lines[3]
    assert lines[-3:] == [
        "| 0-10 | 20 | 20 | 0 | 0 | 0 | 100.0% |",
        "| 10-20 burst | 20 | 5 | 0 | 0 | 0 | 25.0% |",
        "| 20-30 | 20 | 19 | 0 | 0 | 0 | 95.0% |",
    ]


def test_the_report_says_when_goodput_never_recovered_and_skips_rows_without_measures() -> None:
    row = _row(late_unanswered=0, refused_before_deadline=0, pre_burst_goodput_ratio=0.5)
    (_, line) = overload_lines(row, PARAMETERS)
    assert line.endswith("not back to 90% of the pre-burst 50.0% by the end")
    failed = complete_row({"policy": "x", "error": "did not start"}, 0.5, {})
    assert overload_lines(failed, PARAMETERS) == []
    assert {"late_unanswered", "recovery_s"} <= set(MEASURE_KEYS) and failed["timeline"] is None


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(["--trace", "t.jsonl", *argv])


@pytest.mark.parametrize(("argv", "expected"), [((), None), (("--timeline-s", "10"), 10.0)])
def test_timeline_flag(argv: tuple[str, ...], expected: float | None) -> None:
    assert _args(*argv).timeline_s == expected


@pytest.mark.parametrize("width", ["0", "-5", "ten"])
def test_a_bad_timeline_width_is_refused_by_the_parser(width: str) -> None:
    with pytest.raises(SystemExit):
        _args("--timeline-s", width)
