"""The real `anthropic` and `gemini` adapters against the emulator's own Anthropic and
Gemini formats on loopback: whole answers, streams, tool calls, cached-token usage,
health probes and the errors the emulator injects, end to end through both translations.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import orjson
import pytest

from emulator.server import EmulatorServer
from emulator.settings import EmulatorSettings, Faults
from providers.base import Deadlines, Provider, UpstreamRequest
from providers.errors import UpstreamError, UpstreamStatusError
from providers.registry import open_provider
from providers.settings import BackendKind, ProviderSettings

MODEL = "emulated-model"
KEY = "emulator-key"
DEADLINES = Deadlines(connect_s=2.0, first_byte_s=5.0, between_chunks_s=5.0)
SYSTEM = "Answer in the style of a railway timetable. " * 40
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
# Each adapter's base URL, under the emulator's origin.
API_ROOTS: dict[BackendKind, str] = {"anthropic": "/v1", "gemini": "/v1beta"}
KINDS = pytest.mark.parametrize("kind", list(API_ROOTS))

Open = Callable[..., Awaitable[tuple[EmulatorServer, Provider]]]


@pytest.fixture
async def open_adapter() -> AsyncIterator[Open]:
    """An emulator (key required; answers exactly max_tokens long unless told otherwise)
    and an adapter of `kind` opened on it; both closed after."""
    opened: list[tuple[EmulatorServer, Provider]] = []

    async def start(
        kind: BackendKind, key: str = KEY, **options: Any
    ) -> tuple[EmulatorServer, Provider]:
        options = {"token_delay_ms": 0, "ignore_eos": True, **options}
        settings = EmulatorSettings(api_key=KEY, **options)
        engine = EmulatorServer(settings)
        await engine.start()
        backend = ProviderSettings(
            name=f"{kind}-emulated",
            kind=kind,
            base_url=engine.origin + API_ROOTS[kind],
            api_key=key,
            models=(MODEL,),
        )
        try:
            provider = await open_provider(backend)
        except BaseException:
            await engine.stop()
            raise
        opened.append((engine, provider))
        return engine, provider

    yield start
    for engine, provider in opened:
        await provider.close()
        await engine.stop()


def chat(*, stream: bool = False, **fields: Any) -> UpstreamRequest:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hello"}], "max_tokens": 6}
    body.update(fields)
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    return UpstreamRequest("/chat/completions", orjson.dumps(body), stream=stream)


async def streamed(provider: Provider, request: UpstreamRequest) -> list[Any]:
    """The OpenAI chunks of a stream, `[DONE]` as a string."""
    stream = await provider.open_stream(request, DEADLINES)
    try:
        raw = stream.first_chunk + b"".join([chunk async for chunk in stream.rest()])
    finally:
        await stream.aclose()
    payloads = [
        line.removeprefix(b"data: ") for line in raw.split(b"\n") if line.startswith(b"data: ")
    ]
    return [p.decode() if p == b"[DONE]" else orjson.loads(p) for p in payloads]


@KINDS
async def test_a_whole_answer_and_its_health(open_adapter: Open, kind: BackendKind) -> None:
    engine, provider = await open_adapter(kind)
    response = await provider.send(chat(), DEADLINES)
    assert response.status == 200
    completion = orjson.loads(response.body)
    [choice] = completion["choices"]
    assert choice["finish_reason"] == "length"
    assert len(choice["message"]["content"].split()) == 6
    assert completion["usage"]["completion_tokens"] == 6
    assert engine.runtime.stats.completed == 1
    health = await provider.health(timeout_s=2.0)
    assert health.healthy, health.reason
    # The same words as the engine's OpenAI door gives for the same prompt.
    bearer = {"authorization": f"Bearer {KEY}"}
    async with httpx.AsyncClient(base_url=engine.base_url, headers=bearer) as http:
        direct = (await http.post("/chat/completions", content=chat().body)).json()
    assert choice["message"]["content"] == direct["choices"][0]["message"]["content"]


@KINDS
async def test_a_streamed_tool_call(open_adapter: Open, kind: BackendKind) -> None:
    _, provider = await open_adapter(kind)
    chunks = await streamed(provider, chat(stream=True, tools=[TOOL]))
    assert chunks[-1] == "[DONE]"
    deltas = [choice["delta"] for chunk in chunks[:-1] for choice in chunk["choices"]]
    calls = [call for delta in deltas for call in delta.get("tool_calls", [])]
    assert calls[0]["function"]["name"] == "get_weather"
    arguments = "".join(call["function"].get("arguments", "") for call in calls)
    assert orjson.loads(arguments) == {"city": "example"}
    finishes = [c["finish_reason"] for chunk in chunks[:-1] for c in chunk["choices"]]
    assert finishes[-1] == "tool_calls"
    assert chunks[-2]["usage"]["completion_tokens"] == 6


@KINDS
async def test_a_repeated_prompt_reports_cached_tokens(
    open_adapter: Open, kind: BackendKind
) -> None:
    _, provider = await open_adapter(kind, cost_model="batched", time_scale=0.01)
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hello"}]
    usages = []
    for _ in range(2):
        response = await provider.send(chat(messages=messages), DEADLINES)
        usages.append(orjson.loads(response.body)["usage"])
    first, second = usages
    assert first["prompt_tokens_details"]["cached_tokens"] == 0
    assert second["prompt_tokens"] == first["prompt_tokens"]
    assert second["prompt_tokens_details"]["cached_tokens"] > first["prompt_tokens"] // 2
    chunks = await streamed(provider, chat(stream=True, messages=messages))
    assert chunks[-2]["usage"]["prompt_tokens_details"]["cached_tokens"] > 0


@KINDS
async def test_a_wrong_key_is_the_gateways_credentials_refused(
    open_adapter: Open, kind: BackendKind
) -> None:
    _, provider = await open_adapter(kind, key="wrong")
    with pytest.raises(UpstreamStatusError) as refused:
        await provider.send(chat(), DEADLINES)
    # The key is the gateway's, not the client's: a bad gateway, whatever the upstream said.
    assert refused.value.status == 502
    assert "credentials" in str(refused.value)
    assert not (await provider.health(timeout_s=2.0)).healthy


@KINDS
async def test_rate_limits_are_retryable_with_their_wait(
    open_adapter: Open, kind: BackendKind
) -> None:
    _, provider = await open_adapter(kind, rate_limit_requests_per_minute=1)
    await provider.send(chat(), DEADLINES)
    with pytest.raises(UpstreamStatusError) as limited:
        await provider.send(chat(), DEADLINES)
    assert limited.value.upstream_status == 429 and limited.value.retryable
    assert limited.value.retry_after_s is not None and 0 < limited.value.retry_after_s <= 60


@KINDS
@pytest.mark.parametrize("status", [503, 529])
async def test_injected_failures_are_retryable(
    open_adapter: Open, kind: BackendKind, status: int
) -> None:
    engine, provider = await open_adapter(kind)
    engine.runtime.faults = Faults(fail_status=status, fail_count=1)
    with pytest.raises(UpstreamStatusError) as failed:
        await provider.send(chat(), DEADLINES)
    assert failed.value.upstream_status == status and failed.value.retryable
    assert (await provider.send(chat(), DEADLINES)).status == 200


@KINDS
async def test_an_error_event_mid_stream_breaks_the_stream(
    open_adapter: Open, kind: BackendKind
) -> None:
    engine, provider = await open_adapter(kind)
    engine.runtime.faults = Faults(error_event_after_chunks=4)
    with pytest.raises(UpstreamError) as broken:
        await streamed(provider, chat(stream=True))
    assert broken.value.retryable
