"""`switchyard bench matrix`: the report and target logic on synthetic rows, and a quick
matrix through real gateways and emulated engines (round-robin and cache-aware; SGLang's
router needs a pip install, which CI does not do, as in test_replay_end_to_end.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import orjson
import pytest

from bench.matrix.cli import QUICK_REQUESTS, add_arguments, main, options_from
from bench.matrix.report import (
    MEASURES,
    fixed,
    judge,
    measure_table,
    percent,
    render,
    targets_summary,
    with_ratio,
)
from bench.matrix.runner import load_catalog
from bench.matrix.targets import REQUIREMENTS, check_cell
from bench.workloads.catalog import CATALOG, SEEDS
from gateway.cli import build_parser
from gateway.cli import main as switchyard

# --- synthetic rows -------------------------------------------------------------------


def _row(policy: str, cell: str = "chat", load: str = "calibrated", **measures: Any) -> Any:
    base = {
        "token_cache_hit_ratio": 0.60,
        "goodput_ratio": 0.50,
        "goodput_rps": 1.0,
        "ttft_ms_p50": 100.0,
        "ttft_ms_p90": 1_000.0,
        "tpot_ms_p50": 20.0,
        "imbalance_requests": 1.1,
        "imbalance_prompt_tokens": 1.1,
        "offline_bounded_at_pace": 0.62,
    }
    family = "unique" if cell == "unique" else cell
    labels = {"cell": cell, "family": family, "seed": 1, "load": load, "policy": policy}
    return {**labels, "error": None, **base, **measures}


def _verdicts(rows: list[Any], family: str = "chat") -> dict[str, str]:
    by_policy = {row["policy"]: row for row in rows}
    return {check.requirement: check.verdict for check in check_cell(by_policy, family)}


SGL = "sglang"


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


CA = "cache-aware"


@pytest.mark.parametrize(
    ("requirement", "subject", "reference", "expected"),
    [
        ("goodput >= SGLang", {"goodput_ratio": 0.5}, {"goodput_ratio": 0.5}, "met"),
        ("goodput >= SGLang", {"goodput_ratio": 0.49}, {"goodput_ratio": 0.5}, "missed"),
        ("good req/s >= SGLang", {"goodput_rps": 1.2}, {"goodput_rps": 1.0}, "met"),
        ("good req/s >= SGLang", {"goodput_rps": 0.9}, {"goodput_rps": 1.0}, "missed"),
        ("hits >= SGLang - 1 pt", {"token_cache_hit_ratio": 0.595}, {}, "met"),
        ("hits >= SGLang - 1 pt", {"token_cache_hit_ratio": 0.58}, {}, "missed"),
        ("TTFT p90 <= SGLang", {"ttft_ms_p90": 900.0}, {}, "met"),
        ("TTFT p90 <= SGLang", {"ttft_ms_p90": 1_001.0}, {}, "missed"),
        ("hits >= 0.95 x offline bounded", {"token_cache_hit_ratio": 0.59}, {}, "met"),
        ("hits >= 0.95 x offline bounded", {"token_cache_hit_ratio": 0.58}, {}, "missed"),
        ("hits >= 0.95 x offline bounded", {"offline_bounded_at_pace": None}, {}, "n/a"),
        ("imbalance <= 1.3", {"imbalance_requests": 1.3}, {}, "met"),
        ("imbalance <= 1.3", {"imbalance_prompt_tokens": 1.31}, {}, "missed"),
        ("goodput >= SGLang", {"goodput_ratio": None}, {}, "n/a"),
        ("TTFT p90 <= SGLang", {}, {"error": "pip install failed"}, "n/a"),
        ("goodput >= SGLang", {"error": "gateway config: bad"}, {}, "n/a"),
    ],
)
def test_each_target_is_met_missed_or_not_judged(
    requirement: str, subject: dict[str, Any], reference: dict[str, Any], expected: str
) -> None:
    rows = [_row(CA, **subject), _row(SGL, **reference)]
    assert _verdicts(rows)[requirement] == expected


def test_targets_need_their_reference_row_and_unique_has_one_more() -> None:
    without_sglang = _verdicts([_row(CA)])
    assert {name: v for name, v in without_sglang.items() if "SGLang" in name} == {
        "goodput >= SGLang": "n/a",
        "good req/s >= SGLang": "n/a",
        "hits >= SGLang - 1 pt": "n/a",
        "TTFT p90 <= SGLang": "n/a",
    }
    assert without_sglang["imbalance <= 1.3"] == "met"  # needs no reference
    unique_rule = "unique: TTFT p90 <= least-load + 10 %"
    assert unique_rule not in without_sglang  # applies to unique cells only
    for ttft_p90, expected in ((1_100.0, "met"), (1_101.0, "missed")):  # the 10 % margin
        rows = [_row(CA, "unique", ttft_ms_p90=ttft_p90), _row("least-load", "unique")]
        assert _verdicts(rows, "unique")[unique_rule] == expected
    assert _verdicts([_row(CA, "unique")], "unique")[unique_rule] == "n/a"
    assert [check.requirement for check in check_cell({}, "unique")] == [
        r.name for r in REQUIREMENTS
    ]


@pytest.mark.parametrize(
    ("value", "reference", "show", "expected"),
    [
        (0.612, 0.5885, percent, "61.2 % (1.04x)"),
        (0.612, None, percent, "61.2 %"),
        (0.612, 0.0, percent, "61.2 %"),
        (None, 0.5, percent, "-"),
        (1234.4, 617.2, fixed(0), "1,234 (2.00x)"),
        (1.5, 3.0, fixed(2), "1.50 (0.50x)"),
    ],
)
def test_values_carry_their_ratio_to_the_reference(
    value: float | None, reference: float | None, show: Any, expected: str
) -> None:
    assert with_ratio(value, reference, show) == expected


def test_tables_show_every_cell_and_ratios_to_sglang_only_when_it_ran() -> None:
    rows = [
        _row("round-robin", "chat", token_cache_hit_ratio=0.40),
        _row(CA, "chat", token_cache_hit_ratio=0.66),
        _row(SGL, "chat", token_cache_hit_ratio=0.60),
        _row("round-robin", "agent", load="light"),
        _row(CA, "agent", load="light", error="gateway config: bad"),
        _row(SGL, "agent", load="light", error="pip install failed"),
    ]
    header, _, chat, agent = (
        _cells(line) for line in measure_table(rows, MEASURES[0]).splitlines()
    )
    assert header == ["cell", "load", "round-robin", "cache-aware", "sglang"]
    # SGLang's own column has no ratio.
    assert chat == ["chat", "calibrated", "40.0 % (0.67x)", "66.0 % (1.10x)", "60.0 %"]
    # SGLang failed: values without ratios.
    assert agent == ["agent", "light", "60.0 %", "error", "error"]

    report = render(rows, "header")
    for measure in MEASURES:
        assert measure.title in report
    assert "agent light seed 1 cache-aware: not measured: gateway config: bad" in report
    judged = judge(rows)
    assert [(t.cell, t.load) for t in judged] == [("chat", "calibrated"), ("agent", "light")]
    assert {c.verdict for c in judged[1].checks} == {"n/a"}
    assert targets_summary(judged).startswith("cache-aware meets 6 of 12 checks; 6 not judged")


def _options(*argv: str) -> Any:
    parser = build_parser()
    args = parser.parse_args(["bench", "matrix", *argv])
    assert args.bench_name == "matrix"  # registered beside replay
    own = argparse.ArgumentParser()
    add_arguments(own)
    return options_from(own.parse_args(args.bench_args), load_catalog())


def test_quick_sets_defaults_that_explicit_options_override() -> None:
    full = _options()
    assert (full.cells, full.seeds, full.loads) == (tuple(CATALOG), SEEDS, ("light", "calibrated"))
    assert len(full.cells) == 10 and full.requests == 1_200 and full.replay_s == 150.0
    quick = _options("--quick")
    assert (quick.seeds, quick.loads, quick.requests) == (SEEDS[:1], ("calibrated",), 200)
    assert quick.cells == full.cells
    assert quick.replay_s < full.replay_s
    mine = _options("--quick", "--seeds", "2,3", "--loads", "light", "--requests", "50")
    assert (mine.seeds, mine.loads, mine.requests) == ((2, 3), ("light",), 50)
    with pytest.raises(ValueError, match="unknown cell nope"):
        _options("--cells", "unique,nope")
    with pytest.raises(ValueError, match="unknown load heavy"):
        _options("--loads", "heavy")


def test_switchyard_bench_matrix_rejects_unknown_names(capsys: Any) -> None:
    assert switchyard(["bench", "matrix", "--cells", "chat,nope"]) == 2
    assert switchyard(["bench", "matrix", "--policies", "cache-aware,nope"]) == 2
    printed = capsys.readouterr().err
    assert "unknown cell nope" in printed and "unknown policy 'nope'" in printed


# --- a quick matrix through real processes -------------------------------------------


CELLS = ("doc-qa-z1.2-fits", "unique")
POLICIES = ("round-robin", "cache-aware")


@pytest.mark.timeout(300)
def test_quick_matrix_orders_policies_and_reports_every_cell(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "matrix.json"
    argv = [
        "--quick", "--cells", ",".join(CELLS), "--policies", ",".join(POLICIES),
        "--time-scale", "0.25", "--json", str(out), "--no-progress",
    ]  # fmt: skip

    assert main(argv) == 0

    data = orjson.loads(out.read_bytes())
    rows = data["rows"]
    assert {(r["cell"], r["policy"]) for r in rows} == {(c, p) for c in CELLS for p in POLICIES}
    assert all(r["error"] is None and r["errors"] == 0 for r in rows)
    assert all(r["requests"] == QUICK_REQUESTS for r in rows)
    assert all(r["seed"] == SEEDS[0] and r["load"] == "calibrated" for r in rows)
    assert all(r["parameters"]["time_scale"] == 0.25 for r in rows)
    hits = {(r["cell"], r["policy"]): r["token_cache_hit_ratio"] for r in rows}
    assert hits["doc-qa-z1.2-fits", "cache-aware"] > hits["doc-qa-z1.2-fits", "round-robin"]
    assert max(hits["unique", p] for p in POLICIES) < hits["doc-qa-z1.2-fits", "round-robin"]
    assert all(0 <= r["offline_bounded_at_pace"] <= r["oracle_hit_ratio"] for r in rows)
    assert [(t["cell"], len(t["checks"])) for t in data["targets"]] == [
        ("doc-qa-z1.2-fits", len(REQUIREMENTS) - 1),  # the least-load one is for unique only
        ("unique", len(REQUIREMENTS)),
    ]
    printed = capsys.readouterr().out
    for measure in MEASURES:
        table = printed.split(measure.title, 1)[1]
        assert all(f"| {cell} " in table for cell in CELLS)
    assert "Issue 13's targets for cache-aware" in printed
