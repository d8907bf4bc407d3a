"""The client's `anthropic-version` on the native path replaces the adapter's, once, on
both HTTP clients; the adapter's key is never replaced."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from starlette.requests import Request
from starlette.responses import Response

from providers.anthropic.provider import AnthropicProvider
from providers.base import ANTHROPIC_MESSAGES, NativeRequest, UpstreamRequest
from providers.registry import open_provider
from providers.settings import ProviderSettings
from tests.providers.anthropic.fake_anthropic import FakeAnthropic
from tests.providers.anthropic.test_provider import DEADLINES, MESSAGE
from tests.providers.fake_upstream import Reply, running


class RawHeaders(FakeAnthropic):
    def __init__(self) -> None:
        super().__init__()
        self.raw: list[list[tuple[str, str]]] = []

    async def _answer(self, request: Request) -> Response:
        self.raw.append([(k.decode(), v.decode()) for k, v in request.scope["headers"]])
        return await super()._answer(request)


@pytest.fixture
async def fake() -> AsyncIterator[RawHeaders]:
    async with running(RawHeaders()) as server:
        yield server


def native_request() -> UpstreamRequest:
    doc: dict[str, Any] = {
        "model": "claude-x",
        "max_tokens": 8,
        "messages": [{"role": "user", "content": "hi"}],
    }
    chat = {"model": "claude-x", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    headers = {"anthropic-version": "2099-01-01", "anthropic-beta": "b1"}
    native = NativeRequest(ANTHROPIC_MESSAGES, orjson.dumps(doc), headers, False)
    return UpstreamRequest("/chat/completions", orjson.dumps(chat), False, native=native)


@pytest.mark.parametrize("client", ["lean", "aiohttp"])
async def test_the_clients_anthropic_version_is_sent_once_and_is_the_clients(
    fake: RawHeaders, client: str
) -> None:
    settings = ProviderSettings(
        name="claude-a",
        kind="anthropic",
        base_url=fake.base_url,
        api_key="sk-ant-k",
        http_client=client,
    )
    provider = await open_provider(settings)
    assert isinstance(provider, AnthropicProvider)
    try:
        fake.reply(Reply(body=orjson.dumps(MESSAGE)))
        await provider.send(native_request(), DEADLINES)
    finally:
        await provider.close()
    versions = [v for k, v in fake.raw[-1] if k.lower() == "anthropic-version"]
    assert versions == ["2099-01-01"], versions
    betas = [v for k, v in fake.raw[-1] if k.lower() == "anthropic-beta"]
    assert betas == ["b1"]
    keys = [v for k, v in fake.raw[-1] if k.lower() == "x-api-key"]
    assert keys == ["sk-ant-k"]
