"""Measures of a replay under overload: answers against the TTFT deadline, goodput per
window of the schedule, and how soon goodput recovered after a burst.

Flow control promises that no request waits past its TTFT deadline without an answer: it is
served within its SLO, refused (429 + Retry-After) or moved to a fallback route in time. A
request's answer is its first token if it succeeded (a fallback's included), else the end of
its failure; it is late when that comes more than the TTFT SLO after sending. Windows group
requests by when the schedule sent them (`due_at`), not by when they were answered, so a
window's goodput is what became of the load that arrived then, whatever its fate. Every
time is trace time: wall seconds / the run's time scale.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from .breakdown import is_shed
from .metrics import Slo
from .schedule import ReplayRun, RequestResult

RECOVERY_SHARE = 0.9
"""Recovered: a window's goodput ratio at least this share of the pre-burst mean."""

Outcome = Literal["good", "slow", "shed", "failed"]
OUTCOMES: tuple[Outcome, ...] = ("good", "slow", "shed", "failed")
"""In the order of `Window`'s counts."""


@dataclass(frozen=True, slots=True)
class Window:
    """Requests scheduled in [start_s, end_s) of trace time, by outcome: good (both SLOs
    met), slow (succeeded, missed one), shed (HTTP 429), failed (any other failure)."""

    start_s: float
    end_s: float
    requests: int = 0
    good: int = 0
    slow: int = 0
    shed: int = 0
    failed: int = 0

    @property
    def goodput_ratio(self) -> float | None:
        return self.good / self.requests if self.requests else None

    def as_dict(self) -> dict[str, Any]:
        ratio = self.goodput_ratio
        return {**asdict(self), "goodput_ratio": None if ratio is None else round(ratio, 4)}


def answered_after_s(result: RequestResult, scale: float = 1.0) -> float:
    """Sending to the answer, in trace seconds: the first token of a success, the end of
    a failure (or of a success that never marked a first token)."""
    first = result.first_token_at if result.ok else None
    answered = result.done_at if first is None else first
    return (answered - result.sent_at) / scale


def deadline_measures(
    results: Sequence[RequestResult], slo: Slo, scale: float = 1.0
) -> dict[str, int]:
    """`late_unanswered`: no first token and no refusal within the TTFT SLO of sending;
    `refused_before_deadline`: 429s answered within it."""
    deadline_s = slo.ttft_ms / 1000
    late = refused = 0
    for result in results:
        if answered_after_s(result, scale) > deadline_s:
            late += 1
        elif is_shed(result):
            refused += 1
    return {"late_unanswered": late, "refused_before_deadline": refused}


def outcome(result: RequestResult, slo: Slo, scale: float = 1.0) -> Outcome:
    if slo.met_by(result, scale):
        return "good"
    if result.ok:
        return "slow"
    return "shed" if is_shed(result) else "failed"


def timeline(run: ReplayRun, slo: Slo, window_s: float) -> list[Window]:
    """Windows of `window_s` trace seconds from the replay's start to the last request
    scheduled, empty ones included."""
    scale = run.time_scale
    counts: dict[int, Counter[Outcome]] = {}
    for result in run.results:
        # Rounded so that a request due exactly on a boundary is not put one window early.
        due_s = max(0.0, round((result.due_at - run.started_at) / scale, 6))
        counts.setdefault(int(due_s // window_s), Counter())[outcome(result, slo, scale)] += 1
    windows = []
    for i in range(max(counts, default=-1) + 1):
        found = counts.get(i, Counter())
        bounds = round(i * window_s, 6), round((i + 1) * window_s, 6)
        windows.append(Window(*bounds, found.total(), *(found[o] for o in OUTCOMES)))
    return windows


def pre_burst_goodput(windows: Sequence[Window], burst_start_s: float) -> float | None:
    """The mean goodput ratio of the windows that end by the burst's start (empty ones
    left out); None if there are none."""
    ratios = [w.goodput_ratio for w in windows if w.end_s <= burst_start_s]
    present = [r for r in ratios if r is not None]
    return sum(present) / len(present) if present else None


def recovery_s(
    windows: Sequence[Window], burst_end_s: float, reference: float | None
) -> float | None:
    """Seconds from the burst's end to the start of the first window from then on whose
    goodput ratio, and the next window's, reach `RECOVERY_SHARE` x `reference`; None if
    none do (or no reference). The next window guards against one lucky window, so the
    last window alone never counts; an empty window never does."""
    if reference is None:
        return None
    after = [w for w in windows if w.start_s >= burst_end_s]
    for window, following in itertools.pairwise(after):
        ratios = (window.goodput_ratio, following.goodput_ratio)
        if all(r is not None and r >= RECOVERY_SHARE * reference for r in ratios):
            return round(window.start_s - burst_end_s, 6)
    return None


def overload_measures(
    run: ReplayRun,
    slo: Slo,
    timeline_s: float | None = None,
    burst_s: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """The deadline counts always; with `timeline_s`, the `timeline` (window dicts), and
    with `burst_s` (start, end) as well, `pre_burst_goodput_ratio` and `recovery_s`."""
    found: dict[str, Any] = dict(deadline_measures(run.results, slo, run.time_scale))
    if timeline_s is None:
        return found
    windows = timeline(run, slo, timeline_s)
    reference = pre_burst_goodput(windows, burst_s[0]) if burst_s is not None else None
    found["timeline"] = [w.as_dict() for w in windows]
    found["pre_burst_goodput_ratio"] = None if reference is None else round(reference, 4)
    found["recovery_s"] = recovery_s(windows, burst_s[1], reference) if burst_s else None
    return found
