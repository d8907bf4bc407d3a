"""Real llama.cpp replicas: they answer health, chat (with prompt caching) and their
monitoring endpoints; `switchyard engines start` / `stop` leave no process behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.config.root import load_config
from gateway.engines.launcher import running_replicas
from gateway.engines.processes import is_replica, is_running, stop_pid
from gateway.engines.state import Replica, read_state

SYSTEM = "You are a concise assistant. Answer in one short sentence about geography."


def chat(replica: Replica, question: str) -> dict[str, Any]:
    body = {
        "model": "any",
        "max_tokens": 8,
        "temperature": 0,
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}],
    }
    response = httpx.post(replica.base_url + "/chat/completions", json=body, timeout=120)
    response.raise_for_status()
    answer: dict[str, Any] = response.json()
    return answer


def test_each_replica_is_healthy_and_answers(llama_replicas: list[Replica]) -> None:
    assert [r.name for r in llama_replicas] == ["llama-1", "llama-2"]
    assert len({r.port for r in llama_replicas}) == 2
    for replica in llama_replicas:
        health = httpx.get(replica.origin + "/health", timeout=10)
        assert (health.status_code, health.json()) == (200, {"status": "ok"})
        answer = chat(replica, "What is the capital of France?")
        assert answer["choices"][0]["message"]["content"]
        assert answer["usage"]["prompt_tokens"] > 0


def test_a_repeated_prompt_is_served_from_the_cache(llama_replicas: list[Replica]) -> None:
    replica = llama_replicas[0]
    question = "Which river flows through Vienna, Budapest and Belgrade?"
    chat(replica, question)
    again = chat(replica, question)

    usage, timings = again["usage"], again["timings"]
    cached = usage["prompt_tokens_details"]["cached_tokens"]
    assert cached > 0
    assert cached == timings["cache_n"]
    assert usage["prompt_tokens"] == timings["cache_n"] + timings["prompt_n"]


def test_the_monitoring_endpoints_are_on(llama_replicas: list[Replica]) -> None:
    replica = llama_replicas[1]
    metrics = httpx.get(replica.origin + "/metrics", timeout=10).text
    for name in ("llamacpp:prompt_tokens_total", "llamacpp:requests_processing"):
        assert name in metrics
    slots = httpx.get(replica.origin + "/slots", timeout=10).json()
    assert [(s["id"], s["n_ctx"]) for s in slots] == [(0, replica.n_ctx)]
    props = httpx.get(replica.origin + "/props", timeout=10).json()
    assert props["total_slots"] == replica.parallel
    assert props["default_generation_settings"]["n_ctx"] == replica.n_ctx


def test_replicas_stop_when_the_block_raises(llama_model: Path, tmp_path: Path) -> None:
    with (
        pytest.raises(RuntimeError, match="the body failed"),
        running_replicas(1, llama_model, ctx_size=512, cache_ram_mib=0, log_dir=tmp_path) as rs,
    ):
        pid = rs[0].pid
        assert httpx.get(rs[0].origin + "/health", timeout=10).status_code == 200
        raise RuntimeError("the body failed")
    assert not is_running(pid)


def switchyard(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "gateway.cli", "engines", *args]
    return subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=240, env=dict(os.environ)
    )


def test_cli_start_then_stop_leaves_no_process(llama_model: Path, tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    flags = ["--state-dir", str(state_dir)]
    started = switchyard(
        "start",
        "--replicas",
        "2",
        "--model",
        str(llama_model),
        "--ctx-size",
        "512",
        "--cache-ram-mib",
        "16",
        "--no-install",
        "--config-out",
        str(tmp_path / "engines.yaml"),
        *flags,
        cwd=tmp_path,
    )
    state = read_state(state_dir)
    try:
        assert started.returncode == 0, started.stderr
        assert state is not None
        pids = [r.pid for r in state.replicas]
        assert all(is_running(pid) for pid in pids)
        config = load_config(tmp_path / "engines.yaml")
        assert [b.base_url for b in config.backends] == [r.base_url for r in state.replicas]
        assert switchyard("status", *flags, cwd=tmp_path).returncode == 0

        stopped = switchyard("stop", *flags, cwd=tmp_path)

        assert stopped.returncode == 0, stopped.stderr
        assert not any(is_running(pid) for pid in pids)
        assert read_state(state_dir) is None
    finally:
        for replica in state.replicas if state else ():
            if is_replica(replica.pid, replica.port):  # only if the test failed half-way
                stop_pid(replica.pid)
