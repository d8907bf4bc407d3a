"""Wire compatibility with the official anthropic SDK, pointed at the emulator's origin."""

from __future__ import annotations

from typing import Any

import pytest

from emulator.server import EmulatorServer
from emulator.settings import Faults
from tests.emulator.conftest import MODEL, StartEmulator
from tests.emulator.wire.test_anthropic_format import SYSTEM, WEATHER

anthropic = pytest.importorskip(
    "anthropic", reason="the anthropic SDK is not installed (pip install -e '.[dev]')"
)

HI: list[Any] = [{"role": "user", "content": "hi"}]


def _sdk(server: EmulatorServer, api_key: str = "unused", retries: int = 0) -> Any:
    return anthropic.AsyncAnthropic(base_url=server.origin, api_key=api_key, max_retries=retries)


async def test_sdk_create_and_stream(emulator: EmulatorServer) -> None:
    async with _sdk(emulator) as sdk:
        message = await sdk.messages.create(model=MODEL, max_tokens=5, messages=HI)
        assert message.stop_reason == "max_tokens" and message.usage.output_tokens == 5
        texts: list[str] = []
        async with sdk.messages.stream(model=MODEL, max_tokens=5, messages=HI) as stream:
            async for text in stream.text_stream:
                texts.append(text)
            final = await stream.get_final_message()
    assert "".join(texts) == message.content[0].text == final.content[0].text
    assert final.usage.output_tokens == 5


async def test_sdk_tool_use_and_thinking(emulator: EmulatorServer) -> None:
    thinking: Any = {"type": "enabled", "budget_tokens": 1024}
    async with _sdk(emulator) as sdk:
        message = await sdk.messages.create(model=MODEL, max_tokens=8, messages=HI, tools=[WEATHER])
        [call] = message.content
        assert call.type == "tool_use" and call.name == "get_weather"
        assert call.input == {"city": "example", "days": 1}
        async with sdk.messages.stream(
            model=MODEL, max_tokens=2048, messages=HI, tools=[WEATHER], thinking=thinking
        ) as stream:
            final = await stream.get_final_message()
    assert [block.type for block in final.content] == ["thinking", "tool_use"]
    assert final.content[1].input == {"city": "example", "days": 1}
    assert final.stop_reason == "tool_use"


async def test_sdk_sees_cache_reads(start_emulator: StartEmulator) -> None:
    server = await start_emulator(cost_model="batched", time_scale=0.01)
    async with _sdk(server) as sdk:
        for _ in range(2):
            message = await sdk.messages.create(
                model=MODEL, max_tokens=3, system=SYSTEM, messages=HI
            )
    usage = message.usage
    assert usage.cache_read_input_tokens is not None and usage.cache_read_input_tokens > 0
    assert usage.cache_read_input_tokens > usage.input_tokens


async def test_sdk_error_types(start_emulator: StartEmulator) -> None:
    server = await start_emulator(api_key="secret", rate_limit_requests_per_minute=1)
    async with _sdk(server, api_key="wrong") as sdk:
        with pytest.raises(anthropic.AuthenticationError):
            await sdk.messages.create(model=MODEL, max_tokens=2, messages=HI)
    async with _sdk(server, api_key="secret") as sdk:
        await sdk.messages.create(model=MODEL, max_tokens=2, messages=HI)
        with pytest.raises(anthropic.RateLimitError) as limited:
            await sdk.messages.create(model=MODEL, max_tokens=2, messages=HI)
        assert limited.value.response.headers["anthropic-ratelimit-requests-remaining"] == "0"
        with pytest.raises(anthropic.NotFoundError):
            await sdk.messages.create(model="missing", max_tokens=2, messages=HI)


async def test_sdk_overloaded_and_stream_errors(start_emulator: StartEmulator) -> None:
    server = await start_emulator(faults={"fail_status": 529, "fail_count": 1})
    async with _sdk(server) as sdk:
        with pytest.raises(anthropic.InternalServerError) as overloaded:
            await sdk.messages.create(model=MODEL, max_tokens=2, messages=HI)
        assert overloaded.value.status_code == 529
        server.runtime.faults = Faults(error_event_after_chunks=3)
        with pytest.raises(anthropic.APIStatusError, match="overloaded_error"):
            async with sdk.messages.stream(model=MODEL, max_tokens=5, messages=HI) as stream:
                await stream.get_final_message()
