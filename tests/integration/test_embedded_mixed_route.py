"""The embedded default's route `mixed`: three local engines and two emulated clouds, one
spoken to in Anthropic's wire format and one in Gemini's, each asked for its own model id.

The embedded config is started in-process as `switchyard serve` runs it (its store moved to
a temporary folder, its demo traffic off), and the official SDKs are its clients: a chat
completion and an Anthropic Messages request, each forced onto the clouds with a placement
header, answer under the route's public name.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
import yaml
from anthropic.types import Message

from gateway.cli import embedded_config_path
from providers.emulated import EmulatedProvider
from tests.conftest import RunningGateway, StartGateway

ROUTE = "mixed"
CLOUDS = {"cloud-anthropic": "claude-emulated", "cloud-gemini": "gemini-emulated"}
HEADER = "x-switchyard-require-tags"


def embedded(tmp_path: Path) -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(embedded_config_path().read_text(encoding="utf-8"))
    config["store"]["url"] = f"sqlite+aiosqlite:///{tmp_path / 'switchyard.db'}"
    config["demo"] = {"traffic_rps": 0}
    return config


@pytest.fixture
async def gw(start_gateway: StartGateway, tmp_path: Path) -> RunningGateway:
    return await start_gateway(embedded(tmp_path))


@pytest.fixture
async def oai(gw: RunningGateway) -> AsyncIterator[openai.AsyncOpenAI]:
    sdk = openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key="unused", max_retries=0)
    yield sdk
    await sdk.close()


def served_by(gw: RunningGateway, decision_id: str) -> tuple[str, str]:
    """(backend, upstream model) of the attempt that answered, from the decisions ring."""
    record = gw.gateway.ring.get(decision_id)
    assert record is not None
    attempt = record.served_attempt
    assert attempt is not None and record.served_by is not None
    return record.served_by, attempt.model


async def test_the_clouds_are_emulators_reached_through_their_native_adapters(
    gw: RunningGateway,
) -> None:
    providers = gw.gateway.providers
    assert sorted(providers) == ["cloud-anthropic", "cloud-gemini", *map("engine-{}".format, "abc")]
    anthropic_cloud, gemini_cloud = providers["cloud-anthropic"], providers["cloud-gemini"]
    assert isinstance(anthropic_cloud, EmulatedProvider)
    assert isinstance(gemini_cloud, EmulatedProvider)
    assert type(anthropic_cloud.adapter).__name__ == "AnthropicProvider"
    assert type(gemini_cloud.adapter).__name__ == "GeminiProvider"
    assert anthropic_cloud.base_url == anthropic_cloud.engine.origin + "/v1"
    assert gemini_cloud.base_url == gemini_cloud.engine.origin + "/v1beta"
    models = (await gw.client.get("/v1/models")).json()["data"]
    assert ROUTE in [m["id"] for m in models]


async def test_a_chat_completion_forced_to_a_cloud_answers_as_mixed(
    gw: RunningGateway, oai: openai.AsyncOpenAI
) -> None:
    raw = await oai.chat.completions.with_raw_response.create(
        model=ROUTE,
        messages=[{"role": "user", "content": "Say hello to the clouds."}],
        max_tokens=8,
        extra_headers={HEADER: "cloud"},
    )
    reply = raw.parse()
    assert reply.model == ROUTE
    assert reply.choices[0].message.content
    backend, model = served_by(gw, raw.headers["x-switchyard-decision"])
    assert raw.headers["x-switchyard-backend"] == backend
    assert CLOUDS[backend] == model


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_an_anthropic_message_forced_to_the_anthropic_cloud_answers_as_mixed(
    gw: RunningGateway, claude_sdk: anthropic.AsyncAnthropic, stream: bool
) -> None:
    headers = {HEADER: "cloud,anthropic"}
    messages: Any = [{"role": "user", "content": "Say hello to the clouds."}]
    message: Message
    if stream:
        async with claude_sdk.messages.stream(
            model=ROUTE, max_tokens=8, messages=messages, extra_headers=headers
        ) as events:
            message = await events.get_final_message()
            decision = events.response.headers["x-switchyard-decision"]
    else:
        raw = await claude_sdk.messages.with_raw_response.create(
            model=ROUTE, max_tokens=8, messages=messages, extra_headers=headers
        )
        message, decision = await raw.parse(), raw.headers["x-switchyard-decision"]
    assert message.model == ROUTE
    assert message.content and message.content[0].type == "text"
    # The embedded engines' answers end on their own: at most the 8 tokens asked, all of
    # them when max_tokens ended the turn.
    words = len(message.content[0].text.split())
    assert message.usage.output_tokens == words <= 8
    assert (message.stop_reason == "max_tokens") == (words == 8)
    assert served_by(gw, decision) == ("cloud-anthropic", "claude-emulated")


async def test_the_gemini_cloud_answers_an_anthropic_message_as_mixed(
    gw: RunningGateway, claude_sdk: anthropic.AsyncAnthropic
) -> None:
    raw = await claude_sdk.messages.with_raw_response.create(
        model=ROUTE,
        max_tokens=8,
        messages=[{"role": "user", "content": "Say hello to the clouds."}],
        extra_headers={HEADER: "google"},
    )
    assert (await raw.parse()).model == ROUTE
    assert served_by(gw, raw.headers["x-switchyard-decision"]) == (
        "cloud-gemini",
        "gemini-emulated",
    )


async def test_the_route_default_keeps_to_the_local_engines(
    gw: RunningGateway, oai: openai.AsyncOpenAI
) -> None:
    raw = await oai.chat.completions.with_raw_response.create(
        model="default", messages=[{"role": "user", "content": "hi"}], max_tokens=4
    )
    assert raw.parse().model == "default"
    assert raw.headers["x-switchyard-backend"] in {"engine-a", "engine-b", "engine-c"}


async def test_a_cloud_reports_its_cache_reads_in_openai_usage(
    gw: RunningGateway, oai: openai.AsyncOpenAI
) -> None:
    """Anthropic's cache_read_input_tokens come back as OpenAI's cached_tokens, which the
    cloud's cached-input price then charges."""
    document = " ".join(f"clause {i} of the agreement says nothing new." for i in range(60))
    messages: Any = [{"role": "user", "content": document}]
    cached = []
    for _ in range(2):
        reply = await oai.chat.completions.create(
            model=ROUTE, messages=messages, max_tokens=4, extra_headers={HEADER: "anthropic"}
        )
        assert reply.usage is not None and reply.usage.prompt_tokens_details is not None
        cached.append(reply.usage.prompt_tokens_details.cached_tokens or 0)
    assert cached[0] == 0 < cached[1]
