"""The Azure OpenAI adapter against a scripted Azure-like server on loopback.

OpenAI's wire at Azure's addresses: the tests check what reached the server (deployment
path, api-version, api-key header, the body untouched) and what came back.
"""

from __future__ import annotations

import orjson
import pytest

from providers.azure import DEFAULT_API_VERSION, AzureOpenAIProvider
from providers.base import Deadlines, UpstreamRequest
from providers.errors import (
    MissingDeployment,
    UpstreamCredentialsRefused,
    UpstreamStatusError,
)
from providers.rate_limits import RateLimitSignal
from providers.registry import open_provider
from providers.settings import ProviderSettings
from tests.providers.fake_upstream import Reply, ScriptedServer

KEY = "azure-test-key-77"
DEADLINES = Deadlines(connect_s=2.0, first_byte_s=5.0, between_chunks_s=5.0)
COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}],
}


def chat(model: str = "gpt-4o-prod", stream: bool = False) -> UpstreamRequest:
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    return UpstreamRequest("/chat/completions", orjson.dumps(body), stream=stream)


async def open_azure(server: ScriptedServer, **settings: object) -> AzureOpenAIProvider:
    options = {"name": "az", "kind": "azure-openai", "base_url": server.url, "api_key": KEY}
    provider = await open_provider(ProviderSettings.model_validate({**options, **settings}))
    assert isinstance(provider, AzureOpenAIProvider)
    return provider


@pytest.mark.parametrize(
    ("base_suffix", "settings", "api_version"),
    [
        ("", {}, DEFAULT_API_VERSION),
        ("/openai/", {"api_version": "2025-04-01-preview"}, "2025-04-01-preview"),
    ],
    ids=["default-version", "resource-url-with-openai-and-own-version"],
)
async def test_send_goes_to_the_deployment_with_the_api_key(
    upstream: ScriptedServer,
    base_suffix: str,
    settings: dict[str, object],
    api_version: str,
) -> None:
    upstream.reply(Reply(body=orjson.dumps(COMPLETION)))
    provider = await open_azure(upstream, base_url=upstream.url + base_suffix, **settings)
    request = chat()
    try:
        response = await provider.send(request, DEADLINES)
    finally:
        await provider.close()
    seen = upstream.seen[0]
    assert (seen.method, seen.path, seen.query) == (
        "POST",
        "/openai/deployments/gpt-4o-prod/chat/completions",
        f"api-version={api_version}",
    )
    assert seen.headers["api-key"] == KEY
    assert "authorization" not in seen.headers
    assert seen.body == request.body, "the OpenAI body goes as it came"
    assert (response.status, orjson.loads(response.body)) == (200, COMPLETION)


async def test_deployment_names_are_quoted_into_the_path(upstream: ScriptedServer) -> None:
    upstream.reply(Reply(body=orjson.dumps(COMPLETION)))
    provider = await open_azure(upstream)
    try:
        await provider.send(chat(model="team a/b"), DEADLINES)
    finally:
        await provider.close()
    assert upstream.seen[0].path == "/openai/deployments/team%20a%2Fb/chat/completions"


async def test_streams_are_relayed_byte_for_byte(upstream: ScriptedServer) -> None:
    pieces = [
        b'data: {"choices":[{"index":0,"delta":{"content":"he"}}]}\n\n',
        b'data: {"choices":[{"index":0,"delta":{"content":"llo"}}]}\n\n',
        b"data: [DONE]\n\n",
    ]
    upstream.reply(Reply(body=pieces))
    provider = await open_azure(upstream)
    try:
        stream = await provider.open_stream(chat(stream=True), DEADLINES)
        rest = b"".join([chunk async for chunk in stream.rest()])
        await stream.aclose()
    finally:
        await provider.close()
    assert stream.first_chunk + rest == b"".join(pieces)
    seen = upstream.seen[0]
    assert seen.path == "/openai/deployments/gpt-4o-prod/chat/completions"
    assert seen.headers["api-key"] == KEY


async def test_health_lists_models_at_the_api_version(upstream: ScriptedServer) -> None:
    upstream.reply(Reply(body=b'{"data": []}'), Reply(503, b"{}"))
    provider = await open_azure(upstream)
    try:
        up = await provider.health(timeout_s=2.0)
        down = await provider.health(timeout_s=2.0)
    finally:
        await provider.close()
    assert up.healthy and not down.healthy
    seen = upstream.seen[0]
    assert (seen.method, seen.path, seen.query) == (
        "GET",
        "/openai/models",
        f"api-version={DEFAULT_API_VERSION}",
    )
    assert seen.headers["api-key"] == KEY


async def test_errors_map_as_openais(upstream: ScriptedServer) -> None:
    throttled = b'{"error": {"code": "429", "message": "Rate limit reached"}}'
    upstream.reply(
        Reply(429, throttled, {"retry-after": "4", "x-ratelimit-remaining-requests": "0"}),
        Reply(401, f'{{"error": {{"message": "bad key {KEY}"}}}}'.encode()),
    )
    provider = await open_azure(upstream)
    try:
        with pytest.raises(UpstreamStatusError) as limited:
            await provider.send(chat(), DEADLINES)
        with pytest.raises(UpstreamStatusError) as refused:
            await provider.send(chat(), DEADLINES)
    finally:
        await provider.close()
    assert (limited.value.status, limited.value.retry_after_s) == (429, 4.0)
    assert limited.value.upstream_body == throttled
    assert limited.value.rate_limit == RateLimitSignal(remaining_requests=0, retry_after_s=4.0)
    assert isinstance(refused.value, UpstreamCredentialsRefused)
    assert (refused.value.status, refused.value.retryable) == (502, True)
    assert refused.value.upstream_body == b""
    assert KEY not in refused.value.message


async def test_a_body_without_a_model_names_no_deployment(upstream: ScriptedServer) -> None:
    provider = await open_azure(upstream)
    request = UpstreamRequest("/chat/completions", b'{"messages": []}', stream=False)
    try:
        with pytest.raises(MissingDeployment) as caught:
            await provider.send(request, DEADLINES)
    finally:
        await provider.close()
    assert (caught.value.status, caught.value.retryable) == (400, False)
    assert upstream.seen == []


async def test_the_kind_needs_a_base_url() -> None:
    with pytest.raises(ValueError, match="base_url"):
        await open_provider(ProviderSettings(name="az", kind="azure-openai"))


def test_the_key_stays_out_of_the_providers_repr() -> None:
    provider = AzureOpenAIProvider("az", "https://r.openai.azure.com", KEY)
    assert KEY not in repr(provider)
