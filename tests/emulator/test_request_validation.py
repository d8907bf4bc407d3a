"""Requests checked as real servers check them: a 400 naming the field, in each format's shape."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from emulator.server import EmulatorServer
from tests.emulator.conftest import ANTHROPIC_HEADERS, MODEL, chat_request

USER = {"role": "user", "content": "hi"}
GEMINI = f"/v1beta/models/{MODEL}:generateContent"


def _without(body: dict[str, Any], name: str) -> dict[str, Any]:
    return {key: value for key, value in body.items() if key != name}


@pytest.mark.parametrize(
    ("body", "param", "code"),
    [
        (
            chat_request(messages=[{"role": "hacker", "content": "hi"}]),
            "messages[0].role",
            "invalid_value",
        ),
        (
            chat_request(messages=[{"role": "user", "content": 5}]),
            "messages[0].content",
            "invalid_type",
        ),
        (
            chat_request(messages=[USER, {"role": "user"}]),
            "messages[1].content",
            "missing_required_parameter",
        ),
        (
            chat_request(messages=[{"role": "user", "content": [{"type": "text"}]}]),
            "messages[0].content[0].text",
            "missing_required_parameter",
        ),
        (chat_request(messages=["hi"]), "messages[0]", "invalid_type"),
        (chat_request(temperature="hot"), "temperature", "invalid_type"),
        (chat_request(temperature=2.5), "temperature", "decimal_above_max_value"),
        (chat_request(top_p=-0.1), "top_p", "decimal_below_min_value"),
        (chat_request(max_tokens=-1), "max_tokens", "integer_below_min_value"),
        (chat_request(max_tokens=1.0), "max_tokens", "invalid_type"),
        (chat_request(max_tokens=True), "max_tokens", "invalid_type"),
        (chat_request(n=0), "n", "integer_below_min_value"),
        (chat_request(stream="yes"), "stream", "invalid_type"),
        (chat_request(stop=[1]), "stop[0]", "invalid_type"),
        (chat_request(tool_choice="sometimes"), "tool_choice", "invalid_value"),
        (
            chat_request(tools=[{"type": "function"}]),
            "tools[0].function",
            "missing_required_parameter",
        ),
        (chat_request(min_tokens=20, max_tokens=10), "min_tokens", "invalid_value"),
        (_without(chat_request(), "messages"), "messages", "missing_required_parameter"),
        (_without(chat_request(), "model"), "model", "missing_required_parameter"),
        (chat_request(messages=[]), "messages", "invalid_value"),
    ],
)
async def test_chat_refusals_name_the_field(
    client: httpx.AsyncClient, body: dict[str, Any], param: str, code: str
) -> None:
    response = await client.post("/chat/completions", json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", param, code)
    assert param in error["message"] or "Invalid value" in error["message"]


async def test_chat_words_a_refusal_as_openai_does(client: httpx.AsyncClient) -> None:
    body = chat_request(messages=[{"role": "user", "content": 5}])
    error = (await client.post("/chat/completions", json=body)).json()["error"]
    assert error["message"] == (
        "Invalid type for 'messages[0].content': expected one of a string or an array, "
        "but got an integer instead."
    )
    body = chat_request(temperature="hot")
    error = (await client.post("/chat/completions", json=body)).json()["error"]
    assert error["message"] == (
        "Invalid type for 'temperature': expected a number, but got a string instead."
    )


async def test_unknown_fields_and_vllm_leniencies_are_accepted(client: httpx.AsyncClient) -> None:
    tool_result = {"role": "tool", "content": "sunny"}  # no tool_call_id, as vLLM allows
    image = {"type": "image_url", "image_url": {"url": "data:,"}}
    body = chat_request(
        messages=[{"role": "developer", "content": "Be brief."}, USER, tool_result],
        some_future_option={"x": 1},
        temperature=1,
        top_k=5,
    )
    body["messages"].append({"role": "user", "content": [image, {"type": "text", "text": "hi"}]})
    response = await client.post("/chat/completions", json=body)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    ("path", "body", "param"),
    [
        ("/completions", {"model": MODEL}, "prompt"),
        ("/completions", {"model": MODEL, "prompt": 5}, "prompt"),
        ("/completions", {"model": MODEL, "prompt": "x", "temperature": "hot"}, "temperature"),
        ("/completions", {"model": MODEL, "prompt": "x", "max_tokens": -1}, "max_tokens"),
        ("/completions", {"model": MODEL, "prompt": [], "n": 1}, "prompt"),
        ("/embeddings", {"model": MODEL, "input": 5}, "input"),
        (
            "/embeddings",
            {"model": MODEL, "input": "x", "encoding_format": "hex"},
            "encoding_format",
        ),
    ],
)
async def test_completions_and_embeddings_refusals_name_the_field(
    client: httpx.AsyncClient, path: str, body: dict[str, Any], param: str
) -> None:
    response = await client.post(path, json=body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == param


async def test_the_openai_sdk_sees_the_param(emulator: EmulatorServer) -> None:
    async with openai.AsyncOpenAI(
        base_url=emulator.base_url, api_key="unused", max_retries=0
    ) as sdk:
        with pytest.raises(openai.BadRequestError) as raised:
            await sdk.chat.completions.create(
                model=MODEL,
                messages=[{"role": "hacker", "content": "hi"}],  # type: ignore[misc,list-item]
            )
    assert raised.value.param == "messages[0].role"
    assert raised.value.code == "invalid_value"


def _message(**fields: Any) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 8, "messages": [USER], **fields}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (_message(messages=[{"role": "hacker", "content": "hi"}]), "messages.0.role"),
        (_message(messages=[{"role": "user", "content": 5}]), "messages.0.content"),
        (_message(messages=[{"role": "user", "content": [5]}]), "messages.0.content.0"),
        (
            _message(messages=[{"role": "user", "content": [{"type": "text", "text": 5}]}]),
            "messages.0.content.0.text",
        ),
        (
            _message(
                messages=[
                    USER,
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t", "name": "f"}],
                    },
                ]
            ),
            "messages.1.content.0.input",
        ),
        (_message(temperature="hot"), "temperature"),
        (_message(temperature=1.5), "temperature"),
        (_message(top_p=2), "top_p"),
        (_message(max_tokens=-1), "max_tokens"),
        (_without(_message(), "max_tokens"), "max_tokens"),
        (_without(_message(), "messages"), "messages"),
        (_without(_message(), "model"), "model"),
        (_message(tool_choice={"type": "sometimes"}), "tool_choice.type"),
        (_message(stop_sequences="END"), "stop_sequences"),
    ],
)
async def test_anthropic_refusals_name_the_field(
    root_client: httpx.AsyncClient, body: dict[str, Any], field: str
) -> None:
    response = await root_client.post("/v1/messages", json=body, headers=ANTHROPIC_HEADERS)
    assert response.status_code == 400, response.text
    document = response.json()
    assert document["type"] == "error"
    assert set(document["error"]) == {"type", "message"}
    assert document["error"]["type"] == "invalid_request_error"
    assert document["error"]["message"].startswith(f"{field}: ")


def _content(**fields: Any) -> dict[str, Any]:
    return {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], **fields}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (_content(contents=[{"role": "hacker", "parts": [{"text": "hi"}]}]), "contents[0].role"),
        (
            _content(contents=[{"role": "user", "parts": [{"text": 5}]}]),
            "contents[0].parts[0].text",
        ),
        (_content(contents=[{"role": "user"}]), "contents[0].parts"),
        (_content(generationConfig={"temperature": "hot"}), "generation_config.temperature"),
        (_content(generation_config={"temperature": 3}), "generation_config.temperature"),
        (_content(generationConfig={"topP": 1.5}), "generation_config.top_p"),
        (_content(generationConfig={"maxOutputTokens": -1}), "generation_config.max_output_tokens"),
        (_content(generationConfig={"candidateCount": 0}), "generation_config.candidate_count"),
        ({}, "contents"),
    ],
)
async def test_gemini_refusals_name_the_field(
    root_client: httpx.AsyncClient, body: dict[str, Any], field: str
) -> None:
    response = await root_client.post(GEMINI, json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["code"], error["status"]) == (400, "INVALID_ARGUMENT")
    assert f"'{field}'" in error["message"] or f".{field}:" in error["message"]
    [detail] = error["details"]
    assert detail["@type"] == "type.googleapis.com/google.rpc.BadRequest"
    assert detail["fieldViolations"][0]["field"] == field
