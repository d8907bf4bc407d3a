"""Issue 14, end to end: one route (`assistant`) over an OpenAI-format engine, an Anthropic
and a Gemini provider, each asked for its own model id, through the official SDKs.

Every client call is made once per backend, forced there with a placement tag: the openai
SDK's chat completions (whole, streamed, with a function tool) and `responses.create`
(whole, streamed, with a function tool), and the anthropic SDK's `messages.create` (whole,
streamed, tool use). Each answer names the route, carries text or a tool call in the
client's own format and its usage; the `x-switchyard-backend` header, the decision record
and the engines' own counters say the forced backend served it under its own model id.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import anthropic
import openai
import orjson
import pytest
from anthropic.types import ToolParam
from openai.types.chat import ChatCompletionToolParam
from openai.types.responses import FunctionToolParam

from tests.conftest import RunningGateway, eventually
from tests.integration.mixed_fleet import HEADER, MEMBERS, ROUTE, Fleet, Member

BY_BACKEND = pytest.mark.parametrize("member", MEMBERS, ids=[m.name for m in MEMBERS])
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
CHAT_TOOL: ChatCompletionToolParam = {
    "type": "function",
    "function": {"name": "get_weather", "description": "Weather in a city", "parameters": SCHEMA},
}
RESPONSES_TOOL: FunctionToolParam = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather in a city",
    "parameters": SCHEMA,
    "strict": True,
}
MESSAGES_TOOL: ToolParam = {
    "name": "get_weather",
    "description": "Weather in a city",
    "input_schema": SCHEMA,
}
QUESTION = "What is the weather in Oslo?"


def forced(member: Member) -> dict[str, str]:
    return {HEADER: member.tag}


@pytest.fixture
async def oai(gw: RunningGateway) -> AsyncIterator[openai.AsyncOpenAI]:
    sdk = openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key="unused", max_retries=0)
    yield sdk
    await sdk.close()


async def assert_served(
    gw: RunningGateway,
    fleet: Fleet,
    headers: Mapping[str, str],
    member: Member,
    before: dict[str, int],
) -> None:
    """The forced backend answered (header, decision) under its own model id, once, and no
    other engine was asked."""
    assert headers["x-switchyard-backend"] == member.name
    found = await gw.client.get(f"/v1/switchyard/decisions/{headers['x-switchyard-decision']}")
    decision = found.json()
    assert decision["route"] == ROUTE and decision["status"] == 200
    assert (decision["served_by"], decision["served_model"]) == (member.name, member.model)
    assert [(a["backend"], a["model"], a["outcome"]) for a in decision["attempts"]] == [
        (member.name, member.model, "ok")
    ]
    assert decision["placement"]["require_tags"] == [member.tag]
    expected = {m.name: before[m.name] + int(m is member) for m in MEMBERS}

    async def counted() -> bool:
        # An engine counts a request once its last byte is out, which may be a loop turn
        # after the client has read it.
        return completed(fleet) == expected

    await eventually(counted, f"{member.name} alone completed the request")


def completed(fleet: Fleet) -> dict[str, int]:
    """Each engine's completed inference requests: an engine refuses (404) a model id it
    does not serve, so a completion there means it was asked for its own."""
    return {name: engine.runtime.stats.completed for name, engine in fleet.engines.items()}


# -- openai SDK: chat completions -------------------------------------------------------


@BY_BACKEND
async def test_chat(
    oai: openai.AsyncOpenAI, gw: RunningGateway, fleet: Fleet, member: Member
) -> None:
    before = completed(fleet)
    raw = await oai.chat.completions.with_raw_response.create(
        model=ROUTE,
        messages=[{"role": "user", "content": QUESTION}],
        max_tokens=8,
        extra_headers=forced(member),
    )
    completion = raw.parse()
    assert completion.model == ROUTE
    [choice] = completion.choices
    assert choice.message.content and choice.finish_reason == "length"
    assert completion.usage is not None
    assert completion.usage.completion_tokens == 8 and completion.usage.prompt_tokens > 0
    await assert_served(gw, fleet, raw.headers, member, before)


@BY_BACKEND
async def test_chat_stream(
    oai: openai.AsyncOpenAI, gw: RunningGateway, fleet: Fleet, member: Member
) -> None:
    before = completed(fleet)
    raw = await oai.chat.completions.with_raw_response.create(
        model=ROUTE,
        messages=[{"role": "user", "content": QUESTION}],
        max_tokens=8,
        stream=True,
        stream_options={"include_usage": True},
        extra_headers=forced(member),
    )
    chunks = [chunk async for chunk in raw.parse()]
    assert {chunk.model for chunk in chunks} == {ROUTE}
    text = "".join(c.delta.content or "" for chunk in chunks for c in chunk.choices)
    assert len(text.split()) == 8
    finishes = [c.finish_reason for chunk in chunks for c in chunk.choices if c.finish_reason]
    assert finishes == ["length"]
    usage = chunks[-1].usage
    assert usage is not None and usage.completion_tokens == 8 and usage.prompt_tokens > 0
    await assert_served(gw, fleet, raw.headers, member, before)


@BY_BACKEND
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_chat_function_tool(
    oai: openai.AsyncOpenAI, gw: RunningGateway, fleet: Fleet, member: Member, stream: bool
) -> None:
    before = completed(fleet)
    ask: dict[str, Any] = {
        "model": ROUTE,
        "messages": [{"role": "user", "content": QUESTION}],
        "tools": [CHAT_TOOL],
        "tool_choice": "required",
        "extra_headers": forced(member),
    }
    if stream:
        raw_stream = await oai.chat.completions.with_raw_response.create(
            **ask, stream=True, stream_options={"include_usage": True}
        )
        chunks = [chunk async for chunk in raw_stream.parse()]
        deltas = [c.delta for chunk in chunks for c in chunk.choices]
        calls = [call for delta in deltas for call in delta.tool_calls or []]
        assert calls[0].function is not None and calls[0].function.name == "get_weather"
        arguments = "".join(call.function.arguments or "" for call in calls if call.function)
        finishes = [c.finish_reason for chunk in chunks for c in chunk.choices if c.finish_reason]
        assert finishes == ["tool_calls"]
        assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0
        headers = raw_stream.headers
    else:
        raw = await oai.chat.completions.with_raw_response.create(**ask)
        completion = raw.parse()
        assert completion.model == ROUTE
        [choice] = completion.choices
        assert choice.finish_reason == "tool_calls"
        [call] = choice.message.tool_calls or []
        assert call.type == "function" and call.function.name == "get_weather"
        assert call.id
        arguments = call.function.arguments
        assert completion.usage is not None and completion.usage.completion_tokens > 0
        headers = raw.headers
    assert isinstance(orjson.loads(arguments)["city"], str)
    await assert_served(gw, fleet, headers, member, before)


# -- openai SDK: responses --------------------------------------------------------------


@BY_BACKEND
async def test_responses_create(
    oai: openai.AsyncOpenAI, gw: RunningGateway, fleet: Fleet, member: Member
) -> None:
    before = completed(fleet)
    raw = await oai.responses.with_raw_response.create(
        model=ROUTE,
        instructions="Be terse.",
        input=QUESTION,
        max_output_tokens=16,
        extra_headers=forced(member),
    )
    response = raw.parse()
    assert response.model == ROUTE and response.output_text
    assert response.status == "incomplete" and response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    assert response.usage is not None
    assert response.usage.output_tokens == 16 and response.usage.input_tokens > 0
    await assert_served(gw, fleet, raw.headers, member, before)


@BY_BACKEND
async def test_responses_stream(
    oai: openai.AsyncOpenAI, gw: RunningGateway, fleet: Fleet, member: Member
) -> None:
    before = completed(fleet)
    raw = await oai.responses.with_raw_response.create(
        model=ROUTE, input=QUESTION, max_output_tokens=16, stream=True, extra_headers=forced(member)
    )
    events = [event async for event in raw.parse()]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text
    last = events[-1]
    assert last.type == "response.incomplete"
    assert last.response.model == ROUTE and last.response.output_text == text
    assert last.response.usage is not None and last.response.usage.output_tokens == 16
    await assert_served(gw, fleet, raw.headers, member, before)


@BY_BACKEND
async def test_responses_function_call(
    oai: openai.AsyncOpenAI, gw: RunningGateway, fleet: Fleet, member: Member
) -> None:
    before = completed(fleet)
    async with oai.responses.stream(
        model=ROUTE,
        input=QUESTION,
        tools=[RESPONSES_TOOL],
        tool_choice="required",
        extra_headers=forced(member),
    ) as stream:
        async for _ in stream:
            pass
        response = await stream.get_final_response()
    assert response.status == "completed"
    [call] = response.output
    assert call.type == "function_call" and call.name == "get_weather" and call.call_id
    assert isinstance(orjson.loads(call.arguments)["city"], str)
    assert response.model == ROUTE and response.usage is not None
    raw = await oai.responses.with_raw_response.create(
        model=ROUTE,
        input=QUESTION,
        tools=[RESPONSES_TOOL],
        tool_choice="required",
        extra_headers=forced(member),
    )
    [again] = raw.parse().output
    assert again.type == "function_call" and again.name == "get_weather"
    before[member.name] += 1  # the streamed call above
    await assert_served(gw, fleet, raw.headers, member, before)


# -- anthropic SDK: messages ------------------------------------------------------------


@BY_BACKEND
async def test_messages_create(
    claude_sdk: anthropic.AsyncAnthropic, gw: RunningGateway, fleet: Fleet, member: Member
) -> None:
    before = completed(fleet)
    raw = await claude_sdk.messages.with_raw_response.create(
        model=ROUTE,
        max_tokens=8,
        system="Be terse.",
        messages=[{"role": "user", "content": QUESTION}],
        extra_headers=forced(member),
    )
    message = await raw.parse()
    assert message.model == ROUTE and message.stop_reason == "max_tokens"
    [block] = message.content
    assert block.type == "text" and len(block.text.split()) == 8
    assert message.usage.output_tokens == 8 and message.usage.input_tokens > 0
    await assert_served(gw, fleet, raw.headers, member, before)


@BY_BACKEND
async def test_messages_stream(
    claude_sdk: anthropic.AsyncAnthropic, gw: RunningGateway, fleet: Fleet, member: Member
) -> None:
    before = completed(fleet)
    texts: list[str] = []
    async with claude_sdk.messages.stream(
        model=ROUTE,
        max_tokens=8,
        messages=[{"role": "user", "content": QUESTION}],
        extra_headers=forced(member),
    ) as stream:
        async for text in stream.text_stream:
            texts.append(text)
        final = await stream.get_final_message()
        headers = stream.response.headers
    assert final.model == ROUTE and final.stop_reason == "max_tokens"
    [block] = final.content
    assert block.type == "text" and block.text == "".join(texts)
    assert len(block.text.split()) == 8
    assert final.usage.output_tokens == 8 and final.usage.input_tokens > 0
    await assert_served(gw, fleet, headers, member, before)


@BY_BACKEND
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_messages_tool_use(
    claude_sdk: anthropic.AsyncAnthropic,
    gw: RunningGateway,
    fleet: Fleet,
    member: Member,
    stream: bool,
) -> None:
    before = completed(fleet)
    ask: dict[str, Any] = {
        "model": ROUTE,
        "max_tokens": 64,
        "messages": [{"role": "user", "content": QUESTION}],
        "tools": [MESSAGES_TOOL],
        "tool_choice": {"type": "any"},
        "extra_headers": forced(member),
    }
    if stream:
        async with claude_sdk.messages.stream(**ask) as streamed:
            message = await streamed.get_final_message()
            headers = streamed.response.headers
    else:
        raw = await claude_sdk.messages.with_raw_response.create(**ask)
        message, headers = await raw.parse(), raw.headers
    assert message.model == ROUTE and message.stop_reason == "tool_use"
    [call] = message.content
    assert call.type == "tool_use" and call.name == "get_weather"
    assert call.id and isinstance(call.input, dict) and isinstance(call.input["city"], str)
    assert message.usage.output_tokens > 0
    await assert_served(gw, fleet, headers, member, before)

    # The tool's result goes back through the same backend as an Anthropic turn.
    answer = await claude_sdk.messages.create(
        model=ROUTE,
        max_tokens=8,
        tools=[MESSAGES_TOOL],
        tool_choice={"type": "none"},
        messages=[
            {"role": "user", "content": QUESTION},
            {"role": "assistant", "content": message.content},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "sunny"}],
            },
        ],
        extra_headers=forced(member),
    )
    assert answer.content[0].type == "text" and answer.content[0].text
