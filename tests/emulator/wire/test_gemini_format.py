"""Gemini's API under /v1beta: generateContent, its SSE stream, tools, thinking, errors, usage."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.emulator.conftest import MODEL, StartEmulator, sse_events

GENERATE = f"/v1beta/models/{MODEL}:generateContent"
STREAM = f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"
WEATHER = {
    "name": "get_weather",
    "parameters": {
        "type": "OBJECT",
        "properties": {"city": {"type": "STRING"}, "days": {"type": "INTEGER"}},
        "required": ["city", "days"],
    },
}
SYSTEM = "Answer in the style of a railway timetable. " * 40


def content_request(max_tokens: int = 6, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "contents": [{"role": "user", "parts": [{"text": "hello"}]}],
        "generationConfig": {"maxOutputTokens": max_tokens},
    }
    body.update(fields)
    return body


def _text(candidate: dict[str, Any]) -> str:
    return "".join(part.get("text", "") for part in candidate["content"]["parts"])


async def test_generate_content_has_a_candidate_and_usage(root_client: httpx.AsyncClient) -> None:
    response = await root_client.post(GENERATE, json=content_request())
    assert response.status_code == 200, response.text
    answer = response.json()
    [candidate] = answer["candidates"]
    assert candidate["content"]["role"] == "model" and candidate["index"] == 0
    assert len(_text(candidate).split()) == 6
    assert candidate["finishReason"] == "MAX_TOKENS"
    assert answer["usageMetadata"] == {
        "promptTokenCount": 1,
        "candidatesTokenCount": 6,
        "totalTokenCount": 7,
        "cachedContentTokenCount": 0,
    }
    assert answer["modelVersion"] == MODEL and answer["responseId"]
    chat = {"model": MODEL, "max_tokens": 6, "messages": [{"role": "user", "content": "hello"}]}
    openai = (await root_client.post("/v1/chat/completions", json=chat)).json()
    assert _text(candidate) == openai["choices"][0]["message"]["content"]


async def test_the_stream_sends_a_part_per_step_then_finishes(
    root_client: httpx.AsyncClient,
) -> None:
    whole = (await root_client.post(GENERATE, json=content_request())).json()
    response = await root_client.post(STREAM, json=content_request())
    assert response.headers["content-type"] == "text/event-stream"
    assert "\r\n\r\n" in response.text
    events = [data for _, data in sse_events(response.text)]
    assert len(events) == 6
    assert "".join(_text(event["candidates"][0]) for event in events) == _text(
        whole["candidates"][0]
    )
    assert all("finishReason" not in event["candidates"][0] for event in events[:-1])
    assert events[-1]["candidates"][0]["finishReason"] == "MAX_TOKENS"
    assert "usageMetadata" not in events[0]
    assert events[-1]["usageMetadata"]["candidatesTokenCount"] == 6


async def test_streaming_needs_alt_sse(root_client: httpx.AsyncClient) -> None:
    response = await root_client.post(STREAM.removesuffix("?alt=sse"), json=content_request())
    assert response.status_code == 400
    assert response.json()["error"]["status"] == "INVALID_ARGUMENT"


async def test_function_declarations_make_a_function_call(root_client: httpx.AsyncClient) -> None:
    request = content_request(tools=[{"functionDeclarations": [WEATHER]}])
    answer = (await root_client.post(GENERATE, json=request)).json()
    [candidate] = answer["candidates"]
    [part] = candidate["content"]["parts"]
    assert part["functionCall"] == {"name": "get_weather", "args": {"city": "example", "days": 1}}
    assert candidate["finishReason"] == "STOP"
    # The call comes whole in the stream's last event.
    events = [data for _, data in sse_events((await root_client.post(STREAM, json=request)).text)]
    assert len(events) == 1
    assert events[0]["candidates"][0]["content"]["parts"] == [part]
    # NONE: no call; ANY with allowed names: that function.
    time = {"name": "get_time", "parametersJsonSchema": {"type": "object"}}
    tools = [{"functionDeclarations": [WEATHER, time]}]
    none = {"functionCallingConfig": {"mode": "NONE"}}
    quiet = (await root_client.post(GENERATE, json={**request, "toolConfig": none})).json()
    assert "functionCall" not in quiet["candidates"][0]["content"]["parts"][0]
    named = {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_time"]}}
    chosen = {**request, "tools": tools, "toolConfig": named}
    parts = (await root_client.post(GENERATE, json=chosen)).json()["candidates"][0]["content"]
    assert parts["parts"][0]["functionCall"] == {"name": "get_time", "args": {}}


async def test_a_function_response_turn_is_read(root_client: httpx.AsyncClient) -> None:
    contents = [
        {"role": "user", "parts": [{"text": "Weather in x?"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {}}}]},
    ]
    request = content_request(
        contents=contents, systemInstruction={"parts": [{"text": "Be brief."}]}
    )
    response = await root_client.post(GENERATE, json=request)
    assert response.status_code == 200, response.text
    assert response.json()["usageMetadata"]["promptTokenCount"] > 1


async def test_thinking_shows_thoughts_and_counts_them(root_client: httpx.AsyncClient) -> None:
    thinking = {"thinkingBudget": 3, "includeThoughts": True}
    request = content_request(generationConfig={"maxOutputTokens": 8, "thinkingConfig": thinking})
    answer = (await root_client.post(GENERATE, json=request)).json()
    thought, text = answer["candidates"][0]["content"]["parts"]
    assert thought["thought"] is True and len(thought["text"].split()) == 3
    assert len(text["text"].split()) == 5 and "thought" not in text
    usage = answer["usageMetadata"]
    assert (usage["thoughtsTokenCount"], usage["candidatesTokenCount"]) == (3, 5)
    events = [data for _, data in sse_events((await root_client.post(STREAM, json=request)).text)]
    flags = [event["candidates"][0]["content"]["parts"][0].get("thought") for event in events]
    assert flags == [True] * 3 + [None] * 5
    # Without includeThoughts the thinking takes its time and tokens but is not shown.
    hidden = {"maxOutputTokens": 8, "thinkingConfig": {"thinkingBudget": 3}}
    quiet = (await root_client.post(GENERATE, json={**request, "generationConfig": hidden})).json()
    assert len(quiet["candidates"][0]["content"]["parts"]) == 1
    assert quiet["usageMetadata"]["thoughtsTokenCount"] == 3


async def test_json_mode_and_candidates(root_client: httpx.AsyncClient) -> None:
    schema = {"type": "OBJECT", "properties": {"n": {"type": "INTEGER"}}, "required": ["n"]}
    config = {"responseMimeType": "application/json", "responseSchema": schema}
    request = content_request(generationConfig=config)
    answer = (await root_client.post(GENERATE, json=request)).json()
    assert _text(answer["candidates"][0]) == '{"n":1}'
    request = content_request(generationConfig={"maxOutputTokens": 3, "candidateCount": 2})
    answer = (await root_client.post(GENERATE, json=request)).json()
    assert [candidate["index"] for candidate in answer["candidates"]] == [0, 1]
    assert answer["usageMetadata"]["candidatesTokenCount"] == 6


async def test_a_repeated_prompt_reports_cached_content_tokens(
    start_emulator: StartEmulator,
) -> None:
    server = await start_emulator(cost_model="batched", time_scale=0.01)
    request = content_request(systemInstruction={"parts": [{"text": SYSTEM}]})
    async with httpx.AsyncClient(base_url=server.origin) as http:
        first = (await http.post(GENERATE, json=request)).json()["usageMetadata"]
        second = (await http.post(GENERATE, json=request)).json()["usageMetadata"]
        streamed = sse_events((await http.post(STREAM, json=request)).text)
    assert first["cachedContentTokenCount"] == 0
    assert second["promptTokenCount"] == first["promptTokenCount"]
    assert second["cachedContentTokenCount"] > first["promptTokenCount"] // 2
    assert streamed[-1][1]["usageMetadata"]["cachedContentTokenCount"] > 0


@pytest.mark.parametrize(
    ("path", "body", "status", "name"),
    [
        (GENERATE, {"contents": []}, 400, "INVALID_ARGUMENT"),
        (GENERATE, content_request(max_tokens=0), 400, "INVALID_ARGUMENT"),
        ("/v1beta/models/missing:generateContent", content_request(), 404, "NOT_FOUND"),
    ],
)
async def test_bad_requests_get_google_errors(
    root_client: httpx.AsyncClient, path: str, body: dict[str, Any], status: int, name: str
) -> None:
    response = await root_client.post(path, json=body)
    assert response.status_code == status
    error = response.json()["error"]
    assert (error["code"], error["status"]) == (status, name) and error["message"]


async def test_the_key_is_checked_when_configured(start_emulator: StartEmulator) -> None:
    server = await start_emulator(api_key="secret")
    async with httpx.AsyncClient(base_url=server.origin) as http:
        for headers in ({}, {"x-goog-api-key": "wrong"}):
            refused = await http.post(GENERATE, json=content_request(), headers=headers)
            assert refused.status_code == 401
            assert refused.json()["error"]["status"] == "UNAUTHENTICATED"
        good = {"x-goog-api-key": "secret"}
        assert (await http.post(GENERATE, json=content_request(), headers=good)).status_code == 200
        assert (
            await http.post(GENERATE + "?key=secret", json=content_request())
        ).status_code == 200
        assert (await http.get("/v1beta/models")).status_code == 401


async def test_injected_failures_and_rate_limits(start_emulator: StartEmulator) -> None:
    faults = {"fail_status": 503, "fail_count": 1}
    server = await start_emulator(faults=faults, rate_limit_requests_per_minute=1)
    async with httpx.AsyncClient(base_url=server.origin) as http:
        unavailable = await http.post(GENERATE, json=content_request())
        assert unavailable.status_code == 503
        assert unavailable.json()["error"] == {
            "code": 503,
            "message": "Emulated failure (503).",
            "status": "UNAVAILABLE",
        }
        assert (await http.post(GENERATE, json=content_request())).status_code == 200
        exhausted = await http.post(GENERATE, json=content_request())
    assert exhausted.status_code == 429
    error = exhausted.json()["error"]
    assert error["status"] == "RESOURCE_EXHAUSTED"
    [retry] = error["details"]
    assert retry["@type"] == "type.googleapis.com/google.rpc.RetryInfo"
    assert 0 < float(retry["retryDelay"].removesuffix("s")) <= 60


async def test_stream_error_event_mid_stream(start_emulator: StartEmulator) -> None:
    server = await start_emulator(faults={"error_event_after_chunks": 2})
    async with httpx.AsyncClient(base_url=server.origin) as http:
        response = await http.post(STREAM, json=content_request())
    events = [data for _, data in sse_events(response.text)]
    assert len(events) == 3 and "candidates" in events[1]
    assert events[-1] == {
        "error": {"code": 503, "message": "Emulated failure mid-stream.", "status": "UNAVAILABLE"}
    }


async def test_models_list_and_get(root_client: httpx.AsyncClient) -> None:
    listing = (await root_client.get("/v1beta/models")).json()
    [model] = listing["models"]
    assert model["name"] == f"models/{MODEL}"
    assert "generateContent" in model["supportedGenerationMethods"]
    assert (await root_client.get(f"/v1beta/models/{MODEL}")).json() == model
    missing = await root_client.get("/v1beta/models/missing")
    assert missing.status_code == 404 and missing.json()["error"]["status"] == "NOT_FOUND"


async def test_needles_are_found_in_gemini_prompts(root_client: httpx.AsyncClient) -> None:
    statement = 'Notes. The secret value for key "k-1" is "blue42". More notes.'
    question = 'Reply with the secret value for key "k-1"'
    contents = [{"role": "user", "parts": [{"text": statement}, {"text": question}]}]
    answer = (await root_client.post(GENERATE, json=content_request(contents=contents))).json()
    [candidate] = answer["candidates"]
    assert (_text(candidate), candidate["finishReason"]) == ("blue42", "STOP")
