"""The replay's engines answer exactly a trace's `max_tokens` (FORMAT.md), whatever the
emulator's end-of-sequence draw would do: the replay's figures do not move with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from bench.replay.fleet import EngineOptions, Fleet, emulator_flags, plan_fleet
from bench.replay.hybrid import plan_hybrid
from emulator.server import EmulatorServer
from emulator.settings import EmulatorSettings

MODEL = "emulated-model"
TOOL = {
    "type": "function",
    "function": {"name": "read_file", "parameters": {"type": "object"}},
}


def _chat(max_tokens: int, **fields: Any) -> dict[str, Any]:
    messages = [{"role": "user", "content": f"Summarise file {max_tokens}."}]
    return {"model": MODEL, "messages": messages, "max_tokens": max_tokens, **fields}


def _streamed_tokens(http: httpx.Client, body: dict[str, Any]) -> tuple[int, str | None]:
    stream = {**body, "stream": True, "stream_options": {"include_usage": True}}
    lines = http.post("/v1/chat/completions", json=stream).text.split("\n")
    payloads = [orjson.loads(line[6:]) for line in lines if line.startswith("data: {")]
    finishes = [c["finish_reason"] for p in payloads for c in p["choices"] if c["finish_reason"]]
    return payloads[-1]["usage"]["completion_tokens"], finishes[-1] if finishes else None


def test_the_replay_fleet_answers_exactly_max_tokens(tmp_path: Path) -> None:
    plan = plan_fleet(EngineOptions(count=2, time_scale=0.01), emulator_flags())
    assert all("--ignore-eos" in argv for argv in plan.argvs)
    fleet = Fleet(plan, tmp_path)
    try:
        fleet.start()
        for url in fleet.urls:
            with httpx.Client(base_url=url, trust_env=False, timeout=30) as http:
                for max_tokens in (1, 37, 700):
                    answer = http.post("/v1/chat/completions", json=_chat(max_tokens)).json()
                    [choice] = answer["choices"]
                    assert choice["finish_reason"] == "length"
                    assert answer["usage"]["completion_tokens"] == max_tokens
                    assert _streamed_tokens(http, _chat(max_tokens)) == (max_tokens, "length")
                called = http.post("/v1/chat/completions", json=_chat(90, tools=[TOOL])).json()
                assert called["choices"][0]["finish_reason"] == "tool_calls"
                assert called["usage"]["completion_tokens"] == 90
    finally:
        fleet.stop()


@pytest.mark.parametrize("engine", range(4), ids=["local-0", "local-1", "openai", "anthropic"])
async def test_every_hybrid_engine_answers_exactly_max_tokens(engine: int) -> None:
    plan = plan_hybrid(EngineOptions(count=4, time_scale=0.01, models=(MODEL,)))
    argv = plan.fleet.argvs[engine]
    settings = EmulatorSettings.model_validate_json(argv[argv.index("--settings-json") + 1])
    assert settings.ignore_eos
    instant = settings.model_copy(update={"time_scale": 0.0})
    async with (
        EmulatorServer(instant, port=0) as server,
        httpx.AsyncClient(base_url=server.origin, timeout=30) as http,
    ):
        answer = (await http.post("/v1/chat/completions", json=_chat(700))).json()
        assert answer["usage"]["completion_tokens"] == 700
        message = {"model": MODEL, "max_tokens": 700, "messages": _chat(0)["messages"]}
        headers = {"anthropic-version": "2023-06-01"}
        reply = (await http.post("/v1/messages", json=message, headers=headers)).json()
        assert (reply["stop_reason"], reply["usage"]["output_tokens"]) == ("max_tokens", 700)
