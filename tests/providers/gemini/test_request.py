"""OpenAI chat requests as Gemini `generateContent` bodies: one row per translation rule."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from providers.errors import UnsupportedRequest
from providers.gemini.request import SKIP_SIGNATURE, translate_request

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "Weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "weather", "arguments": '{"city":"Oslo"}'},
}
USER = {"role": "user", "content": "hi"}


def gemini_body(**request: Any) -> dict[str, Any]:
    request.setdefault("model", "gemini-2.5-flash")
    request.setdefault("messages", [USER])
    return orjson.loads(translate_request(orjson.dumps(request)).body)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("messages", "system", "contents"),
    [
        pytest.param(
            [
                {"role": "system", "content": "Be brief."},
                {"role": "developer", "content": "No jokes."},
                USER,
            ],
            {"parts": [{"text": "Be brief."}, {"text": "No jokes."}]},
            [{"role": "user", "parts": [{"text": "hi"}]}],
            id="system-and-developer-become-system-instruction",
        ),
        pytest.param(
            [
                {
                    "role": "system",
                    "content": [{"type": "text", "text": "A"}, {"type": "text", "text": "B"}],
                },
                USER,
            ],
            {"parts": [{"text": "A"}, {"text": "B"}]},
            [{"role": "user", "parts": [{"text": "hi"}]}],
            id="system-text-parts",
        ),
        pytest.param(
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is this?"},
                        {
                            "type": "image_url",
                            "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
                        },
                        {
                            "type": "input_audio",
                            "input_audio": {"data": "UklGRg==", "format": "wav"},
                        },
                        {
                            "type": "file",
                            "file": {"file_data": "data:application/pdf;base64,JVBERi0="},
                        },
                    ],
                }
            ],
            None,
            [
                {
                    "role": "user",
                    "parts": [
                        {"text": "What is this?"},
                        {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                        {"inlineData": {"mimeType": "audio/wav", "data": "UklGRg=="}},
                        {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0="}},
                    ],
                }
            ],
            id="multipart-user-content-becomes-inline-data",
        ),
        pytest.param(
            [
                USER,
                {"role": "assistant", "content": "Hello!"},
                {"role": "user", "content": "again"},
            ],
            None,
            [
                {"role": "user", "parts": [{"text": "hi"}]},
                {"role": "model", "parts": [{"text": "Hello!"}]},
                {"role": "user", "parts": [{"text": "again"}]},
            ],
            id="assistant-is-model",
        ),
        pytest.param(
            [
                USER,
                {
                    "role": "assistant",
                    "content": "Checking.",
                    "tool_calls": [
                        CALL,
                        {**CALL, "id": "call_2", "function": {"name": "time", "arguments": "{}"}},
                    ],
                },
                {"role": "tool", "tool_call_id": "call_2", "content": "noon"},
                {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 4}'},
                {"role": "user", "content": "thanks"},
            ],
            None,
            [
                {"role": "user", "parts": [{"text": "hi"}]},
                {
                    "role": "model",
                    "parts": [
                        {"text": "Checking."},
                        {"functionCall": {"name": "weather", "args": {"city": "Oslo"}}},
                        {"functionCall": {"name": "time", "args": {}}},
                    ],
                },
                {
                    "role": "user",
                    "parts": [
                        {"functionResponse": {"name": "time", "response": {"result": "noon"}}},
                        {"functionResponse": {"name": "weather", "response": {"temp_c": 4}}},
                    ],
                },
                {"role": "user", "parts": [{"text": "thanks"}]},
            ],
            id="tool-calls-and-their-answers-by-id-in-one-turn",
        ),
        pytest.param(
            [USER, {"role": "assistant", "content": ""}, {"role": "user", "content": "?"}],
            None,
            [
                {"role": "user", "parts": [{"text": "hi"}]},
                {"role": "user", "parts": [{"text": "?"}]},
            ],
            id="empty-turns-are-dropped",
        ),
    ],
)
def test_messages(
    messages: list[dict[str, Any]], system: dict[str, Any] | None, contents: list[dict[str, Any]]
) -> None:
    body = gemini_body(messages=messages)
    assert body.get("systemInstruction") == system
    assert body["contents"] == contents


def test_tools_become_function_declarations_with_their_json_schema() -> None:
    body = gemini_body(tools=[WEATHER_TOOL, {"type": "function", "function": {"name": "now"}}])
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "weather",
                    "description": "Weather in a city",
                    "parametersJsonSchema": WEATHER_TOOL["function"]["parameters"],  # type: ignore[index]
                },
                {"name": "now"},
            ]
        }
    ]
    assert "toolConfig" not in body


@pytest.mark.parametrize(
    ("tool_choice", "calling"),
    [
        ("auto", {"mode": "AUTO"}),
        ("none", {"mode": "NONE"}),
        ("required", {"mode": "ANY"}),
        (
            {"type": "function", "function": {"name": "weather"}},
            {"mode": "ANY", "allowedFunctionNames": ["weather"]},
        ),
    ],
)
def test_tool_choice(tool_choice: Any, calling: dict[str, Any]) -> None:
    body = gemini_body(tools=[WEATHER_TOOL], tool_choice=tool_choice)
    assert body["toolConfig"] == {"functionCallingConfig": calling}


def test_tool_choice_without_tools_says_nothing() -> None:
    assert "toolConfig" not in gemini_body(tool_choice="required")


@pytest.mark.parametrize(
    ("options", "config"),
    [
        ({}, None),
        (
            {"max_tokens": 64, "temperature": 0.2, "top_p": 0.9, "stop": "END", "n": 1, "seed": 7},
            {
                "maxOutputTokens": 64,
                "temperature": 0.2,
                "topP": 0.9,
                "stopSequences": ["END"],
                "candidateCount": 1,
                "seed": 7,
            },
        ),
        (
            {"max_completion_tokens": 32, "max_tokens": 64, "stop": ["a", "b"]},
            {"maxOutputTokens": 32, "stopSequences": ["a", "b"]},
        ),
        (
            {"presence_penalty": 0.5, "frequency_penalty": -0.5},
            {"presencePenalty": 0.5, "frequencyPenalty": -0.5},
        ),
        ({"response_format": {"type": "json_object"}}, {"responseMimeType": "application/json"}),
        (
            {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "x", "schema": {"type": "object"}},
                }
            },
            {"responseMimeType": "application/json", "responseJsonSchema": {"type": "object"}},
        ),
        ({"response_format": {"type": "text"}}, None),
    ],
)
def test_generation_config(options: dict[str, Any], config: dict[str, Any] | None) -> None:
    assert gemini_body(**options).get("generationConfig") == config


@pytest.mark.parametrize(
    ("model", "effort", "thinking"),
    [
        ("gemini-2.5-flash", "low", {"includeThoughts": True, "thinkingBudget": 1024}),
        ("gemini-2.5-flash", "medium", {"includeThoughts": True, "thinkingBudget": 8192}),
        ("gemini-2.5-pro", "high", {"includeThoughts": True, "thinkingBudget": 24576}),
        ("gemini-2.5-flash", "none", {"includeThoughts": False, "thinkingBudget": 0}),
        ("gemini-3-pro-preview", "low", {"includeThoughts": True, "thinkingLevel": "low"}),
        ("models/gemini-3-flash", "medium", {"includeThoughts": True, "thinkingLevel": "medium"}),
        ("gemini-3-flash", "none", {"includeThoughts": False, "thinkingLevel": "minimal"}),
    ],
)
def test_reasoning_effort_becomes_thinking_config(
    model: str, effort: str, thinking: dict[str, Any]
) -> None:
    body = gemini_body(model=model, reasoning_effort=effort)
    assert body["generationConfig"] == {"thinkingConfig": thinking}


def test_thought_signatures_go_back_on_their_calls() -> None:
    signed = {**CALL, "extra_content": {"google": {"thought_signature": "c2lnbmF0dXJl"}}}
    unsigned = {**CALL, "id": "call_2"}
    messages = [USER, {"role": "assistant", "tool_calls": [signed, unsigned]}]
    parts = gemini_body(model="gemini-2.5-flash", messages=messages)["contents"][1]["parts"]
    assert [p.get("thoughtSignature") for p in parts] == ["c2lnbmF0dXJl", None]


@pytest.mark.parametrize(
    ("model", "signature"), [("gemini-3-pro-preview", SKIP_SIGNATURE), ("gemini-2.5-pro", None)]
)
def test_unsigned_history_gets_the_stand_in_signature_where_required(
    model: str, signature: str | None
) -> None:
    messages = [USER, {"role": "assistant", "tool_calls": [CALL, {**CALL, "id": "call_2"}]}]
    parts = gemini_body(model=model, messages=messages)["contents"][1]["parts"]
    assert [p.get("thoughtSignature") for p in parts] == [signature, None]


def test_calls_go_to_the_model_resource() -> None:
    call = translate_request(
        orjson.dumps(
            {
                "model": "gemini-2.5-flash",
                "messages": [USER],
                "stream": True,
                "stream_options": {"include_usage": True},
            }
        )
    )
    assert call.generate().path == "/models/gemini-2.5-flash:generateContent"
    assert call.stream().path == "/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert call.include_usage
    tuned = translate_request(orjson.dumps({"model": "tunedModels/my-model", "messages": [USER]}))
    assert tuned.generate().path == "/tunedModels/my-model:generateContent"


@pytest.mark.parametrize(
    ("request_fields", "param", "words"),
    [
        ({"n": 2}, "n", "n must be 1"),
        ({"reasoning_effort": "extreme"}, "reasoning_effort", "reasoning_effort"),
        ({"tools": [{"type": "custom", "custom": {"name": "x"}}]}, "tools", "custom"),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "image_url", "image_url": {"url": "https://x/cat.png"}}
                        ],
                    }
                ]
            },
            "messages",
            "data URL",
        ),
        (
            {"messages": [{"role": "tool", "tool_call_id": "nope", "content": "x"}]},
            "messages",
            "nope",
        ),
        (
            {
                "messages": [
                    USER,
                    {
                        "role": "assistant",
                        "tool_calls": [{**CALL, "function": {"name": "f", "arguments": "[1]"}}],
                    },
                ]
            },
            "messages",
            "JSON object",
        ),
        ({"messages": []}, "messages", "invalid chat request"),
        (
            {"messages": [{"role": "robot", "content": "x"}]},
            "messages.0.role",
            "invalid chat request",
        ),
    ],
)
def test_untranslatable_requests_are_clear_non_retryable_400s(
    request_fields: dict[str, Any], param: str, words: str
) -> None:
    with pytest.raises(UnsupportedRequest) as caught:
        gemini_body(**request_fields)
    error = caught.value
    assert (error.status, error.type, error.retryable, error.param) == (
        400,
        "invalid_request_error",
        False,
        param,
    )
    assert words in error.message


def test_a_body_that_is_not_json_is_a_400() -> None:
    with pytest.raises(UnsupportedRequest) as caught:
        translate_request(b"{not json")
    assert caught.value.status == 400
    assert caught.value.code == "invalid_request"
