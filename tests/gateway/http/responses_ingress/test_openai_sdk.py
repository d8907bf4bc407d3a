"""`/v1/responses` as the official openai SDK sees it: `responses.create`, its streams and
its stream helper, over real loopback HTTP against an emulated engine."""

from __future__ import annotations

from collections.abc import AsyncIterator

import openai
import orjson
import pytest
from openai.types.responses import FunctionToolParam, ResponseInputParam

from tests.conftest import StartEmulator, StartGateway, make_config

WEATHER_TOOL: FunctionToolParam = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}


@pytest.fixture
async def client(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> AsyncIterator[openai.AsyncOpenAI]:
    engine = await start_emulator()
    gw = await start_gateway(make_config({"only": engine.base_url}))
    sdk = openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key="unused", max_retries=0)
    yield sdk
    await sdk.close()


async def test_create(client: openai.AsyncOpenAI) -> None:
    response = await client.responses.create(
        model="default", instructions="Be terse.", input="hello there", max_output_tokens=10
    )
    assert response.id.startswith("resp_") and response.model == "default"
    assert response.status == "incomplete" and response.output_text
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    assert response.usage is not None and response.usage.output_tokens == 10


async def test_create_streaming(client: openai.AsyncOpenAI) -> None:
    whole = await client.responses.create(model="default", input="hello", max_output_tokens=10)
    stream = await client.responses.create(
        model="default", input="hello", max_output_tokens=10, stream=True
    )
    events = [event async for event in stream]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert "".join(deltas) == whole.output_text
    last = events[-1]
    assert last.type == "response.incomplete" and last.response.output_text == whole.output_text


async def test_stream_helper_and_a_function_call_round_trip(client: openai.AsyncOpenAI) -> None:
    question: ResponseInputParam = [{"role": "user", "content": "weather in Oslo?"}]
    async with client.responses.stream(
        model="default", input=question, tools=[WEATHER_TOOL], tool_choice="required"
    ) as stream:
        async for _ in stream:
            pass
        response = await stream.get_final_response()
    [call] = response.output
    assert call.type == "function_call" and call.name == "get_weather"
    assert isinstance(orjson.loads(call.arguments)["city"], str)

    answer = await client.responses.create(
        model="default",
        input=[
            *question,
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments,
            },
            {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"},
        ],
        tools=[WEATHER_TOOL],
        tool_choice="none",
        max_output_tokens=8,
    )
    assert answer.output_text


async def test_refusals_raise_bad_request(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        await client.responses.create(
            model="default", input="hello", previous_response_id="resp_earlier"
        )
    assert raised.value.param == "previous_response_id"
    with pytest.raises(openai.BadRequestError) as raised:
        await client.responses.create(
            model="default", input="hello", tools=[{"type": "web_search"}]
        )
    assert raised.value.param == "tools.0.type"
    with pytest.raises(openai.NotFoundError):
        await client.responses.create(model="no-such-route", input="hello")


async def test_a_failure_mid_stream_is_seen(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    broken = await start_emulator(faults={"cut_stream_after_chunks": 3})
    gw = await start_gateway(make_config({"only": broken.base_url}))
    sdk = openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key="unused", max_retries=0)
    try:
        stream = await sdk.responses.create(
            model="default", input="hello", max_output_tokens=50, stream=True
        )
        events = [event async for event in stream]
        error, failed = events[-2:]
        assert error.type == "error" and error.code == "upstream_protocol_error"
        assert failed.type == "response.failed" and failed.response.status == "failed"
        assert failed.response.error is not None and failed.response.output_text
        async with sdk.responses.stream(
            model="default", input="hello", max_output_tokens=50
        ) as helper:
            with pytest.raises(RuntimeError, match=r"response\.completed"):
                await helper.get_final_response()
    finally:
        await sdk.close()
