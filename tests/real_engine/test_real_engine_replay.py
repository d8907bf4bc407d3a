"""A short real-engine replay (`switchyard bench real-engines`): three interleaved
conversations through round-robin and the cache-aware profile, each on fresh llama.cpp
replicas. Asserts only what must hold whatever the machine's speed: the cache-aware profile
makes the engines evaluate fewer prompt tokens, and the engines' own counters agree with
what their responses said."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.real_engines.runner import EngineSettings, PolicyRun, RunSettings, run_policy
from bench.real_engines.summary import summarise
from bench.replay.profiles import PROFILES
from bench.replay.trace import load_trace
from bench.workloads import real_chat
from bench.workloads.builder import write_lines
from gateway.engines.launcher import ReplicaOptions

# Three conversations: an odd count, so that round-robin's alternation cannot line each one
# up with a replica of its own.
SHAPE = real_chat.RealChatShape(seed=7, conversations=3, turns=4)


@pytest.mark.timeout(600)
def test_cache_aware_evaluates_fewer_prompt_tokens_than_round_robin(
    llama_model: Path, tmp_path: Path
) -> None:
    trace = load_trace(write_lines(tmp_path / "chat.jsonl", real_chat.lines(SHAPE)))
    engines = EngineSettings(llama_model, ReplicaOptions(model_path=llama_model).model_alias)
    settings = RunSettings(
        trace=trace,
        engines=engines,
        time_scale=0.1,
        concurrency=2,
        route="default",
        request_timeout_s=300.0,
        progress=False,
        workdir=tmp_path,
    )
    rows = {}
    for name in ("round-robin", "cache-aware"):
        measured = run_policy(name, PROFILES[name], settings)
        assert isinstance(measured, PolicyRun), f"{name}: {measured}"
        rows[name] = summarise(name, measured, trace.requests)
    for name, row in rows.items():
        assert row["errors"] == 0, (name, row["error_kinds"])
        assert row["requests"] == len(trace.requests)
        assert row["requests_without_timings"] == 0
        assert row["evaluated_prompt_tokens"] == row["metrics_evaluated_prompt_tokens"], name
        assert row["evaluated_prompt_tokens"] + row["cached_tokens"] == row["prompt_tokens"]
    aware, rotating = rows["cache-aware"], rows["round-robin"]
    assert all(b["requests"] > 0 for b in rotating["backends"].values()), rotating["backends"]
    assert aware["prompt_tokens"] == rotating["prompt_tokens"]  # the same prompts
    assert aware["evaluated_prompt_tokens"] < rotating["evaluated_prompt_tokens"]
    # Turns that found their whole conversation cached where they were sent.
    assert aware["followups_with_history_cached"] > rotating["followups_with_history_cached"]
