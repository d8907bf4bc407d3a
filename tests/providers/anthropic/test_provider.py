"""The real adapter against a fake Anthropic API on loopback: send, stream, health, errors."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from providers.anthropic.provider import AnthropicProvider
from providers.base import Deadlines, UpstreamRequest
from providers.errors import (
    UpstreamConnectError,
    UpstreamCredentialsRefused,
    UpstreamProtocolError,
    UpstreamStatusError,
    UpstreamTimeout,
)
from providers.rate_limits import RateLimitSignal
from providers.registry import open_provider
from providers.settings import ProviderSettings
from providers.usage import UsageTap, usage_from_body
from tests.providers.anthropic.fake_anthropic import FakeAnthropic, split_each, sse
from tests.providers.anthropic.recorded import OVERLOADED, TEXT_STREAM, TOOL_STREAM
from tests.providers.fake_upstream import Pause, Reply, running

KEY = "sk-ant-test-0123456789"
DEADLINES = Deadlines(connect_s=2.0, first_byte_s=5.0, between_chunks_s=5.0)
MESSAGE = {
    "id": "msg_abc",
    "type": "message",
    "role": "assistant",
    "model": "claude-upstream-name",
    "content": [{"type": "text", "text": "Bonjour."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 12, "output_tokens": 3, "cache_read_input_tokens": 30},
}


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with running(FakeAnthropic()) as server:
        yield server


@pytest.fixture
async def provider(fake: FakeAnthropic) -> AsyncIterator[AnthropicProvider]:
    settings = ProviderSettings(
        name="claude-a", kind="anthropic", base_url=fake.base_url + "/", api_key=KEY
    )
    opened = await open_provider(settings)
    assert isinstance(opened, AnthropicProvider)
    try:
        yield opened
    finally:
        await opened.close()


def chat(stream: bool = False, **fields: Any) -> UpstreamRequest:
    body = {
        "model": "claude-backend-id",
        "messages": [
            {"role": "system", "content": "Answer in French."},
            {"role": "user", "content": "Hello"},
        ],
        "stream": stream,
        **fields,
    }
    return UpstreamRequest("/chat/completions", orjson.dumps(body), stream=stream)


async def test_send_translates_both_ways_with_anthropics_headers(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    fake.reply(Reply(body=orjson.dumps(MESSAGE)))
    response = await provider.send(chat(max_tokens=64), DEADLINES)

    (received,) = fake.seen
    assert (received.method, received.path) == ("POST", "/v1/messages")
    assert received.headers["x-api-key"] == KEY
    assert received.headers["anthropic-version"] == "2023-06-01"
    assert received.headers["content-type"] == "application/json"
    assert "authorization" not in received.headers
    assert received.json() == {
        "model": "claude-backend-id",
        "system": [{"type": "text", "text": "Answer in French."}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}],
        "max_tokens": 64,
        "stream": False,
    }

    assert (response.status, response.content_type) == (200, "application/json")
    completion = orjson.loads(response.body)
    assert completion["object"] == "chat.completion"
    assert completion["model"] == "claude-upstream-name"
    assert completion["choices"][0]["message"]["content"] == "Bonjour."
    assert completion["choices"][0]["finish_reason"] == "stop"
    usage = usage_from_body(response.body)
    assert usage is not None
    assert (usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens) == (42, 30, 3)


async def test_a_stream_is_relayed_as_openai_chunks(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    pieces: list[bytes | Pause] = []
    for half in split_each(sse(*TEXT_STREAM)):
        pieces += [half, Pause(0.005)]
    fake.reply(Reply(body=pieces))
    request = chat(stream=True, stream_options={"include_usage": True})

    stream = await provider.open_stream(request, DEADLINES)
    rest = [chunk async for chunk in stream.rest()]
    await stream.aclose()

    assert fake.seen[0].json()["stream"] is True
    assert stream.content_type.startswith("text/event-stream")
    assert orjson.loads(stream.first_chunk.removeprefix(b"data: "))["choices"][0]["delta"] == {
        "role": "assistant",
        "content": "",
    }
    body = stream.first_chunk + b"".join(rest)
    assert body.endswith(b"data: [DONE]\n\n")
    events = [orjson.loads(e[6:]) for e in body.split(b"\n\n") if e and e != b"data: [DONE]"]
    text = "".join(e["choices"][0]["delta"].get("content", "") for e in events if e["choices"])
    assert text == "Hello, world"
    tap = UsageTap()
    for chunk in [stream.first_chunk, *rest]:
        tap.feed(chunk)
    usage = tap.usage()
    assert usage is not None
    assert (usage.prompt_tokens, usage.cached_tokens, usage.cache_write_tokens) == (135, 100, 10)


async def test_translated_answers_keep_the_rate_limit_headers(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    headers = {
        "anthropic-ratelimit-requests-remaining": "49",
        "anthropic-ratelimit-tokens-remaining": "3000",
        "anthropic-ratelimit-input-tokens-remaining": "2000",
    }
    fake.reply(Reply(body=orjson.dumps(MESSAGE), headers=headers))
    fake.reply(Reply(body=sse(*TEXT_STREAM), headers=headers))
    expected = RateLimitSignal(
        remaining_requests=49, remaining_tokens=3000, remaining_input_tokens=2000
    )
    assert (await provider.send(chat(), DEADLINES)).rate_limit == expected
    stream = await provider.open_stream(chat(stream=True), DEADLINES)
    await stream.aclose()
    assert stream.rate_limit == expected


async def test_streamed_tool_calls(fake: FakeAnthropic, provider: AnthropicProvider) -> None:
    fake.reply(Reply(body=sse(*TOOL_STREAM)))
    stream = await provider.open_stream(chat(stream=True), DEADLINES)
    body = stream.first_chunk + b"".join([chunk async for chunk in stream.rest()])
    await stream.aclose()
    events = [orjson.loads(e[6:]) for e in body.split(b"\n\n") if e and e != b"data: [DONE]"]
    calls: dict[int, str] = {}
    for event in events:
        for call in event["choices"][0]["delta"].get("tool_calls", []):
            calls[call["index"]] = calls.get(call["index"], "") + call["function"]["arguments"]
    assert {i: orjson.loads(args) for i, args in calls.items()} == {0: {"city": "Paris"}, 1: {}}
    assert events[-1]["choices"][0]["finish_reason"] == "tool_calls"


async def test_an_error_event_after_the_200_breaks_the_stream(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    fake.reply(Reply(body=[*sse(*TEXT_STREAM[:4]), Pause(0.02), *sse(OVERLOADED)]))
    stream = await provider.open_stream(chat(stream=True), DEADLINES)
    relayed: list[bytes] = []
    with pytest.raises(UpstreamStatusError) as caught:
        async for chunk in stream.rest():
            relayed.append(chunk)
    await stream.aclose()
    assert b"Hello" in stream.first_chunk + b"".join(relayed)
    assert caught.value.upstream_status == 529
    assert caught.value.retryable


async def test_an_error_event_before_any_content_fails_the_attempt(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    """Nothing was relayed yet, so the dispatcher may still try another candidate."""
    fake.reply(Reply(body=sse(OVERLOADED)))
    with pytest.raises(UpstreamStatusError) as caught:
        await provider.open_stream(chat(stream=True), DEADLINES)
    assert (caught.value.upstream_status, caught.value.retryable) == (529, True)


async def test_a_stream_cut_before_message_stop_is_a_protocol_error(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    fake.reply(Reply(body=sse(*TEXT_STREAM[:4])))
    stream = await provider.open_stream(chat(stream=True), DEADLINES)
    with pytest.raises(UpstreamProtocolError, match="before message_stop"):
        _ = [chunk async for chunk in stream.rest()]
    await stream.aclose()


async def test_a_stall_mid_stream_times_out(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    fake.reply(Reply(body=[*sse(*TEXT_STREAM[:2]), Pause(1.0), *sse(*TEXT_STREAM[2:])]))
    tight = Deadlines(connect_s=2.0, first_byte_s=5.0, between_chunks_s=0.2)
    stream = await provider.open_stream(chat(stream=True), tight)
    with pytest.raises(UpstreamTimeout, match="stalled"):
        _ = [chunk async for chunk in stream.rest()]
    await stream.aclose()


async def test_429_with_retry_after(fake: FakeAnthropic, provider: AnthropicProvider) -> None:
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "Too many"}}
    fake.reply(Reply(429, orjson.dumps(body), {"retry-after": "12"}))
    with pytest.raises(UpstreamStatusError) as caught:
        await provider.send(chat(), DEADLINES)
    assert (caught.value.status, caught.value.retryable, caught.value.retry_after_s) == (
        429,
        True,
        12.0,
    )
    assert orjson.loads(caught.value.upstream_body)["error"]["type"] == "rate_limit_error"


async def test_529_overloaded_is_retryable(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    fake.reply(Reply(529, orjson.dumps(body)))
    with pytest.raises(UpstreamStatusError) as caught:
        await provider.open_stream(chat(stream=True), DEADLINES)
    assert (caught.value.status, caught.value.retryable) == (502, True)


async def test_401_does_not_leak_the_key(fake: FakeAnthropic, provider: AnthropicProvider) -> None:
    body = {"type": "error", "error": {"type": "authentication_error", "message": f"bad {KEY}"}}
    fake.reply(Reply(401, orjson.dumps(body)))
    with pytest.raises(UpstreamStatusError) as caught:
        await provider.send(chat(), DEADLINES)
    error = caught.value
    assert isinstance(error, UpstreamCredentialsRefused)
    assert (error.status, error.retryable) == (502, True)
    assert KEY not in error.message and KEY not in repr(error)
    assert KEY.encode() not in error.upstream_body
    assert KEY not in repr(provider)


async def test_a_redirect_is_an_error_not_an_answer(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    fake.reply(Reply(307, b"", {"location": "https://elsewhere.example/v1/messages"}))
    with pytest.raises(UpstreamStatusError) as caught:
        await provider.send(chat(), DEADLINES)
    error = caught.value
    assert (error.upstream_status, error.status, error.retryable) == (307, 502, False)
    assert len(fake.seen) == 1, "not followed"


async def test_an_untranslatable_request_never_reaches_the_backend(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    with pytest.raises(UpstreamStatusError) as caught:
        await provider.send(chat(n=3), DEADLINES)
    assert (caught.value.status, caught.value.retryable) == (400, False)
    assert orjson.loads(caught.value.upstream_body)["error"]["param"] == "n"
    with pytest.raises(UpstreamStatusError, match="only /chat/completions"):
        await provider.send(UpstreamRequest("/embeddings", b"{}", stream=False), DEADLINES)
    assert fake.seen == []


async def test_health(fake: FakeAnthropic, provider: AnthropicProvider) -> None:
    assert (await provider.health(timeout_s=2.0)).healthy
    (probe,) = fake.seen
    assert (probe.method, probe.path, probe.query) == ("GET", "/v1/models", "limit=1")
    assert probe.headers["x-api-key"] == KEY
    assert probe.headers["anthropic-version"] == "2023-06-01"

    fake.models_status = 401
    refused = await provider.health(timeout_s=2.0)
    assert not refused.healthy
    assert "401" in refused.reason and KEY not in refused.reason


def _unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_an_unreachable_backend() -> None:
    provider = AnthropicProvider("claude-gone", f"http://127.0.0.1:{_unused_port()}/v1", KEY)
    try:
        health = await provider.health(timeout_s=1.0)
        assert not health.healthy and "cannot connect" in health.reason
        with pytest.raises(UpstreamConnectError):
            await provider.send(chat(), DEADLINES)
    finally:
        await provider.close()


async def test_the_default_base_url_is_anthropics() -> None:
    provider = await open_provider(ProviderSettings(name="a", kind="anthropic", api_key=KEY))
    try:
        assert provider.base_url == "https://api.anthropic.com/v1"
    finally:
        await provider.close()
