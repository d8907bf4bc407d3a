"""The pure parts of `switchyard bench quality-real`: statistics, engine flags, scenarios."""

from __future__ import annotations

import argparse
from types import SimpleNamespace
from typing import Any

import pytest

from bench.quality_real import engine
from bench.quality_real.replicas import EngineSetup, engine_command
from bench.quality_real.scenarios import SCENARIOS, by_names
from bench.quality_real.stats import (
    CycleRecord,
    cycle_max_drifts,
    distribution,
    first_cycle,
    flag_counts,
    margin,
    percentile,
    state_counts,
)


def record(
    cycle: int, *drifts: float, flagged: tuple[str, ...] = (), state: str = "healthy"
) -> CycleRecord:
    return CycleRecord(cycle, "subject", drifts, flagged, (), state)


@pytest.mark.parametrize(
    ("share", "expected"),
    [(0.0, 1.0), (0.5, 5.0), (0.9, 9.0), (0.99, 10.0), (1.0, 10.0)],
)
def test_percentile_is_nearest_rank(share: float, expected: float) -> None:
    assert percentile([float(v) for v in range(1, 11)], share) == expected


def test_distribution_of_nothing_is_none_and_of_values_is_ordered() -> None:
    assert distribution([]) is None
    d = distribution([0.3, 0.0, 0.1, 0.2])
    assert d is not None
    assert (d.count, d.min, d.p50, d.max) == (4, 0.0, 0.1, 0.3)
    assert d.row() == (0.0, 0.1, 0.3, 0.3, 0.3)


def test_first_cycle_skips_the_warm_up_and_reads_flags_or_states() -> None:
    records = [
        record(0, 0.0, flagged=("canary",)),  # the warm-up never counts
        record(1, 0.05),
        record(2, 0.4, flagged=("canary",)),
        record(3, 0.4, flagged=("canary",), state="ejected"),
    ]
    assert first_cycle(records) == 2
    assert first_cycle(records, flagged=False) == 3
    assert first_cycle(records[:2]) is None


def test_margin_is_worst_healthy_against_best_faulty_cycle() -> None:
    healthy = [record(1, 0.0, 0.02, 0.01), record(2, 0.03, 0.0, 0.0)]
    faulty = [record(1, 0.05, 0.3, 0.1), record(2, 0.2, 0.01, 0.0)]
    assert cycle_max_drifts(faulty) == [0.3, 0.2]
    gap = margin(healthy, faulty)
    assert gap is not None
    assert (gap.healthy_max, gap.fault_min) == (0.03, 0.2)
    assert gap.gap == pytest.approx(0.17)
    assert gap.ratio == pytest.approx(0.2 / 0.03)
    assert margin([], faulty) is None
    zero = margin([record(1, 0.0)], faulty)
    assert zero is not None and zero.ratio is None


def test_counts_by_kind_and_state() -> None:
    records = [
        record(1, flagged=("canary", "canary")),
        record(2, flagged=("needle",), state="ejected"),
    ]
    assert flag_counts(records) == {"canary": 2, "needle": 1}
    assert state_counts(records) == {"healthy": 1, "ejected": 1}


DEFAULT = ["--ctx-size", "2048", "--threads", "1"]


@pytest.mark.parametrize(
    ("setup", "flags"),
    [
        (EngineSetup(), DEFAULT),
        (
            EngineSetup(cache_type_k="q4_0", cache_type_v="q4_0"),
            [*DEFAULT, "--cache-type-k", "q4_0", "--cache-type-v", "q4_0"],
        ),
        (
            EngineSetup(chat_template="llama2", jinja=False, ctx_size=1024),
            ["--ctx-size", "1024", "--threads", "1", "--chat-template", "llama2", "--no-jinja"],
        ),
        (
            EngineSetup(flash_attn="off"),
            [*DEFAULT, "--flash-attn", "off"],
        ),
    ],
)
def test_engine_setup_flags(setup: EngineSetup, flags: list[str]) -> None:
    assert setup.arguments() == flags


def test_engine_command_is_the_replica_plus_extras_and_dies_with_its_parent() -> None:
    from pathlib import Path

    command = engine_command(Path("m.gguf"), 8123, EngineSetup(cache_type_v="q4_0"))
    assert command[1:3] == ["-m", "bench.quality_real.engine"]
    assert command[-1] == "--exit-with-parent"
    extras, rest = engine.extra_parser().parse_known_args(command[3:])
    assert extras.cache_type_v == "q4_0"
    assert "--cache-type-v" not in rest  # replica_main never sees the extra flags


def test_extras_are_applied_on_replica_mains_params() -> None:
    xllamacpp = pytest.importorskip("xllamacpp")
    params = SimpleNamespace(cache_type_v=None, flash_attn_type=None, use_jinja=True)

    def base(args: argparse.Namespace) -> Any:
        return params

    extras = argparse.Namespace(cache_type_v="q4_0", flash_attn="off", no_jinja=True)
    assert engine.with_extras(base, extras)(argparse.Namespace()) is params
    assert params.cache_type_v == xllamacpp.ggml_type.GGML_TYPE_Q4_0
    assert params.flash_attn_type == xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED
    assert params.use_jinja is False


def test_scenarios_by_name_keep_their_order_and_reject_unknown_names() -> None:
    assert [s.name for s in by_names("kv-q4_0, twins")] == ["twins", "kv-q4_0"]
    with pytest.raises(ValueError, match="nope"):
        by_names("twins,nope")
    assert len({s.name for s in SCENARIOS}) == len(SCENARIOS)
    assert [s.role for s in SCENARIOS].count("twins") == 1


def test_tables_show_per_prompt_drift_detection_and_margin() -> None:
    from bench.quality_real.campaign import CampaignSettings, ScenarioRun
    from bench.quality_real.report import detection_table, drift_table, to_json
    from bench.quality_real.scenarios import TWINS

    fault = by_names("kv-q4_0")[0]
    settings = CampaignSettings(cycles=2)
    twins = ScenarioRun(TWINS, settings, [record(0, 0.0, 0.0, 0.0), record(1, 0.0, 0.01, 0.0)])
    faulty = ScenarioRun(
        fault,
        settings,
        [
            record(0, 0.0, 0.0, 0.0),  # the warm-up, before the swap: not measured
            record(1, 0.05, 0.2, 0.3, flagged=("canary", "canary"), state="ejected"),
            record(2, 0.05, 0.2, 0.3, flagged=("canary", "canary"), state="ejected"),
        ],
    )
    drift_lines = drift_table([twins, faulty]).splitlines()
    assert drift_lines[-1].endswith("| 0.300 | 0.050 / 0.200 / 0.300 |")
    detection = detection_table([twins, faulty]).splitlines()
    assert detection[-1] == f"| {fault.label} | 2 | canary 4 | 1 | 1 | 2 | +0.290 |"
    payload = to_json([twins, faulty], [], {"model": "m"})
    assert payload["scenarios"][1]["margin"]["gap"] == pytest.approx(0.29)
    assert payload["scenarios"][1]["first_unhealthy_cycle"] == 1
