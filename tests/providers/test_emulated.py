"""Emulated backends: a real emulator started on loopback, stopped on close(), and spoken
to in the format of the backend's kind (kind `emulated`: OpenAI's; `anthropic` or `gemini`
with an `emulator` block: theirs, through their own adapters)."""

from __future__ import annotations

from urllib.parse import urlsplit

import orjson
import pytest

from emulator.settings import EmulatorOptions, EmulatorSettings
from providers.anthropic.provider import AnthropicProvider
from providers.base import Deadlines, Provider, UpstreamRequest
from providers.emulated import EmulatedProvider
from providers.gemini.provider import GeminiProvider
from providers.openai_compatible import OpenAICompatibleProvider
from providers.registry import open_provider
from providers.settings import BackendKind, ProviderSettings
from tests.providers.listening import accepts_connections

DEADLINES = Deadlines(connect_s=2.0, first_byte_s=5.0, between_chunks_s=5.0)


def emulated(**options: object) -> ProviderSettings:
    return ProviderSettings(
        name="engine-a",
        kind="emulated",
        models=("m1", "m2"),
        emulator=EmulatorOptions.model_validate({"token_delay_ms": 0, **options}),
    )


def chat(model: str) -> UpstreamRequest:
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
    return UpstreamRequest("/chat/completions", orjson.dumps(body), stream=False)


async def test_opening_starts_an_engine_that_serves_the_settings_models() -> None:
    provider = await open_provider(emulated(embedding_dim=8))
    try:
        assert isinstance(provider, EmulatedProvider)
        assert provider.name == "engine-a"
        assert urlsplit(provider.base_url).hostname == "127.0.0.1"
        assert provider.base_url == provider.engine.base_url
        assert provider.engine.settings == EmulatorSettings(
            models=["m1", "m2"], token_delay_ms=0, embedding_dim=8
        )
        response = await provider.send(chat("m2"), DEADLINES)
        assert response.status == 200
        assert orjson.loads(response.body)["model"] == "m2"
        health = await provider.health(timeout_s=2.0)
        assert health.healthy, health.reason
    finally:
        await provider.close()


async def test_streams_go_through_the_engine() -> None:
    provider = await open_provider(emulated())
    try:
        request = chat("m1")
        stream_request = UpstreamRequest(
            request.path, request.body[:-1] + b',"stream":true}', stream=True
        )
        stream = await provider.open_stream(stream_request, DEADLINES)
        rest = b"".join([chunk async for chunk in stream.rest()])
        await stream.aclose()
        assert (stream.first_chunk + rest).rstrip().endswith(b"data: [DONE]")
    finally:
        await provider.close()


async def test_close_stops_the_engine_and_the_connection_pool() -> None:
    provider = await open_provider(emulated())
    assert isinstance(provider, EmulatedProvider)
    await provider.send(chat("m1"), DEADLINES)
    assert isinstance(provider.adapter, OpenAICompatibleProvider)
    session = provider.adapter.session
    assert await accepts_connections(provider.base_url)
    await provider.close()
    assert session.closed
    assert not await accepts_connections(provider.base_url)


async def test_default_options_are_the_emulators_own() -> None:
    settings = ProviderSettings(name="plain", kind="emulated", models=("m",))
    provider = await open_provider(settings)
    try:
        assert isinstance(provider, EmulatedProvider)
        assert provider.engine.settings == EmulatorSettings(models=["m"])
    finally:
        await provider.close()


@pytest.mark.parametrize("bad", [{"speed": 2}, {"token_delay_ms": -1}, {"kv_capacity_tokens": 8}])
def test_unknown_or_invalid_options_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        EmulatorOptions.model_validate(bad)


NATIVE = pytest.mark.parametrize(
    ("kind", "adapter", "api_root"),
    [("anthropic", AnthropicProvider, "/v1"), ("gemini", GeminiProvider, "/v1beta")],
    ids=["anthropic", "gemini"],
)


def native(kind: BackendKind) -> ProviderSettings:
    return ProviderSettings(
        name="cloud",
        kind=kind,
        models=("cloud-model",),
        api_key="k-1",
        emulator=EmulatorOptions(token_delay_ms=0, ignore_eos=True),  # 4 tokens asked, 4 given
    )


@NATIVE
async def test_a_native_kind_with_an_emulator_speaks_its_own_format_to_it(
    kind: BackendKind, adapter: type[Provider], api_root: str
) -> None:
    provider = await open_provider(native(kind))
    try:
        assert isinstance(provider, EmulatedProvider)
        assert isinstance(provider.adapter, adapter)
        assert provider.base_url == provider.engine.origin + api_root
        assert provider.engine.settings == EmulatorSettings(
            models=["cloud-model"], token_delay_ms=0, ignore_eos=True
        )
        response = await provider.send(chat("cloud-model"), DEADLINES)
        answer = orjson.loads(response.body)  # translated back to OpenAI's chat answer
        assert (answer["object"], answer["usage"]["completion_tokens"]) == ("chat.completion", 4)
        health = await provider.health(timeout_s=2.0)
        assert health.healthy, health.reason
    finally:
        await provider.close()
    assert not await accepts_connections(provider.base_url)


@NATIVE
async def test_a_native_kind_streams_through_its_emulator(
    kind: BackendKind, adapter: type[Provider], api_root: str
) -> None:
    provider = await open_provider(native(kind))
    try:
        body = {"model": "cloud-model", "messages": [{"role": "user", "content": "hi"}]}
        request = UpstreamRequest(
            "/chat/completions", orjson.dumps({**body, "max_tokens": 4, "stream": True}), True
        )
        stream = await provider.open_stream(request, DEADLINES)
        rest = b"".join([chunk async for chunk in stream.rest()])
        await stream.aclose()
        assert (stream.first_chunk + rest).rstrip().endswith(b"data: [DONE]")
    finally:
        await provider.close()


def test_an_emulator_is_only_for_the_kinds_it_speaks() -> None:
    with pytest.raises(ValueError, match="emulator: only for kinds emulated, anthropic and gemini"):
        ProviderSettings(name="a", kind="vllm", emulator=EmulatorOptions())


async def test_an_emulated_backend_picks_its_own_port() -> None:
    """A base URL given anyway is not where the engine listens (the config refuses one)."""
    settings = native("anthropic").model_copy(update={"base_url": "http://127.0.0.1:9/v1"})
    provider = await open_provider(settings)
    try:
        assert isinstance(provider, EmulatedProvider)
        assert provider.base_url == provider.engine.origin + "/v1"
    finally:
        await provider.close()
