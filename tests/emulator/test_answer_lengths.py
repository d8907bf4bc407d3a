"""Answers that end on their own: the end-of-sequence draw, max_tokens as a cap, and the
exact lengths benchmarks ask for (a request's `ignore_eos`, the engine's setting)."""

from __future__ import annotations

import statistics
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from emulator.content.answer_length import AnswerLength, AnswerLengths
from emulator.server import EmulatorServer
from tests.emulator.conftest import (
    ANTHROPIC_HEADERS,
    MODEL,
    StartEmulator,
    chat_request,
    sse_events,
    sse_payloads,
)
from tests.emulator.test_chat import WEATHER_TOOL

# sigma 0: every answer that ends on its own is exactly the mean long.
TEN_TOKENS = {"ignore_eos": False, "output_tokens_mean": 10.0, "output_tokens_sigma": 0.0}
GEMINI = f"/v1beta/models/{MODEL}:generateContent"


@pytest.fixture
async def natural(start_emulator: StartEmulator) -> AsyncIterator[httpx.AsyncClient]:
    """An engine whose answers end on their own, at the default draw."""
    server = await start_emulator(ignore_eos=False)
    async with httpx.AsyncClient(base_url=server.origin, timeout=10) as http:
        yield http


@pytest.fixture
async def ten(start_emulator: StartEmulator) -> AsyncIterator[httpx.AsyncClient]:
    """An engine whose answers end on their own after exactly 10 tokens."""
    server = await start_emulator(**TEN_TOKENS)
    async with httpx.AsyncClient(base_url=server.origin, timeout=10) as http:
        yield http


async def _chat(http: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    response = await http.post("/v1/chat/completions", json=chat_request(**fields))
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_the_draw_is_lognormal_around_its_mean_and_repeats() -> None:
    lengths = AnswerLengths(mean_tokens=200.0, sigma=1.0)
    drawn = [lengths.draw(seed, 100_000).tokens for seed in range(4000)]
    assert statistics.fmean(drawn) == pytest.approx(200, rel=0.1)
    assert statistics.median(drawn) == pytest.approx(200 * 0.6065, rel=0.1)  # e^(-1/2)
    assert min(drawn) >= 1
    assert [lengths.draw(seed, 100_000).tokens for seed in range(50)] == drawn[:50]


@pytest.mark.parametrize(
    ("lengths", "kwargs", "expected"),
    [
        (AnswerLengths(10.0, 0.0), {}, AnswerLength(10, "stop")),
        (AnswerLengths(10.0, 0.0), {"min_tokens": 30}, AnswerLength(30, "stop")),
        (AnswerLengths(50.0, 0.0), {}, AnswerLength(40, "length")),
        (AnswerLengths(40.0, 0.0), {}, AnswerLength(40, "length")),
        (AnswerLengths(10.0, 0.0), {"ignore_eos": True}, AnswerLength(40, "length")),
        (AnswerLengths(10.0, 0.0, ignore_eos=True), {}, AnswerLength(40, "length")),
    ],
)
def test_max_tokens_caps_the_draw_and_ignore_eos_skips_it(
    lengths: AnswerLengths, kwargs: dict[str, Any], expected: AnswerLength
) -> None:
    assert lengths.draw(7, 40, **kwargs) == expected


async def test_a_typical_answer_stops_before_max_tokens(natural: httpx.AsyncClient) -> None:
    finishes, tokens = [], []
    for topic in range(30):
        message = {"role": "user", "content": f"Tell me about track {topic}."}
        body = await _chat(natural, messages=[message], max_tokens=2000)
        [choice] = body["choices"]
        finishes.append(choice["finish_reason"])
        tokens.append(body["usage"]["completion_tokens"])
        assert len(choice["message"]["content"].split()) == tokens[-1]
        again = await _chat(natural, messages=[message], max_tokens=2000)
        assert again["choices"][0]["message"] == choice["message"]  # the same length, words
    assert finishes.count("stop") >= 28
    assert all(count < 2000 for count, end in zip(tokens, finishes, strict=True) if end == "stop")
    assert len(set(tokens)) > 10


async def test_a_natural_answer_is_the_start_of_the_exact_one(ten: httpx.AsyncClient) -> None:
    short = await _chat(ten, max_tokens=50)
    exact = await _chat(ten, max_tokens=50, ignore_eos=True)
    assert (short["choices"][0]["finish_reason"], short["usage"]["completion_tokens"]) == (
        "stop",
        10,
    )
    assert (exact["choices"][0]["finish_reason"], exact["usage"]["completion_tokens"]) == (
        "length",
        50,
    )
    assert exact["choices"][0]["message"]["content"].startswith(
        short["choices"][0]["message"]["content"]
    )
    capped = await _chat(ten, max_tokens=4)
    assert (capped["choices"][0]["finish_reason"], capped["usage"]["completion_tokens"]) == (
        "length",
        4,
    )
    longer = await _chat(ten, max_tokens=50, min_tokens=25)
    assert (longer["choices"][0]["finish_reason"], longer["usage"]["completion_tokens"]) == (
        "stop",
        25,
    )


async def test_streams_and_completions_stop_too(ten: httpx.AsyncClient) -> None:
    streamed = await ten.post(
        "/v1/chat/completions",
        json=chat_request(max_tokens=50, stream=True, stream_options={"include_usage": True}),
    )
    chunks = sse_payloads(streamed.text)
    finishes = [c["choices"][0]["finish_reason"] for c in chunks[:-2] if c["choices"]]
    assert finishes[-1] == "stop" and chunks[-2]["usage"]["completion_tokens"] == 10
    completion = await ten.post("/v1/completions", json={"model": MODEL, "prompt": "x"})
    [choice] = completion.json()["choices"]  # OpenAI's default cap, 16, above the draw
    assert choice["finish_reason"] == "stop" and len(choice["text"].split()) == 10
    completion = await ten.post(
        "/v1/completions", json={"model": MODEL, "prompt": "x", "max_tokens": 4}
    )
    [choice] = completion.json()["choices"]
    assert choice["finish_reason"] == "length" and len(choice["text"].split()) == 4


async def test_anthropic_ends_its_turn_and_gemini_stops(ten: httpx.AsyncClient) -> None:
    request = {"model": MODEL, "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}
    message = (await ten.post("/v1/messages", json=request, headers=ANTHROPIC_HEADERS)).json()
    assert (message["stop_reason"], message["usage"]["output_tokens"]) == ("end_turn", 10)
    capped = {**request, "max_tokens": 4}
    message = (await ten.post("/v1/messages", json=capped, headers=ANTHROPIC_HEADERS)).json()
    assert (message["stop_reason"], message["usage"]["output_tokens"]) == ("max_tokens", 4)
    streamed = await ten.post(
        "/v1/messages", json={**request, "stream": True}, headers=ANTHROPIC_HEADERS
    )
    [delta] = [data for name, data in sse_events(streamed.text) if name == "message_delta"]
    assert delta["delta"]["stop_reason"] == "end_turn"

    contents = [{"role": "user", "parts": [{"text": "hi"}]}]
    answer = (await ten.post(GEMINI, json={"contents": contents})).json()
    assert answer["candidates"][0]["finishReason"] == "STOP"
    assert answer["usageMetadata"]["candidatesTokenCount"] == 10
    config = {"maxOutputTokens": 4}
    answer = (
        await ten.post(GEMINI, json={"contents": contents, "generationConfig": config})
    ).json()
    assert answer["candidates"][0]["finishReason"] == "MAX_TOKENS"


async def test_a_tool_call_is_as_long_as_its_arguments_unless_exact(
    ten: httpx.AsyncClient,
) -> None:
    natural = await _chat(ten, tools=[WEATHER_TOOL], max_tokens=120)
    [call] = natural["choices"][0]["message"]["tool_calls"]
    arguments = call["function"]["arguments"]
    assert natural["usage"]["completion_tokens"] == -(-len(arguments) // 4) < 120
    exact = await _chat(ten, tools=[WEATHER_TOOL], max_tokens=120, ignore_eos=True)
    assert exact["usage"]["completion_tokens"] == 120
    [call] = exact["choices"][0]["message"]["tool_calls"]
    assert orjson.loads(call["function"]["arguments"]) == orjson.loads(arguments)


async def test_the_engine_setting_makes_every_answer_exact(
    start_emulator: StartEmulator,
) -> None:
    server: EmulatorServer = await start_emulator(**{**TEN_TOKENS, "ignore_eos": True})
    async with httpx.AsyncClient(base_url=server.origin, timeout=10) as http:
        body = await _chat(http, max_tokens=77)
        assert (body["choices"][0]["finish_reason"], body["usage"]["completion_tokens"]) == (
            "length",
            77,
        )
        request = {"model": MODEL, "max_tokens": 33, "messages": [{"role": "user", "content": "x"}]}
        message = (await http.post("/v1/messages", json=request, headers=ANTHROPIC_HEADERS)).json()
        assert (message["stop_reason"], message["usage"]["output_tokens"]) == ("max_tokens", 33)
