"""`switchyard bench cascade --quick --small emulated`: the harness end to end on emulated
tiers (the real engine's short run is in tests/real_engine/)."""

from __future__ import annotations

from typing import Any

from bench.cascade.analysis import PairedRequest, auroc, choose_threshold, curve
from bench.cascade.cli import parse, run


async def test_the_quick_bench_measures_every_section() -> None:
    result: dict[str, Any] = await run(parse(["--quick", "--small", "emulated"]))
    for kinds in result["workloads"].values():
        for kind, rows in kinds.items():
            assert rows["always-strong"]["accuracy"] == 1.0, kind  # the oracle stand-in
            assert rows["always-strong"]["answered_by"] == {"strong": 1.0}
            assert rows["always-small"]["answered_by"] == {"small": 1.0}
            cascade = rows["cascade"]
            assert set(cascade["answered_by"]) <= {"small", "strong"}
            assert cascade["passing"] >= rows["always-small"]["passing"]
            assert cascade["unmarked_failures"] == 0
    assert result["logprob"]["curve"]
    assert set(result["learned"]["rows"]) == {"cascade", "cascade-learned"}
    overhead = result["overhead"]
    assert overhead["requests"] > 0 and overhead["added_p50_ms"] is not None


def test_auroc_counts_pairs_and_ties() -> None:
    assert auroc([0.9, 0.8, 0.1], [True, True, False]).value == 1.0
    assert auroc([0.1, 0.2, 0.9], [True, True, False]).value == 0.0
    assert auroc([0.5, 0.5], [True, False]).value == 0.5
    assert auroc([0.5], [True]).value is None  # no wrong answer to rank against


def test_the_curve_escalates_below_the_threshold_and_prices_both_tiers() -> None:
    pairs = [
        PairedRequest(-0.1, True, True, 1.0, 10.0),
        PairedRequest(-2.0, False, True, 1.0, 10.0),
    ]
    low, mid, high = curve(pairs, [-3.0, -1.0, 0.0])
    assert (low["escalated"], low["accuracy"], low["cost_per_request_usd"]) == (0.0, 0.5, 1.0)
    assert (mid["escalated"], mid["accuracy"], mid["cost_per_request_usd"]) == (0.5, 1.0, 6.0)
    assert mid["random_accuracy"] == 0.75
    assert (high["escalated"], high["cost_per_request_usd"]) == (1.0, 11.0)
    assert choose_threshold([low, mid, high], strong_accuracy=1.0, strong_cost=10.0) == -1.0
    assert choose_threshold([low, high], strong_accuracy=1.0, strong_cost=10.0) is None
