"""OpenAI's ``reasoning_effort``: reasoning first, as vLLM returns it (``reasoning_content``),
counted in completion tokens; refused when unknown; absent, answers are as they were."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam

from emulator.server import EmulatorServer
from emulator.wire.openai_request import REASONING_TOKENS
from tests.emulator.conftest import MODEL, chat_request, sse_payloads
from tests.emulator.test_chat import WEATHER_TOOL

HI: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]


def _sdk(server: EmulatorServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=server.base_url, api_key="unused", max_retries=0)


@pytest.mark.parametrize(
    ("effort", "max_tokens", "reasoning"),
    [("low", 2000, 256), ("medium", 2000, 1000), ("high", 20000, 4096), ("low", 9, 4)],
)
async def test_reasoning_comes_first_within_max_tokens(
    emulator: EmulatorServer, effort: Any, max_tokens: int, reasoning: int
) -> None:
    assert reasoning == min(REASONING_TOKENS[effort], max_tokens // 2)
    async with _sdk(emulator) as sdk:
        completion = await sdk.chat.completions.create(
            model=MODEL, messages=HI, max_completion_tokens=max_tokens, reasoning_effort=effort
        )
    message: Any = completion.choices[0].message
    assert len(message.reasoning_content.split()) == reasoning
    assert message.content and message.reasoning_content not in message.content
    usage = completion.usage
    assert usage is not None and usage.completion_tokens == max_tokens  # ignore_eos
    assert usage.completion_tokens_details is not None
    assert usage.completion_tokens_details.reasoning_tokens == reasoning


async def test_streamed_reasoning_precedes_the_content(emulator: EmulatorServer) -> None:
    async with _sdk(emulator) as sdk:
        whole = await sdk.chat.completions.create(
            model=MODEL, messages=HI, max_tokens=600, reasoning_effort="low"
        )
        stream = await sdk.chat.completions.create(
            model=MODEL,
            messages=HI,
            max_tokens=600,
            reasoning_effort="low",
            stream=True,
            stream_options={"include_usage": True},
        )
        kinds: list[str] = []
        reasoning, content, usage = "", "", None
        async for chunk in stream:
            usage = chunk.usage or usage
            for choice in chunk.choices:
                delta: Any = choice.delta
                if getattr(delta, "reasoning_content", None):
                    kinds.append("reasoning")
                    reasoning += delta.reasoning_content
                if delta.content:
                    kinds.append("content")
                    content += delta.content
    assert kinds == ["reasoning"] * 256 + ["content"] * 344
    message: Any = whole.choices[0].message
    assert (reasoning, content) == (message.reasoning_content, message.content)
    assert usage is not None and usage.completion_tokens == 600
    assert usage.completion_tokens_details is not None
    assert usage.completion_tokens_details.reasoning_tokens == 256


async def test_a_tool_call_after_reasoning(emulator: EmulatorServer) -> None:
    tool: ChatCompletionToolParam = WEATHER_TOOL  # type: ignore[assignment]
    async with _sdk(emulator) as sdk:
        whole = await sdk.chat.completions.create(
            model=MODEL, messages=HI, tools=[tool], reasoning_effort="low", max_tokens=1000
        )
        stream = await sdk.chat.completions.create(
            model=MODEL,
            messages=HI,
            tools=[tool],
            reasoning_effort="low",
            max_tokens=1000,
            stream=True,
        )
        deltas: list[Any] = [chunk.choices[0].delta async for chunk in stream if chunk.choices]
    message: Any = whole.choices[0].message
    assert message.tool_calls and len(message.reasoning_content.split()) == 256
    assert whole.choices[0].finish_reason == "tool_calls"
    assert deltas[0].role == "assistant" and not deltas[0].tool_calls
    named = [index for index, delta in enumerate(deltas) if delta.tool_calls]
    reasoned = [
        index for index, delta in enumerate(deltas) if getattr(delta, "reasoning_content", None)
    ]
    assert max(reasoned) < min(named)
    assert deltas[min(named)].tool_calls[0].function.name == "get_weather"


async def test_without_reasoning_effort_nothing_changes(client: httpx.AsyncClient) -> None:
    for effort in (None, "minimal"):
        fields = (
            {"max_tokens": 5} if effort is None else {"max_tokens": 5, "reasoning_effort": effort}
        )
        answer = (await client.post("/chat/completions", json=chat_request(**fields))).json()
        assert "reasoning_content" not in answer["choices"][0]["message"]
        assert "completion_tokens_details" not in answer["usage"]
        streamed = await client.post("/chat/completions", json=chat_request(stream=True, **fields))
        chunks = [chunk for chunk in sse_payloads(streamed.text) if chunk != "[DONE]"]
        assert not any("reasoning_content" in chunk["choices"][0]["delta"] for chunk in chunks)


@pytest.mark.parametrize("effort", ["extreme", "", 3])
async def test_an_unknown_effort_is_refused(client: httpx.AsyncClient, effort: object) -> None:
    response = await client.post("/chat/completions", json=chat_request(reasoning_effort=effort))
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == "reasoning_effort"
    if isinstance(effort, str):
        assert error["code"] == "invalid_value"
        assert error["message"] == (
            f"Invalid value: {effort!r}. Supported values are: "
            "'minimal', 'low', 'medium' or 'high'."
        )
