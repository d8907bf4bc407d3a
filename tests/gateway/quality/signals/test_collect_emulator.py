"""The collector on real streams from the emulated engine over loopback HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from gateway.quality.config import SignalParams
from gateway.quality.signals.collect import (
    CollectedResponse,
    StreamCollector,
    collect_body,
    observation_fields,
)
from gateway.quality.signals.observation import Observation
from gateway.quality.signals.rules import evaluate
from tests.conftest import StartEmulator

MODEL = "emulated-model"
WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city", "days"],
        },
    },
}


async def streamed_and_whole(
    http: httpx.AsyncClient, path: str, body: dict[str, Any]
) -> tuple[CollectedResponse, CollectedResponse]:
    """The same request streamed (fed chunk by chunk as relayed) and not streamed."""
    collector = StreamCollector()
    streamed = {**body, "stream": True, "stream_options": {"include_usage": True}}
    async with http.stream("POST", path, json=streamed) as response:
        assert response.status_code == 200
        async for chunk in response.aiter_raw():
            collector.feed(chunk)
    whole = await http.post(path, json={**body, "stream": False})
    assert whole.status_code == 200
    return collector.finish(), collect_body(whole.content)


@pytest.fixture
async def http(start_emulator: StartEmulator) -> AsyncIterator[httpx.AsyncClient]:
    server = await start_emulator()
    async with httpx.AsyncClient(base_url=server.base_url, timeout=10) as client:
        yield client


@pytest.mark.parametrize("path", ["/chat/completions", "/completions"])
async def test_text_stream_matches_the_body(http: httpx.AsyncClient, path: str) -> None:
    body: dict[str, Any] = {"model": MODEL, "seed": 3, "max_tokens": 40}
    if path == "/completions":
        body["prompt"] = "Tell me about trains."
    else:
        body["messages"] = [{"role": "user", "content": "Tell me about trains."}]
    streamed, whole = await streamed_and_whole(http, path, body)
    assert streamed.content and streamed.content == whole.content
    assert streamed.finish_reason == whole.finish_reason == "length"
    assert streamed.completion_tokens == whole.completion_tokens == 40
    assert streamed.prompt_tokens == whole.prompt_tokens
    assert streamed.done and streamed.malformed is None and streamed.error is None


@pytest.mark.parametrize(
    "tool_choice",
    ["required", {"type": "function", "function": {"name": "get_weather"}}],
    ids=["required", "named"],
)
async def test_forced_tool_call_stream(http: httpx.AsyncClient, tool_choice: object) -> None:
    body = {
        "model": MODEL,
        "seed": 7,
        "max_tokens": 16,
        "messages": [{"role": "user", "content": "Weather in Oslo?"}],
        "tools": [WEATHER],
        "tool_choice": tool_choice,
    }
    streamed, whole = await streamed_and_whole(http, "/chat/completions", body)
    assert streamed.tool_calls == whole.tool_calls
    (call,) = streamed.tool_calls
    assert call.name == "get_weather"
    assert set(orjson.loads(call.arguments)) >= {"city", "days"}
    assert streamed.done and streamed.completion_tokens == whole.completion_tokens


async def test_healthy_engine_earns_only_good_events(http: httpx.AsyncClient) -> None:
    """Emulator stream -> collector -> Observation -> signals: a healthy answer, no alarms."""
    body = {
        "model": MODEL,
        "seed": 11,
        "messages": [{"role": "user", "content": "Weather in Oslo?"}],
        "tools": [WEATHER],
        "tool_choice": "required",
        "max_tokens": 200,
    }
    streamed, _ = await streamed_and_whole(http, "/chat/completions", body)
    observation = Observation(
        backend="emulator",
        model=MODEL,
        at=0.0,
        outcome="ok",
        tools={"get_weather": WEATHER["function"]["parameters"]},
        tool_choice_required=True,
        max_tokens=200,
        prompt_sample="Weather in Oslo?",
        **observation_fields(streamed),
    )
    events = evaluate(observation, SignalParams())
    assert [event for event in events if event.bad] == []
    assert {event.signal for event in events} >= {
        "error",
        "tool_call_json",
        "tool_call_name",
        "tool_call_schema",
        "finish_reason",
        "empty_output",
    }
