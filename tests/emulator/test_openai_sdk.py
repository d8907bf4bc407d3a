"""Wire compatibility with the official openai SDK."""

from __future__ import annotations

import math
from typing import Any, cast

import openai
import orjson
import pytest
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam

from emulator.server import EmulatorServer
from tests.emulator.conftest import MODEL, StartEmulator
from tests.emulator.test_chat import WEATHER_TOOL

HI: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]


def _sdk(server: EmulatorServer, max_retries: int = 0) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=server.base_url, api_key="unused", max_retries=max_retries)


async def test_sdk_chat_and_stream(emulator: EmulatorServer) -> None:
    async with _sdk(emulator) as sdk:
        completion = await sdk.chat.completions.create(model=MODEL, messages=HI, max_tokens=5)
        assert completion.usage is not None and completion.usage.completion_tokens == 5
        assert completion.choices[0].finish_reason == "length"

        stream = await sdk.chat.completions.create(
            model=MODEL,
            messages=HI,
            max_tokens=5,
            stream=True,
            stream_options={"include_usage": True},
        )
        texts: list[str] = []
        usage_seen = None
        async for chunk in stream:
            texts.extend(choice.delta.content or "" for choice in chunk.choices)
            usage_seen = chunk.usage or usage_seen
        assert "".join(texts) == completion.choices[0].message.content
        assert usage_seen is not None and usage_seen.completion_tokens == 5


async def test_sdk_tool_call_and_embeddings(emulator: EmulatorServer) -> None:
    async with _sdk(emulator) as sdk:
        tool = cast(ChatCompletionToolParam, WEATHER_TOOL)
        completion = await sdk.chat.completions.create(model=MODEL, messages=HI, tools=[tool])
        calls = completion.choices[0].message.tool_calls
        assert calls is not None
        function: Any = calls[0].function  # type: ignore[union-attr]
        assert function.name == "get_weather"
        assert "city" in orjson.loads(function.arguments)
        # The SDK asks for base64 by default and decodes it itself.
        embedding = await sdk.embeddings.create(model=MODEL, input=["a", "b"])
        vector = embedding.data[0].embedding
        assert len(vector) == 64 and math.isclose(math.hypot(*vector), 1.0, rel_tol=1e-5)


async def test_sdk_honours_retry_after(start_emulator: StartEmulator) -> None:
    faults = {"fail_status": 503, "fail_count": 1, "retry_after_s": 0.05}
    server = await start_emulator(faults=faults)
    async with _sdk(server, max_retries=1) as sdk:
        completion = await sdk.completions.create(model=MODEL, prompt="x", max_tokens=2)
        assert completion.usage is not None and completion.usage.completion_tokens == 2
    with pytest.raises(openai.NotFoundError):
        async with _sdk(server) as sdk:
            await sdk.embeddings.create(model="missing", input="x")


async def test_sdk_error_types_for_keys_and_rate_limits(start_emulator: StartEmulator) -> None:
    server = await start_emulator(api_key="secret", rate_limit_requests_per_minute=1)
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="wrong", max_retries=0) as sdk:
        with pytest.raises(openai.AuthenticationError):
            await sdk.chat.completions.create(model=MODEL, messages=HI, max_tokens=2)
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="secret", max_retries=0) as sdk:
        raw = await sdk.chat.completions.with_raw_response.create(
            model=MODEL, messages=HI, max_tokens=2
        )
        assert raw.headers["x-ratelimit-remaining-requests"] == "0"
        with pytest.raises(openai.RateLimitError) as limited:
            await sdk.chat.completions.create(model=MODEL, messages=HI, max_tokens=2)
    assert float(limited.value.response.headers["retry-after"]) > 0
