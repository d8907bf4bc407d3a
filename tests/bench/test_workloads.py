"""The synthetic workload generators write traces the replay accepts, with the shape asked."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bench.replay.oracle import oracle_hit_ratio
from bench.replay.trace import Trace, TraceRequest, load_trace
from bench.workloads import (
    agent_sessions,
    burst,
    chat,
    doc_qa,
    hot_prefix,
    load_estimate,
    mix,
    shared_prefix,
    unique,
)
from bench.workloads.builder import piecewise_poisson_starts, write_lines
from bench.workloads.catalog import CATALOG, SEEDS


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


# The workload matrix's cells (bench/workloads/catalog.py) and their generators.


def _trace_of(lines: Iterator[dict[str, Any]], tmp_path: Path, name: str = "t") -> Trace:
    return load_trace(write_lines(tmp_path / f"{name}.jsonl", lines))


def _prompt_bytes(trace: Trace, request: TraceRequest) -> int:
    size = sum(len(trace.texts[s].encode()) for m in request.messages for s in m.segments)
    return size + (len(trace.texts[request.tools].encode()) if request.tools else 0)


def _documents(segments: Iterable[str]) -> list[str]:
    """doc_qa's document segments ("doc-7"), not its questions or one-shot prompts."""
    return [s for s in segments if s.startswith("doc-") and s[4:].isdigit()]


def _shared_prefix_chars(a: str, b: str) -> int:
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


def test_catalog_holds_the_matrix_cells_read_only() -> None:
    doc_qa_cells = [f"doc-qa-z{z}-{s}" for z in ("0.8", "1.2", "1.6") for s in ("fits", "spills")]
    assert set(CATALOG) == {"agent", "chat", *doc_qa_cells, "unique", "mix"}
    assert {w.family for w in CATALOG.values()} == {"agent", "chat", "doc-qa", "unique", "mix"}
    assert all(name == w.name and w.description for name, w in CATALOG.items())
    assert len(SEEDS) >= 3
    with pytest.raises(TypeError):
        CATALOG["extra"] = CATALOG["agent"]  # type: ignore[index]


@pytest.mark.parametrize("name", list(CATALOG))
def test_every_cell_writes_a_replayable_trace_deterministic_per_seed(
    name: str, tmp_path: Path
) -> None:
    workload = CATALOG[name]
    path = workload.write(tmp_path / "seed1.jsonl", seed=1, requests=60)
    again = workload.write(tmp_path / "seed1-again.jsonl", seed=1, requests=60)
    other = workload.write(tmp_path / "seed2.jsonl", seed=2, requests=60)
    assert path.read_bytes() == again.read_bytes()
    assert path.read_bytes() != other.read_bytes()
    trace = load_trace(path)
    assert len(trace.requests) == trace.meta["requests"] == 60
    assert trace.meta["family"] == workload.family and trace.meta["seed"] == 1
    due = trace.nominal_start_s()
    assert [due[r.id] for r in trace.requests] == sorted(due.values())  # in dispatch order


def test_agent_sessions_fan_out_within_6_to_16k_token_contexts(tmp_path: Path) -> None:
    trace = _trace_of(agent_sessions.lines(agent_sessions.AgentShape(requests=300)), tmp_path)
    by_id = {r.id: r for r in trace.requests}
    assert max(len(children) for children in trace.children.values()) >= 2
    assert all(6_000 <= _prompt_bytes(trace, r) / 4 <= 16_000 for r in trace.requests)
    assert trace.tools("agent-tools")[0]["type"] == "function"
    for request in trace.requests:
        assert request.tools == "agent-tools"
        if request.parent is None:
            assert request.start_s is not None
            continue
        parent = by_id[request.parent]
        assert request.messages[: len(parent.messages)] == parent.messages
        assert len(request.messages) > len(parent.messages)


def test_chat_turns_extend_the_previous_prompt(tmp_path: Path) -> None:
    trace = _trace_of(chat.lines(chat.ChatShape(requests=300)), tmp_path)
    by_id = {r.id: r for r in trace.requests}
    turns = Counter(r.session for r in trace.requests)
    assert min(turns.values()) >= 2 and max(turns.values()) <= 12
    systems = Counter(r.messages[0].segments for r in trace.requests if r.parent is None)
    assert 1 < len(systems) <= 4 and max(systems.values()) > 2  # few prompts, many users
    for request in trace.requests:
        if request.parent is not None:
            parent = by_id[request.parent]
            assert request.session == parent.session
            assert request.messages[: len(parent.messages)] == parent.messages
            assert request.after_s is not None and request.after_s > 0
        assert _prompt_bytes(trace, request) / 4 < 10_000


@pytest.mark.parametrize("zipf", [0.8, 1.2, 1.6])
def test_doc_qa_popularity_follows_zipf(zipf: float, tmp_path: Path) -> None:
    shape = doc_qa.DocQaShape(requests=800, zipf=zipf, documents=40)
    trace = _trace_of(doc_qa.lines(shape), tmp_path)
    asked = Counter(s for r in trace.requests for m in r.messages for s in _documents(m.segments))
    questions = sum(asked.values())
    assert questions == pytest.approx(800 * (1 - shape.one_shot_share), rel=0.1)
    expected = doc_qa.zipf_shares(40, zipf)[0]
    spread = 4 * math.sqrt(expected * (1 - expected) / questions)
    assert asked["doc-0"] / questions == pytest.approx(expected, abs=spread)
    assert asked.most_common(1)[0][0] == "doc-0"


@pytest.mark.parametrize("name", [n for n in CATALOG if n.startswith("doc-qa")])
def test_doc_qa_documents_fit_in_the_fleets_kv_or_not(name: str, tmp_path: Path) -> None:
    trace = _trace_of(CATALOG[name].lines(1, 100), tmp_path)
    fleet_kv = 4 * 100_000
    total = trace.meta["document_tokens_total"]
    assert total < fleet_kv if name.endswith("-fits") else total > fleet_kv
    documents = _documents(trace.texts)
    assert documents
    assert all(5_000 <= len(trace.texts[s]) / 4 <= 10_000 for s in documents)


def test_unique_prompts_share_nothing_but_the_system_line(tmp_path: Path) -> None:
    trace = _trace_of(unique.lines(unique.UniqueShape(requests=300)), tmp_path)
    prompts = sorted("".join(trace.message_text(m) for m in r.messages) for r in trace.requests)
    assert len(set(prompts)) == 300
    # Sorted, the longest prefix any two share is one that neighbours share.
    shared = max(_shared_prefix_chars(a, b) for a, b in itertools.pairwise(prompts))
    # The system line, then "Ticket " and a few of the random ticket's hex digits at most.
    assert shared <= len(unique.SYSTEM_LINE) + len("Ticket ") + 8
    sizes = [_prompt_bytes(trace, r) / 4 for r in trace.requests]
    assert min(sizes) >= 500 and max(sizes) <= 6_100


def test_mix_holds_every_family_in_its_share(tmp_path: Path) -> None:
    trace = _trace_of(mix.lines(mix.MixShape(requests=400)), tmp_path)
    prefix_family = {prefix: family for family, prefix in mix.PREFIXES.items()}
    families = Counter(prefix_family[r.id[:2]] for r in trace.requests)
    for family, share in mix.MixShape().shares:
        assert families[family] / 400 == pytest.approx(share, abs=0.02)
    due = trace.nominal_start_s()
    first = {
        family: min(due[r.id] for r in trace.requests if r.id[:2] == prefix)
        for family, prefix in mix.PREFIXES.items()
    }
    # Merged by time, not one family after another: they all start early on.
    assert max(first.values()) < 0.1 * trace.nominal_span_s()


@pytest.mark.parametrize(
    ("name", "requests", "low", "high"),
    [("unique", 200, 0.0, 0.2), ("doc-qa-z1.2-fits", 400, 0.8, 1.0)],
)
def test_oracle_hit_ratio_is_in_the_cells_range(
    name: str, requests: int, low: float, high: float, tmp_path: Path
) -> None:
    trace = _trace_of(CATALOG[name].lines(1, requests), tmp_path)
    assert low <= oracle_hit_ratio(trace).hit_ratio <= high


def test_load_estimate_charges_every_unique_prompt_token_to_prefill(tmp_path: Path) -> None:
    trace = _trace_of(CATALOG["unique"].lines(1, 100), tmp_path)
    found = load_estimate.estimate(trace, response_s=15.0)
    prompt_tokens = oracle_hit_ratio(trace).prompt_tokens
    assert found.paced_span_s == found.nominal_span_s  # no follow-ups to wait for
    assert found.prefill_share == pytest.approx(prompt_tokens / 4_000 / (4 * found.paced_span_s))
    output_tokens = sum(r.max_tokens for r in trace.requests)
    assert found.decode_share == pytest.approx(output_tokens * 0.0005 / (4 * found.paced_span_s))
    assert found.tpot_ms == pytest.approx(15 / (1 - found.busy))


# The burst workload (bench/workloads/burst.py): not a matrix cell, a flow-control test.


def test_burst_is_deterministic_per_seed_with_unique_prompts(tmp_path: Path) -> None:
    shape = burst.BurstShape(before_s=10, burst_s=10, after_s=10)
    first = list(burst.lines(shape))
    assert first == list(burst.lines(shape))
    assert first != list(burst.lines(replace(shape, seed=2)))
    trace = _trace_of(iter(first), tmp_path)
    prompts = {trace.message_text(r.messages[1]) for r in trace.requests}
    assert len(prompts) == len(trace.requests) == trace.meta["requests"] > 100
    assert all(500 <= _prompt_bytes(trace, r) / 4 <= 6_100 for r in trace.requests)
    assert all(30 <= r.max_tokens <= 300 for r in trace.requests)


def test_burst_cli_sends_each_phase_at_its_rate_and_records_the_burst(tmp_path: Path) -> None:
    out = tmp_path / "burst.jsonl"
    rates = ["--base-rate", "5", "--burst-rate", "15"]
    phases = ["--before-s", "20", "--burst-s", "20", "--after-s", "30"]
    assert burst.main(["--out", str(out), "--seed", "3", *rates, *phases]) == 0
    trace = load_trace(out)
    assert trace.burst_s == (20.0, 40.0)
    expected_meta = {
        "name": "burst-seed3", "family": "burst", "seed": 3, "burst_start_s": 20.0,
        "burst_end_s": 40.0, "base_rate_per_s": 5.0, "burst_rate_per_s": 15.0,
    }  # fmt: skip
    assert expected_meta.items() <= trace.meta.items()
    starts = [r.start_s or 0.0 for r in trace.requests]
    assert starts == sorted(starts) and starts[0] > 0 and starts[-1] < 70
    for begin, end, rate in [(0, 20, 5), (20, 40, 15), (40, 70, 5)]:
        count = sum(1 for start in starts if begin <= start < end)
        mean = rate * (end - begin)
        assert abs(count - mean) <= 4 * math.sqrt(mean), (begin, count)  # Poisson: 4 sd


def test_burst_defaults_are_the_documented_sizing() -> None:
    shape, fleet = burst.BurstShape(), load_estimate.Fleet()
    # Text, a 25-byte ticket and the system line, 4 bytes per token.
    ticket = len(f"Ticket {0:016x}.\n")
    mean_tokens = sum(shape.prompt_tokens) / 2 + (ticket + len(unique.SYSTEM_LINE)) / 4
    capacity_per_s = fleet.engines * fleet.prefill_tokens_per_s / mean_tokens
    assert 0.55 <= shape.base_rate_per_s / capacity_per_s <= 0.7
    assert shape.burst_rate_per_s / capacity_per_s == pytest.approx(2.0, rel=0.02)
    assert (shape.before_s, shape.burst_s, shape.after_s) == (60, 60, 90)
    assert (shape.burst_start_s, shape.burst_end_s) == (60, 120)


@pytest.mark.parametrize("flag", ["--base-rate", "--burst-rate", "--before-s", "--after-s"])
def test_burst_cli_refuses_a_negative_rate_or_duration(flag: str, tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        burst.main(["--out", str(tmp_path / "b.jsonl"), flag, "-1"])
    assert not (tmp_path / "b.jsonl").exists()


def test_piecewise_poisson_starts_send_nothing_in_a_phase_of_rate_zero() -> None:
    starts = piecewise_poisson_starts(random.Random(1), [(10.0, 0.0), (10.0, 50.0), (5.0, 0.0)])
    assert starts == sorted(starts) and len(starts) > 400
    assert starts[0] >= 10.0 and starts[-1] < 20.0
