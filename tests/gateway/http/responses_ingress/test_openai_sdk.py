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


async def test_an_answer_that_ends_on_its_own_completes_the_stream_helper(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    # The engine's answers end on their own, as a real engine's do: no max_output_tokens
    # asked, the response is "completed" and the stream helper gets its final response.
    engine = await start_emulator(ignore_eos=False)
    gw = await start_gateway(make_config({"only": engine.base_url}))
    sdk = openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key="unused", max_retries=0)
    try:
        async with sdk.responses.stream(model="default", input="hello there") as stream:
            async for _ in stream:
                pass
            response = await stream.get_final_response()
        assert response.status == "completed" and response.incomplete_details is None
        assert response.output_text and response.usage is not None
        whole = await sdk.responses.create(model="default", input="hello there")
        assert (whole.status, whole.output_text) == ("completed", response.output_text)
        # The tool's result is answered in text, the tools still offered.
        question: ResponseInputParam = [{"role": "user", "content": "weather in Oslo?"}]
        call = await sdk.responses.create(model="default", input=question, tools=[WEATHER_TOOL])
        [item] = call.output
        assert item.type == "function_call"
        result: ResponseInputParam = [
            *question,
            {
                "type": "function_call",
                "call_id": item.call_id,
                "name": item.name,
                "arguments": item.arguments,
            },
            {"type": "function_call_output", "call_id": item.call_id, "output": "sunny"},
        ]
        answer = await sdk.responses.create(model="default", input=result, tools=[WEATHER_TOOL])
        assert answer.status == "completed" and answer.output_text
        assert [output.type for output in answer.output] == ["message"]
    finally:
        await sdk.close()


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"input": [{"role": "hacker", "content": "hi"}]}, "input.0.role"),
        ({"input": [{"role": "user", "content": 5}]}, "input.0.content"),
        ({"temperature": "hot"}, "temperature"),
        ({"temperature": 3}, "temperature"),
        ({"top_p": 1.5}, "top_p"),
        ({"max_output_tokens": -1}, "max_output_tokens"),
        ({"model": None}, "model"),
        ({"input": None}, "input"),
    ],
)
async def test_bad_fields_are_refused_with_their_param(
    client: openai.AsyncOpenAI, fields: dict[str, object], param: str
) -> None:
    asked: dict[str, object] = {"model": "default", "input": "hello", **fields}
    body = {name: value for name, value in asked.items() if value is not None}  # None: left out
    with pytest.raises(openai.BadRequestError) as raised:
        await client.post("/responses", body=body, cast_to=object)
    assert raised.value.param == param
    assert (
        isinstance(raised.value.body, dict) and raised.value.body["type"] == "invalid_request_error"
    )


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
