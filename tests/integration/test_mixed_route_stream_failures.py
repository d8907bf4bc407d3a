"""Issue 14's streams when a backend fails mid-way: whichever format the backend speaks, a
stream the gateway has started relaying ends with an error in the client's own format
(the openai SDK raises on a chat stream, a Responses stream ends `error` then
`response.failed`, the anthropic SDK raises on Messages' `event: error`), after the text
that came before it, and never as a silent, complete-looking end."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anthropic
import openai
import pytest

from emulator.settings import Faults
from tests.conftest import RunningGateway, StartEmulator, StartGateway
from tests.integration.mixed_fleet import HEADER, MEMBERS, ROUTE, Fleet, Member, start_fleet

BY_BACKEND = pytest.mark.parametrize("member", MEMBERS, ids=[m.name for m in MEMBERS])
ASK = "What is the weather in Oslo?"
# Paced tokens, so that the first ones reach the client before the engine fails: a
# failure before the first byte is a retry (another backend), not a broken stream.
TOKEN_DELAY_MS = 25.0
FAULT = Faults(error_event_after_chunks=8)


@pytest.fixture
async def paced(
    start_emulator: StartEmulator, start_gateway: StartGateway, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[RunningGateway, Fleet]]:
    fleet = await start_fleet(start_emulator, monkeypatch, token_delay_ms=TOKEN_DELAY_MS)
    yield await start_gateway(fleet.config), fleet


def failing(fleet: Fleet, member: Member) -> dict[str, str]:
    """Fail `member`'s streams mid-way; the headers that force the request there."""
    fleet.engines[member.name].runtime.faults = FAULT
    return {HEADER: member.tag}


@BY_BACKEND
async def test_openai_chat_stream_raises(
    paced: tuple[RunningGateway, Fleet], member: Member
) -> None:
    gw, fleet = paced
    headers = failing(fleet, member)
    async with openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key="-", max_retries=0) as sdk:
        stream = await sdk.chat.completions.create(
            model=ROUTE,
            messages=[{"role": "user", "content": ASK}],
            max_tokens=30,
            stream=True,
            extra_headers=headers,
        )
        texts: list[str] = []
        with pytest.raises(openai.APIError) as raised:
            async for chunk in stream:
                texts += [c.delta.content or "" for c in chunk.choices]
    assert "".join(texts), "text came before the failure"
    assert "mid-stream" in raised.value.message


@BY_BACKEND
async def test_openai_responses_stream_ends_failed(
    paced: tuple[RunningGateway, Fleet], member: Member
) -> None:
    gw, fleet = paced
    headers = failing(fleet, member)
    async with openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key="-", max_retries=0) as sdk:
        stream = await sdk.responses.create(
            model=ROUTE, input=ASK, max_output_tokens=30, stream=True, extra_headers=headers
        )
        events: list[Any] = [event async for event in stream]
    assert any(e.type == "response.output_text.delta" for e in events)
    error, failed = events[-2:]
    assert error.type == "error" and error.code and _says_mid_stream(error.message)
    assert failed.type == "response.failed" and failed.response.status == "failed"
    assert failed.response.model == ROUTE and failed.response.output_text


@BY_BACKEND
async def test_anthropic_messages_stream_raises(
    paced: tuple[RunningGateway, Fleet], member: Member
) -> None:
    gw, fleet = paced
    headers = failing(fleet, member)
    texts: list[str] = []
    async with anthropic.AsyncAnthropic(base_url=gw.url, api_key="-", max_retries=0) as sdk:
        with pytest.raises(anthropic.APIStatusError) as raised:
            async with sdk.messages.stream(
                model=ROUTE,
                max_tokens=30,
                messages=[{"role": "user", "content": ASK}],
                extra_headers=headers,
            ) as stream:
                async for text in stream.text_stream:
                    texts.append(text)
    assert "".join(texts), "text came before the failure"
    body = raised.value.body
    assert isinstance(body, dict) and body["type"] == "error"
    assert body["error"]["type"] == "api_error" and _says_mid_stream(body["error"]["message"])


def _says_mid_stream(message: str) -> bool:
    """A native provider's failure says it broke mid-stream; an OpenAI-compatible backend's
    error event is named, not quoted (it may echo the request's key)."""
    return "mid-stream" in message or message == "backend ended the stream with an error event"
