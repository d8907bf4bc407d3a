"""The OpenAI-compatible adapter against a scripted server on loopback: refused keys,
health probes, rate-limit signals and the settings a preset fills in."""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson
import pytest

from providers.base import Deadlines, UpstreamRequest
from providers.errors import (
    UpstreamCredentialsRefused,
    UpstreamError,
    UpstreamProtocolError,
    UpstreamStatusError,
)
from providers.openai_compatible import OpenAICompatibleProvider, opens_with_error_event
from providers.presets import with_preset_defaults
from providers.rate_limits import RateLimitSignal
from providers.registry import open_provider
from providers.settings import BackendKind, ProviderSettings
from tests.providers.fake_upstream import Reply, ScriptedServer

KEY = "sk-openai-compatible-secret"
DEADLINES = Deadlines(connect_s=2.0, first_byte_s=5.0, between_chunks_s=5.0)
COMPLETION = orjson.dumps({"id": "chatcmpl-1", "object": "chat.completion", "choices": []})
LIMITS = {
    "x-ratelimit-remaining-requests": "9",
    "x-ratelimit-remaining-tokens": "1000",
    "x-ratelimit-reset-tokens": "6m0s",
}


def chat(stream: bool = False) -> UpstreamRequest:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    return UpstreamRequest("/chat/completions", orjson.dumps(body), stream=stream)


async def opened(settings: ProviderSettings) -> OpenAICompatibleProvider:
    provider = await open_provider(settings)
    assert isinstance(provider, OpenAICompatibleProvider)
    return provider


@pytest.fixture
async def provider(upstream: ScriptedServer) -> AsyncIterator[OpenAICompatibleProvider]:
    settings = ProviderSettings(
        name="oa", base_url=upstream.url + "/v1", api_key=KEY, api_key_env="OA_API_KEY"
    )
    adapter = await opened(settings)
    try:
        yield adapter
    finally:
        await adapter.close()


@pytest.mark.parametrize("status", [401, 403])
async def test_refused_credentials_are_a_retryable_502_without_the_body(
    upstream: ScriptedServer, provider: OpenAICompatibleProvider, status: int
) -> None:
    upstream.reply(Reply(status, f'{{"error": {{"message": "bad key {KEY}"}}}}'.encode()))
    with pytest.raises(UpstreamCredentialsRefused) as caught:
        await provider.send(chat(), DEADLINES)
    error = caught.value
    assert (error.status, error.code, error.retryable) == (
        502,
        "upstream_credentials_refused",
        True,
    )
    assert (error.upstream_status, error.upstream_body) == (status, b"")
    assert error.message == (
        f"backend oa: upstream rejected the credentials from OA_API_KEY (HTTP {status})"
    )
    assert KEY not in repr(error)


@pytest.mark.parametrize(
    ("status", "healthy", "reason"),
    [
        (200, True, "probe ok (HTTP 200)"),
        (404, True, "probe ok (HTTP 404)"),
        (429, True, "probe ok (HTTP 429)"),
        (401, False, "probe: credentials refused (HTTP 401)"),
        (403, False, "probe: credentials refused (HTTP 403)"),
        (503, False, "probe got HTTP 503"),
    ],
)
async def test_health_reads_the_probes_status(
    upstream: ScriptedServer,
    provider: OpenAICompatibleProvider,
    status: int,
    healthy: bool,
    reason: str,
) -> None:
    upstream.reply(Reply(status, b"{}"))
    result = await provider.health(timeout_s=2.0)
    assert (result.healthy, result.reason) == (healthy, reason)
    seen = upstream.seen[0]
    assert (seen.method, seen.path) == ("GET", "/v1/models")
    assert seen.headers["authorization"] == f"Bearer {KEY}"


async def test_a_whole_answer_carries_its_rate_limits(
    upstream: ScriptedServer, provider: OpenAICompatibleProvider
) -> None:
    upstream.reply(Reply(body=COMPLETION, headers=LIMITS), Reply(body=COMPLETION))
    limited = await provider.send(chat(), DEADLINES)
    plain = await provider.send(chat(), DEADLINES)
    assert limited.rate_limit == RateLimitSignal(
        remaining_requests=9, remaining_tokens=1000, tokens_reset_s=360.0
    )
    assert plain.rate_limit is None


async def test_a_stream_carries_its_rate_limits(
    upstream: ScriptedServer, provider: OpenAICompatibleProvider
) -> None:
    upstream.reply(Reply(body=[b"data: {}\n\n", b"data: [DONE]\n\n"], headers=LIMITS))
    stream = await provider.open_stream(chat(stream=True), DEADLINES)
    try:
        assert stream.rate_limit is not None and stream.rate_limit.remaining_requests == 9
    finally:
        await stream.aclose()


async def test_a_429_carries_its_rate_limits_and_retry_after(
    upstream: ScriptedServer, provider: OpenAICompatibleProvider
) -> None:
    headers = {"retry-after": "3", "x-ratelimit-remaining-requests": "0"}
    headers["x-ratelimit-reset-requests"] = "2s"
    upstream.reply(Reply(429, b'{"error": {"message": "slow down"}}', headers))
    with pytest.raises(UpstreamStatusError) as caught:
        await provider.send(chat(), DEADLINES)
    error = caught.value
    assert (error.status, error.retryable, error.retry_after_s) == (429, True, 3.0)
    assert error.rate_limit == RateLimitSignal(
        remaining_requests=0, requests_reset_s=2.0, retry_after_s=3.0
    )


@pytest.mark.parametrize(
    ("kind", "health_path"),
    [("vllm", "/health"), ("sglang", "/health"), ("llama-cpp", "/health"), ("ollama", "/api/tags")],
)
async def test_a_local_preset_probes_its_engines_own_endpoint(
    upstream: ScriptedServer, kind: BackendKind, health_path: str
) -> None:
    settings = ProviderSettings(name="local", kind=kind, base_url=upstream.url + "/v1")
    provider = await opened(with_preset_defaults(settings))
    upstream.reply(Reply(body=b"{}"), Reply(body=COMPLETION))
    try:
        assert (await provider.health(timeout_s=2.0)).healthy
        await provider.send(chat(), DEADLINES)
    finally:
        await provider.close()
    assert [seen.path for seen in upstream.seen] == [health_path, "/v1/chat/completions"]
    assert "authorization" not in upstream.seen[1].headers, "no key configured, none sent"


async def test_openrouters_attribution_goes_only_when_configured(
    upstream: ScriptedServer,
) -> None:
    base = {"name": "or", "preset": "openrouter", "base_url": upstream.url, "api_key": KEY}
    plain = ProviderSettings.model_validate(base)
    attributed = ProviderSettings.model_validate(
        {**base, "extra_headers": {"HTTP-Referer": "https://app.example", "X-Title": "App"}}
    )
    for settings in (plain, attributed):
        provider = await opened(with_preset_defaults(settings))
        upstream.reply(Reply(body=COMPLETION))
        try:
            await provider.send(chat(), DEADLINES)
        finally:
            await provider.close()
    sent_plain, sent_attributed = (seen.headers for seen in upstream.seen)
    assert "http-referer" not in sent_plain and "x-title" not in sent_plain
    assert (sent_attributed["http-referer"], sent_attributed["x-title"]) == (
        "https://app.example",
        "App",
    )
    assert sent_attributed["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        (COMPLETION[: len(COMPLETION) // 2], {}),
        (b"<html><body>upstream busy</body></html>", {"content-type": "text/html"}),
        (b"", {}),
    ],
    ids=["cut-json", "html", "empty"],
)
async def test_a_200_that_is_not_json_is_a_retryable_protocol_error(
    upstream: ScriptedServer,
    provider: OpenAICompatibleProvider,
    body: bytes,
    headers: dict[str, str],
) -> None:
    upstream.reply(Reply(body=body, headers=headers))
    with pytest.raises(UpstreamProtocolError) as raised:
        await provider.send(chat(), DEADLINES)
    assert raised.value.retryable and raised.value.backend == "oa"
    assert "not JSON" in raised.value.message


@pytest.mark.parametrize(
    ("first_chunk", "error"),
    [
        (b'data: {"error":{"message":"boom"}}\n\n', True),
        (b'\ndata:{"error": {"message": "boom"}}\n\n', True),
        (b'data: {"id":"c1","choices":[]}\n\ndata: {"error":{}}\n\n', False),
        (b": keep-alive\n\n", False),
        (b"data: [DONE]\n\n", False),
    ],
)
def test_a_stream_opening_with_an_error_event_is_recognised(
    first_chunk: bytes, error: bool
) -> None:
    assert opens_with_error_event(first_chunk) is error


async def test_a_stream_opening_with_an_error_event_is_a_retryable_error(
    upstream: ScriptedServer, provider: OpenAICompatibleProvider
) -> None:
    upstream.reply(Reply(body=[b'data: {"error":{"message":"engine died"}}\n\n']))
    with pytest.raises(UpstreamError) as raised:
        await provider.open_stream(chat(stream=True), DEADLINES)
    assert raised.value.retryable and raised.value.code == "upstream_stream_error"
    assert "engine died" not in raised.value.message, "the event is not quoted"


async def test_the_probe_follows_plain_http_redirects_on_the_lean_client(
    upstream: ScriptedServer, provider: OpenAICompatibleProvider
) -> None:
    """As aiohttp did for the probe: a redirect is followed (GET again, at the new place)."""
    upstream.reply(Reply(302, b"", {"location": "/v1/moved"}), Reply(200, b"{}"))
    result = await provider.health(timeout_s=2.0)
    assert (result.healthy, result.reason) == (True, "probe ok (HTTP 200)")
    assert [(seen.method, seen.path) for seen in upstream.seen] == [
        ("GET", "/v1/models"),
        ("GET", "/v1/moved"),
    ]


async def test_a_probe_sent_round_in_circles_is_unhealthy(
    upstream: ScriptedServer, provider: OpenAICompatibleProvider
) -> None:
    upstream.reply(*[Reply(307, b"", {"location": "/v1/models"}) for _ in range(11)])
    result = await provider.health(timeout_s=2.0)
    assert (result.healthy, result.reason) == (False, "probe failed: too many redirects")
    assert len(upstream.seen) == 11
