"""The synthetic workload generators write traces the replay accepts, with the shape asked."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from bench.replay.trace import load_trace
from bench.workloads import hot_prefix, shared_prefix


def test_shared_prefix_trace_is_all_at_once(tmp_path: Path) -> None:
    out = tmp_path / "shared.jsonl"
    argv = ["--out", str(out), "--groups", "4", "--per-group", "3", "--prefix-tokens", "64"]
    assert shared_prefix.main(argv) == 0
    trace = load_trace(out)
    assert len(trace.requests) == 12
    assert {r.start_s for r in trace.requests} == {0.0}
    assert Counter(r.messages[0].segments for r in trace.requests) == {
        (f"sys-{g}",): 3 for g in range(4)
    }


def test_hot_prefix_trace_has_one_popular_prefix_arriving_over_time(tmp_path: Path) -> None:
    out = tmp_path / "hot.jsonl"
    argv = ["--out", str(out), "--requests", "2000", "--rate", "10", "--groups", "9"]
    assert hot_prefix.main([*argv, "--hot-share", "0.6", "--prefix-tokens", "32"]) == 0
    trace = load_trace(out)
    groups = Counter(r.messages[0].segments[0] for r in trace.requests)
    assert groups["sys-0"] / 2000 == pytest.approx(0.6, abs=0.04)
    others = [groups[f"sys-{g}"] for g in range(1, 9)]
    assert max(others) < groups["sys-0"] / 5  # far more popular than any other
    starts = [r.start_s or 0.0 for r in trace.requests]
    assert starts == sorted(starts)
    assert starts[-1] == pytest.approx(200, rel=0.15)  # 2,000 requests at 10/s
    assert len({r.messages[1].segments for r in trace.requests}) == 2000  # own questions
