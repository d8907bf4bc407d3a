"""The `emulated` adapter: it starts a real emulator on loopback and stops it on close()."""

from __future__ import annotations

from urllib.parse import urlsplit

import orjson
import pytest

from emulator import EmulatorOptions, EmulatorSettings
from providers.base import Deadlines, UpstreamRequest
from providers.emulated import EmulatedProvider
from providers.registry import open_provider
from providers.settings import ProviderSettings
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
