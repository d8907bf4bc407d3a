"""The `llama-cpp` kind's adapter against a scripted llama-server on loopback: a 503
`Loading model` is "not ready" (probe and requests), any other error is as the
OpenAI-compatible adapter reads it, and its usage carries the engine's own counts."""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson
import pytest

from providers.base import Deadlines, UpstreamRequest
from providers.errors import UpstreamNotReady, UpstreamStatusError
from providers.llama_cpp import LlamaCppProvider, llama_cpp_health, not_ready_reason
from providers.openai_compatible import OpenAICompatibleProvider
from providers.presets import with_preset_defaults
from providers.registry import adapter_kind, open_provider
from providers.settings import ProviderSettings
from providers.usage import Usage, usage_from_body
from tests import llama_server_replies as replies
from tests.providers.fake_upstream import Reply, ScriptedServer

DEADLINES = Deadlines(connect_s=2.0, first_byte_s=5.0, between_chunks_s=5.0)
CHAT = UpstreamRequest(
    "/chat/completions",
    orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
    stream=False,
)


@pytest.fixture
async def provider(upstream: ScriptedServer) -> AsyncIterator[LlamaCppProvider]:
    settings = ProviderSettings(name="ll", kind="llama-cpp", base_url=upstream.url + "/v1")
    adapter = await open_provider(with_preset_defaults(settings))
    assert isinstance(adapter, LlamaCppProvider)
    try:
        yield adapter
    finally:
        await adapter.close()


async def test_a_loading_model_is_not_ready_and_retryable(
    upstream: ScriptedServer, provider: LlamaCppProvider
) -> None:
    upstream.reply(Reply(503, replies.LOADING))
    with pytest.raises(UpstreamNotReady) as caught:
        await provider.send(CHAT, DEADLINES)
    error = caught.value
    assert (error.status, error.code, error.retryable) == (502, "upstream_not_ready", True)
    assert error.reason == "not ready: loading the model (HTTP 503)"


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (503, b'{"error": {"message": "overloaded", "type": "server_error"}}'),
        (503, b"Service Unavailable"),
        (500, replies.LOADING),
        (501, replies.NO_SLOTS),
    ],
)
async def test_other_errors_read_as_the_openai_adapter_reads_them(
    upstream: ScriptedServer, provider: LlamaCppProvider, status: int, body: bytes
) -> None:
    upstream.reply(Reply(status, body))
    with pytest.raises(UpstreamStatusError) as caught:
        await provider.send(CHAT, DEADLINES)
    assert not isinstance(caught.value, UpstreamNotReady)
    assert caught.value.code == f"upstream_{status}"


@pytest.mark.parametrize(
    ("status", "body", "healthy", "reason"),
    [
        (503, replies.LOADING, False, "not ready: loading the model (HTTP 503)"),
        (200, replies.HEALTH_OK, True, "probe ok (HTTP 200)"),
        (500, b"{}", False, "probe got HTTP 500"),
        (401, b"{}", False, "probe: credentials refused (HTTP 401)"),
    ],
)
async def test_the_probe_gets_health_and_reads_a_503_as_not_ready(
    upstream: ScriptedServer,
    provider: LlamaCppProvider,
    status: int,
    body: bytes,
    healthy: bool,
    reason: str,
) -> None:
    upstream.reply(Reply(status, body))
    result = await provider.health(timeout_s=2.0)
    assert (result.healthy, result.reason) == (healthy, reason)
    assert upstream.seen[0].path == "/health"


async def test_an_answer_carries_the_engines_cached_tokens_and_timings(
    upstream: ScriptedServer, provider: LlamaCppProvider
) -> None:
    upstream.reply(Reply(200, replies.CHAT_WARM))
    response = await provider.send(CHAT, DEADLINES)
    assert usage_from_body(response.body) == Usage(41, 16, 40, prefill_ms=21.22, decode_ms=320.147)


def test_the_judges_and_reasons_alone() -> None:
    assert llama_cpp_health(503).reason.startswith("not ready")
    assert llama_cpp_health(404).healthy, "as the OpenAI probe: a missing path is up"
    assert not_ready_reason(503, replies.LOADING) == "loading the model"
    assert not_ready_reason(503, b'{"error": {"type": "unavailable_error"}}') == "unavailable"
    assert not_ready_reason(503, b"[]") is None
    assert not_ready_reason(429, replies.LOADING) is None


@pytest.mark.parametrize(
    ("kind", "preset", "adapter"),
    [
        ("llama-cpp", None, LlamaCppProvider),
        ("openai-compatible", "llama-cpp", LlamaCppProvider),
        ("openai-compatible", "vllm", OpenAICompatibleProvider),
        ("openai-compatible", None, OpenAICompatibleProvider),
    ],
)
async def test_the_llama_cpp_preset_opens_the_llama_cpp_adapter(
    kind: str, preset: str | None, adapter: type[OpenAICompatibleProvider]
) -> None:
    settings = ProviderSettings.model_validate(
        {"name": "b", "kind": kind, "preset": preset, "base_url": "http://127.0.0.1:1/v1"}
    )
    provider = await open_provider(with_preset_defaults(settings))
    try:
        assert type(provider) is adapter
    finally:
        await provider.close()
    assert (adapter_kind(settings) == "llama-cpp") == (adapter is LlamaCppProvider)
