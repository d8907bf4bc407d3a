"""The real-engine benchmark's parts that need no engine: llama-server's counters, the
measures and ratios, the report, the gateway config per policy, the concurrency cap."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from bench.real_engines.engine_counters import delta, parse_counters, summed
from bench.real_engines.report import render_report
from bench.real_engines.rounds import pool, pooled_requests, round_orders
from bench.real_engines.runner import (
    CappedTransport,
    EngineSettings,
    PolicyRun,
    RunSettings,
    gateway_config,
)
from bench.real_engines.summary import add_ratios, evaluated_tokens, summarise
from bench.replay.profiles import PROFILES
from bench.replay.schedule import ReplayRun, RequestResult
from bench.replay.trace import Trace, TraceRequest, load_trace
from gateway.config.root import parse_config
from gateway.engines.state import Replica
from tests.bench.synthetic import request, segment, write_trace
from tests.gguf_files import SMOL_LIKE, gguf

EXPOSITION = """\
# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 1200
llamacpp:prompt_tokens_cached_total 800
llamacpp:prompt_seconds_total 9.5
llamacpp:tokens_predicted_total 64
llamacpp:requests_processing 1
"""


def test_counters_are_read_and_differenced() -> None:
    before = parse_counters(EXPOSITION)
    assert before == {
        "llamacpp:prompt_tokens_total": 1200.0,
        "llamacpp:prompt_tokens_cached_total": 800.0,
        "llamacpp:prompt_seconds_total": 9.5,
        "llamacpp:tokens_predicted_total": 64.0,
    }
    after = {**before, "llamacpp:prompt_tokens_total": 1500.0}
    change = delta(before, after)
    assert change is not None and change["llamacpp:prompt_tokens_total"] == 300.0
    assert delta(None, after) is None
    both = {"a": change, "b": change}
    assert summed(both, "llamacpp:prompt_tokens_total") == 600.0
    assert summed({"a": change, "b": None}, "llamacpp:prompt_tokens_total") is None


def _result(
    request_id: str, backend: str, prompt: int, cached: int, *, timings: bool = True
) -> RequestResult:
    result = RequestResult(
        request_id, ok=True, sent_at=10.0, done_at=12.0, first_token_at=10.5,
        prompt_tokens=prompt, completion_tokens=16, cached_tokens=cached, backend=backend,
        decision_id="d1" if request_id == "r1" else None,
    )  # fmt: skip
    if timings:
        result.timings = {"prompt_n": prompt - cached, "cache_n": cached, "prompt_ms": 5.0}
    return result


def test_evaluated_tokens_come_from_timings_else_usage() -> None:
    assert evaluated_tokens(_result("a", "x", 400, 150)) == 250
    assert evaluated_tokens(_result("a", "x", 400, 100, timings=False)) == 300
    bare = RequestResult("a", ok=True, sent_at=0.0, done_at=1.0)
    assert evaluated_tokens(bare) is None


def _policy_run(metrics_tokens: float | None) -> PolicyRun:
    results = (_result("r1", "llama-1", 400, 0), _result("r2", "llama-2", 500, 400))
    run = ReplayRun(results, started_at=10.0, finished_at=12.0, time_scale=0.25)
    counters = None if metrics_tokens is None else {"llamacpp:prompt_tokens_total": metrics_tokens}
    seconds = {"llamacpp:prompt_seconds_total": 0.005}
    return PolicyRun(
        run,
        ("llama-1", "llama-2"),
        {
            "llama-1": None if counters is None else {**counters, **seconds},
            "llama-2": None if counters is None else {**counters, **seconds},
        },
        {
            "d1": {
                "chosen": "llama-1",
                "total_us": 120.0,
                "candidates": [
                    {
                        "backend": "llama-1",
                        "total": 0.9,
                        "scores": {"kv-cost": {"score": 1.0, "reason": "400 cached"}},
                        "verdicts": {"healthy-filter": {"keep": True}},
                        "dropped_by": None,
                    }
                ],
            }
        },
    )


def _requests() -> list[TraceRequest]:
    """r2 is r1's follow-up: its prompt extends r1's 400 tokens."""
    first = TraceRequest(index=0, line=1, id="r1", model="m", messages=(), max_tokens=16)
    second = TraceRequest(
        index=1, line=2, id="r2", model="m", messages=(), max_tokens=16, parent="r1", after_s=1.0
    )
    return [first, second]


def test_summary_sums_engine_tokens_in_wall_time() -> None:
    row = summarise("cache-aware", _policy_run(metrics_tokens=250), _requests())
    assert row["evaluated_prompt_tokens"] == 500 == row["metrics_evaluated_prompt_tokens"]
    assert row["cached_tokens"] == 400 and row["prompt_tokens"] == 900
    assert row["prompt_ms_sum"] == 10.0 and row["metrics_prompt_ms_sum"] == 10.0
    assert row["ttft_ms_p50"] == pytest.approx(500.0)  # wall ms, not divided by 0.25
    assert row["throughput_rps"] == pytest.approx(1.0)
    assert {n: b["requests"] for n, b in row["backends"].items()} == {"llama-1": 1, "llama-2": 1}
    assert row["backends"]["llama-2"]["evaluated_prompt_tokens"] == 100
    assert row["followups"] == row["followups_with_history_cached"] == 1
    assert row["notes"] == [] and len(row["per_request"]) == 2
    decisions = [r["decision"] for r in row["per_request"]]
    # Each request's decision where it had one, cut to what was weighed.
    assert decisions == [
        {
            "chosen": "llama-1",
            "candidates": [
                {
                    "backend": "llama-1",
                    "total": 0.9,
                    "scores": {"kv-cost": [1.0, "400 cached"]},
                    "dropped_by": None,
                }
            ],
        },
        None,
    ]


def test_summary_notes_counters_that_disagree_or_are_missing() -> None:
    disagree = summarise("x", _policy_run(metrics_tokens=260), _requests())
    assert disagree["notes"] == [
        "/metrics counted 520 evaluated prompt tokens, the responses 500 "
        "(requests that failed count only there)"
    ]
    missing = summarise("x", _policy_run(metrics_tokens=None), _requests())
    assert missing["metrics_evaluated_prompt_tokens"] is None
    assert "not cross-checked" in missing["notes"][0]


def test_ratios_are_to_round_robin_and_the_report_checks_the_targets() -> None:
    rows: list[dict[str, Any]] = [
        summarise("round-robin", _policy_run(250), _requests()),
        summarise("cache-aware", _policy_run(250), _requests()),
        {"policy": "least-load", "error": "gateway exited with 1"},
    ]
    rows[1]["evaluated_prompt_tokens"] = 200
    add_ratios(rows)
    assert rows[0]["evaluated_ratio_to_round_robin"] == 1.0
    assert rows[1]["evaluated_ratio_to_round_robin"] == 0.4
    assert rows[1]["ttft_p50_ratio_to_round_robin"] == 1.0
    text = render_report(rows, _parameters())
    assert "cache-aware vs round-robin: evaluated prompt tokens 0.40 x" in text
    assert "(target <= 0.5: met); TTFT p50 1.00 x (target <= 0.5: missed)" in text
    assert "least-load: not measured: gateway exited with 1" in text


def _parameters() -> dict[str, Any]:
    return {
        "trace_name": "real-chat-seed1", "requests": 2, "time_scale": 0.25, "concurrency": 2,
        "replicas": 2, "engine_version": "1", "model_file": "m.gguf", "ctx_size": 2048,
        "cache_ram_mib": 64, "gateway_capacity_tokens": 4960, "cpu": "cpu", "cpus": 2,
    }  # fmt: skip


def _trace(tmp_path: Path) -> Trace:
    return load_trace(
        write_trace(tmp_path / "t.jsonl", [segment("s", "hi"), request("a", ["s"], start=0)])
    )


def test_gateway_config_is_the_profile_over_llama_cpp_replicas(tmp_path: Path) -> None:
    replicas = [
        Replica(name=f"llama-{i}", port=9000 + i, pid=1, n_ctx=2048, log_path=tmp_path / "log")
        for i in (1, 2)
    ]
    model = gguf(tmp_path / "m.gguf", SMOL_LIKE)  # 23,040 KV bytes per token
    engines = EngineSettings(model, "m", cache_ram_mib=64)
    settings = RunSettings(_trace(tmp_path), engines, 0.25, 2, "default", 60.0, False, tmp_path)
    config = gateway_config(PROFILES["cache-aware"], replicas, settings, port=8123)
    parsed = parse_config(config, source="test")
    assert [b.kind for b in parsed.backends] == ["llama-cpp", "llama-cpp"]
    assert [b.cache.capacity_tokens for b in parsed.backends] == [2048 + 2912] * 2
    assert all(b.probes is not None and not b.probes.enabled for b in parsed.backends)
    assert config["routes"][0]["backends"] == ["llama-1", "llama-2"]
    assert config["profiles"][0]["plugins"] == PROFILES["cache-aware"].plugins
    slots_only = EngineSettings(model, "m", slots_only=True)
    assert slots_only.capacity_tokens == 2048


async def test_capped_transport_keeps_at_most_n_in_flight() -> None:
    in_flight, most = 0, 0

    class Slow:
        async def send(self, req: TraceRequest) -> RequestResult:
            nonlocal in_flight, most
            in_flight += 1
            most = max(most, in_flight)
            await asyncio.sleep(0)  # the others start meanwhile, as far as the cap lets them
            in_flight -= 1
            return RequestResult(req.id, ok=True, sent_at=0.0, done_at=0.0)

    capped = CappedTransport(Slow(), 2)
    fake = TraceRequest(index=0, line=1, id="a", model="m", messages=(), max_tokens=1)
    await asyncio.gather(*(capped.send(fake) for _ in range(7)))
    assert most == 2


def test_rounds_alternate_the_order_of_the_policies() -> None:
    assert round_orders(["a", "b", "c"], 3) == [["a", "b", "c"], ["c", "b", "a"], ["a", "b", "c"]]


def test_pooled_rounds_read_as_one_longer_replay() -> None:
    first = _policy_run(100.0)
    later = _policy_run(50.0)
    shifted = dataclasses.replace(later.run, started_at=100.0, finished_at=102.0)
    moved = [dataclasses.replace(r, sent_at=100.0, done_at=102.0, first_token_at=100.5)
             for r in shifted.results]  # fmt: skip
    second = dataclasses.replace(later, run=dataclasses.replace(shifted, results=tuple(moved)))

    pooled = pool([first, second])

    ids = [r.request_id for r in pooled.run.results]
    assert ids == ["r1", "r2", "r1@1", "r2@1"]
    # The second round starts where the first ended (its requests took 2 s).
    assert [r.sent_at for r in pooled.run.results] == [10.0, 10.0, 12.0, 12.0]
    assert pooled.run.results[2].first_token_at == 12.5
    llama_1 = pooled.counters["llama-1"]
    assert llama_1 is not None and llama_1["llamacpp:prompt_tokens_total"] == 150.0
    requests = pooled_requests(_requests(), 2)
    assert [(r.id, r.parent) for r in requests] == [
        ("r1", None), ("r2", "r1"), ("r1@1", None), ("r2@1", "r1@1"),
    ]  # fmt: skip
    row = summarise("cache-aware", pooled, requests)
    assert row["requests"] == 4
    assert (row["followups"], row["followups_with_history_cached"]) == (2, 2)


def test_a_round_without_metrics_leaves_the_pooled_counters_unknown() -> None:
    pooled = pool([_policy_run(100.0), _policy_run(None)])

    assert pooled.counters == {"llama-1": None, "llama-2": None}
