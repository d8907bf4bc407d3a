"""Chat completions over real HTTP: shapes, streaming, tools, n, stop, logprobs, JSON modes."""

from __future__ import annotations

import httpx
import orjson
import pytest

from emulator.request_parsing import DEFAULT_CHAT_MAX_TOKENS
from tests.emulator.conftest import MODEL, chat_request, sse_payloads

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "detailed": {"type": "boolean"},
            },
            "required": ["city", "days", "unit"],
        },
    },
}
TIME_TOOL = {
    "type": "function",
    "function": {
        "name": "get_time",
        "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}},
    },
}


async def test_health_and_models(client: httpx.AsyncClient) -> None:
    health = await client.get(client.base_url.join("/health"))
    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    models = (await client.get("/models")).json()
    assert models["object"] == "list"
    assert [model["id"] for model in models["data"]] == [MODEL]


async def test_chat_returns_exactly_max_tokens(client: httpx.AsyncClient) -> None:
    response = await client.post("/chat/completions", json=chat_request(max_tokens=7))
    assert response.status_code == 200
    body = response.json()
    assert body["id"].startswith("chatcmpl-")
    assert (body["object"], body["model"]) == ("chat.completion", MODEL)
    assert isinstance(body["created"], int) and body["system_fingerprint"]
    choice = body["choices"][0]
    assert choice["finish_reason"] == "length"
    assert choice["message"]["role"] == "assistant"
    words = choice["message"]["content"]
    assert len(words.split()) == 7 and words.endswith(" ")
    assert body["usage"] == {
        "prompt_tokens": 1,
        "completion_tokens": 7,
        "total_tokens": 8,
        "prompt_tokens_details": {"cached_tokens": 0},
    }


@pytest.mark.parametrize(
    ("fields", "tokens"),
    [({}, DEFAULT_CHAT_MAX_TOKENS), ({"max_completion_tokens": 3, "max_tokens": 9}, 3)],
)
async def test_max_tokens_defaults(
    client: httpx.AsyncClient, fields: dict[str, int], tokens: int
) -> None:
    body = (await client.post("/chat/completions", json=chat_request(**fields))).json()
    assert body["usage"]["completion_tokens"] == tokens


async def test_prompt_tokens_estimate(client: httpx.AsyncClient) -> None:
    request = chat_request(messages=[{"role": "user", "content": "x" * 400}])
    body = (await client.post("/chat/completions", json=request)).json()
    assert body["usage"]["prompt_tokens"] == 100


async def test_seed_and_prompt_make_output_deterministic(client: httpx.AsyncClient) -> None:
    async def content(**fields: object) -> str:
        body = (await client.post("/chat/completions", json=chat_request(**fields))).json()
        text: str = body["choices"][0]["message"]["content"]
        return text

    assert await content(seed=1) == await content(seed=1)
    assert await content(seed=1) != await content(seed=2)
    assert await content() == await content()
    other_prompt = [{"role": "user", "content": "something else"}]
    assert await content() != await content(messages=other_prompt)


async def test_stream_with_usage(client: httpx.AsyncClient) -> None:
    request = chat_request(max_tokens=5, stream=True, stream_options={"include_usage": True})
    response = await client.post("/chat/completions", json=request)
    assert response.headers["content-type"].startswith("text/event-stream")
    payloads = sse_payloads(response.text)
    assert payloads[-1] == "[DONE]"
    chunks, usage_chunk = payloads[:-2], payloads[-2]
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"]["completion_tokens"] == 5
    assert all(chunk["usage"] is None for chunk in chunks)
    assert all(chunk["object"] == "chat.completion.chunk" for chunk in chunks)
    assert len({chunk["id"] for chunk in payloads[:-1]}) == 1
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    text = "".join(chunk["choices"][0]["delta"].get("content") or "" for chunk in chunks)
    assert len(text.split()) == 5


async def test_stream_without_usage_has_no_usage_field(client: httpx.AsyncClient) -> None:
    response = await client.post("/chat/completions", json=chat_request(stream=True))
    payloads = sse_payloads(response.text)
    assert payloads[-1] == "[DONE]"
    assert all("usage" not in chunk for chunk in payloads[:-1])


async def test_stream_and_non_stream_agree(client: httpx.AsyncClient) -> None:
    plain = (await client.post("/chat/completions", json=chat_request(seed=5))).json()
    streamed = await client.post("/chat/completions", json=chat_request(seed=5, stream=True))
    chunks = sse_payloads(streamed.text)[:-1]
    text = "".join(chunk["choices"][0]["delta"].get("content") or "" for chunk in chunks)
    assert text == plain["choices"][0]["message"]["content"]


async def test_tool_call(client: httpx.AsyncClient) -> None:
    request = chat_request(tools=[WEATHER_TOOL, TIME_TOOL])
    body = (await client.post("/chat/completions", json=request)).json()
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    (call,) = choice["message"]["tool_calls"]
    assert call["id"].startswith("call_") and call["type"] == "function"
    assert call["function"]["name"] == "get_weather"
    arguments = orjson.loads(call["function"]["arguments"])
    assert isinstance(arguments["city"], str)
    assert isinstance(arguments["days"], int)
    assert arguments["unit"] == "celsius"
    assert body["usage"]["completion_tokens"] >= 1


async def test_tool_call_produces_exactly_max_tokens(client: httpx.AsyncClient) -> None:
    request = chat_request(tools=[WEATHER_TOOL], max_tokens=120)
    body = (await client.post("/chat/completions", json=request)).json()
    assert body["usage"]["completion_tokens"] == 120
    (call,) = body["choices"][0]["message"]["tool_calls"]
    assert isinstance(orjson.loads(call["function"]["arguments"]), dict)


async def test_tool_choice_names_the_function(client: httpx.AsyncClient) -> None:
    named = {"type": "function", "function": {"name": "get_time"}}
    request = chat_request(tools=[WEATHER_TOOL, TIME_TOOL], tool_choice=named)
    body = (await client.post("/chat/completions", json=request)).json()
    call = body["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["name"] == "get_time"
    assert orjson.loads(call["function"]["arguments"]) == {"zone": "example"}


async def test_tool_choice_none_and_unknown(client: httpx.AsyncClient) -> None:
    none = chat_request(tools=[WEATHER_TOOL], tool_choice="none", max_tokens=2)
    body = (await client.post("/chat/completions", json=none)).json()
    assert body["choices"][0]["finish_reason"] == "length"
    unknown = {"type": "function", "function": {"name": "nope"}}
    response = await client.post(
        "/chat/completions", json=chat_request(tools=[WEATHER_TOOL], tool_choice=unknown)
    )
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "tool_choice"


async def test_streamed_tool_call_fragments(client: httpx.AsyncClient) -> None:
    request = chat_request(tools=[WEATHER_TOOL], stream=True)
    chunks = sse_payloads((await client.post("/chat/completions", json=request)).text)[:-1]
    deltas = [chunk["choices"][0]["delta"] for chunk in chunks]
    first = deltas[0]["tool_calls"][0]
    assert first["id"].startswith("call_") and first["function"]["name"] == "get_weather"
    fragments = [delta["tool_calls"][0] for delta in deltas[1:] if "tool_calls" in delta]
    assert len(fragments) > 1
    assert all("id" not in fragment for fragment in fragments)
    arguments = "".join(fragment["function"]["arguments"] for fragment in fragments)
    assert set(orjson.loads(arguments)) >= {"city", "days", "unit"}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


async def test_n_choices(client: httpx.AsyncClient) -> None:
    body = (await client.post("/chat/completions", json=chat_request(n=2, max_tokens=4))).json()
    assert [choice["index"] for choice in body["choices"]] == [0, 1]
    texts = {choice["message"]["content"] for choice in body["choices"]}
    assert len(texts) == 2
    assert body["usage"]["completion_tokens"] == 8
    streamed = await client.post(
        "/chat/completions", json=chat_request(n=2, max_tokens=4, stream=True)
    )
    chunks = sse_payloads(streamed.text)[:-1]
    finished = [c["choices"][0]["index"] for c in chunks if c["choices"][0]["finish_reason"]]
    assert sorted(finished) == [0, 1]


async def test_stop_cuts_before_the_stop_string(client: httpx.AsyncClient) -> None:
    full = (await client.post("/chat/completions", json=chat_request(seed=3, max_tokens=10))).json()
    text = full["choices"][0]["message"]["content"]
    stop = text.split()[4]
    request = chat_request(seed=3, max_tokens=10, stop=[stop, "never-generated"])
    body = (await client.post("/chat/completions", json=request)).json()
    choice = body["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert choice["message"]["content"] == text[: text.find(stop)]
    assert body["usage"]["completion_tokens"] <= 10
    absent = chat_request(seed=3, max_tokens=10, stop="never-generated")
    body = (await client.post("/chat/completions", json=absent)).json()
    assert body["choices"][0]["finish_reason"] == "length"


async def test_logprobs(client: httpx.AsyncClient) -> None:
    request = chat_request(max_tokens=4, logprobs=True, top_logprobs=3)
    body = (await client.post("/chat/completions", json=request)).json()
    choice = body["choices"][0]
    entries = choice["logprobs"]["content"]
    assert "".join(entry["token"] for entry in entries) == choice["message"]["content"]
    for entry in entries:
        assert entry["logprob"] < 0
        assert bytes(entry["bytes"]).decode() == entry["token"]
        assert len(entry["top_logprobs"]) == 3
    again = (await client.post("/chat/completions", json=request)).json()
    assert again["choices"][0]["logprobs"] == choice["logprobs"]
    streamed = await client.post("/chat/completions", json={**request, "stream": True})
    content_chunks = [
        chunk for chunk in sse_payloads(streamed.text)[:-1] if chunk["choices"][0]["logprobs"]
    ]
    assert [c["choices"][0]["logprobs"]["content"][0] for c in content_chunks] == entries


async def test_json_modes(client: httpx.AsyncClient) -> None:
    json_object = chat_request(response_format={"type": "json_object"}, max_tokens=8)
    body = (await client.post("/chat/completions", json=json_object)).json()
    assert isinstance(orjson.loads(body["choices"][0]["message"]["content"]), dict)
    assert body["usage"]["completion_tokens"] == 8
    schema = WEATHER_TOOL["function"]["parameters"]  # type: ignore[index]
    json_schema = chat_request(
        response_format={"type": "json_schema", "json_schema": {"name": "w", "schema": schema}}
    )
    body = (await client.post("/chat/completions", json=json_schema)).json()
    document = orjson.loads(body["choices"][0]["message"]["content"])
    assert set(document) == {"city", "days", "unit"}


@pytest.mark.parametrize(
    ("content", "status", "param"),
    [
        (orjson.dumps(chat_request(model="no-such-model")), 404, "model"),
        (b"{not json", 400, None),
        (b"[]", 400, None),
        (orjson.dumps({"model": MODEL}), 400, "messages"),
        (orjson.dumps(chat_request(max_tokens="many")), 400, "max_tokens"),
        (orjson.dumps(chat_request(n=0)), 400, "n"),
    ],
)
async def test_bad_requests_get_openai_errors(
    client: httpx.AsyncClient, content: bytes, status: int, param: str | None
) -> None:
    response = await client.post("/chat/completions", content=content)
    assert response.status_code == status
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["param"] == param
    assert error["type"] == "invalid_request_error"
