"""Needle retrieval, silent context truncation and a substituted model, over real HTTP."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from emulator.content.needle import NOT_FOUND
from emulator.content.text import split_pieces
from emulator.engine.context_window import keep_tail
from tests.emulator.conftest import (
    MODEL,
    StartEmulator,
    chat_request,
    control_url,
    sse_payloads,
    stats,
)

KEY, VALUE = "depot-7", "amber_river_42"
NEEDLE = f'The secret value for key "{KEY}" is "{VALUE}".'
QUESTION = f'Reply with the secret value for key "{KEY}" and nothing else.'
FILLER = "The night train stops at every station along the river. " * 80  # ~1,100 tokens
CANARY_PROMPTS = (
    "Complete the sequence with the next number only: 2, 4, 8, 16,",
    "Name the capital of France in one word.",
    "Continue the phrase with one word: The quick brown fox jumps over the lazy",
)
FAST = {"time_scale": 0.01}


def _needle_request(context: str, **fields: Any) -> dict[str, Any]:
    messages = [
        {"role": "system", "content": "You answer from the document."},
        {"role": "user", "content": f"{context}\n\n{QUESTION}"},
    ]
    return chat_request(messages=messages, max_tokens=50, **fields)


async def _answer(http: httpx.AsyncClient, body: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(content, finish_reason, usage) of a chat completion, streamed or not."""
    response = await http.post("/chat/completions", json=body)
    assert response.status_code == 200, response.text
    if not body.get("stream"):
        choice = response.json()["choices"][0]
        return choice["message"]["content"], choice["finish_reason"], response.json()["usage"]
    payloads = sse_payloads(response.text)
    chunks = [p for p in payloads[:-1] if p["choices"]]
    text = "".join(chunk["choices"][0]["delta"].get("content") or "" for chunk in chunks)
    usage = next(p["usage"] for p in payloads[:-1] if not p["choices"])
    return text, chunks[-1]["choices"][0]["finish_reason"], usage


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("context", "expected"),
    [
        (NEEDLE + FILLER, VALUE),
        (FILLER + NEEDLE + FILLER, VALUE),
        (FILLER, NOT_FOUND),
        (FILLER + NEEDLE.replace(KEY, "other-key"), NOT_FOUND),
    ],
)
async def test_needle_on_a_healthy_engine(
    start_emulator: StartEmulator, stream: bool, context: str, expected: str
) -> None:
    server = await start_emulator()
    options = {"stream_options": {"include_usage": True}} if stream else {}
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        body = _needle_request(context, stream=stream, **options)
        text, finish, usage = await _answer(http, body)
    assert (text, finish) == (expected, "stop")
    assert usage["completion_tokens"] == len(split_pieces(expected))


async def test_needle_question_only_counts_in_the_last_user_message(
    start_emulator: StartEmulator,
) -> None:
    server = await start_emulator()
    messages = [
        {"role": "user", "content": NEEDLE + QUESTION},
        {"role": "assistant", "content": VALUE},
        {"role": "user", "content": "Thanks."},
    ]
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        text, finish, _ = await _answer(http, chat_request(messages=messages, max_tokens=6))
    assert finish == "length" and len(text.split()) == 6


@pytest.mark.parametrize("cost_model", ["linear", "batched"])
async def test_truncation_keeps_the_last_tokens(
    start_emulator: StartEmulator, cost_model: str
) -> None:
    server = await start_emulator(
        cost_model=cost_model, faults={"truncate_context_tokens": 64}, **FAST
    )
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        early, _, usage = await _answer(http, _needle_request(NEEDLE + FILLER))
        late, _, late_usage = await _answer(http, _needle_request(FILLER + NEEDLE))
        _, _, short = await _answer(http, chat_request(max_tokens=1))
        truncated = (await stats(http))["injected_truncated_prompts"]
    assert usage["prompt_tokens"] == late_usage["prompt_tokens"] == 64
    assert (early, late) == (NOT_FOUND, VALUE)
    assert short["prompt_tokens"] < 64
    assert truncated == 2


async def test_batched_cache_sees_the_truncated_prompt(start_emulator: StartEmulator) -> None:
    server = await start_emulator(
        cost_model="batched", faults={"truncate_context_tokens": 256}, **FAST
    )
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        _, _, first = await _answer(http, _needle_request(FILLER))
        # Another beginning, the same tail: truncated, the two prompts are the same.
        _, _, second = await _answer(http, _needle_request("Different opening. " + FILLER))
        numbers = await stats(http)
    assert first["prompt_tokens"] == second["prompt_tokens"] == 256
    assert first["prompt_tokens_details"]["cached_tokens"] == 0
    assert 0 < second["prompt_tokens_details"]["cached_tokens"] <= 256
    assert numbers["prompt_tokens_total"] == 512


async def test_truncation_of_text_completions_is_per_prompt(start_emulator: StartEmulator) -> None:
    server = await start_emulator(faults={"truncate_context_tokens": 10})
    body = {"model": MODEL, "prompt": ["x" * 400, "y" * 8], "max_tokens": 1}
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        usage = (await http.post("/completions", json=body)).json()["usage"]
    assert usage["prompt_tokens"] == 10 + 2


@pytest.mark.parametrize(
    ("parts", "keep", "expected"),
    [
        ([b"abc", b"def"], 4, [b"c", b"def"]),
        ([b"abc", b"def"], 3, [b"def"]),
        ([b"abc", b"def"], 10, [b"abc", b"def"]),
        ([b"", b"abcdef"], 2, [b"ef"]),
    ],
)
def test_keep_tail(parts: list[bytes], keep: int, expected: list[bytes]) -> None:
    assert keep_tail(parts, keep) == expected


def _canary(prompt: str) -> dict[str, Any]:
    messages = [{"role": "user", "content": prompt}]
    return chat_request(
        messages=messages, max_tokens=1, temperature=0, logprobs=True, top_logprobs=5
    )


async def _canary_answer(http: httpx.AsyncClient, prompt: str) -> tuple[str, dict[str, float]]:
    body = (await http.post("/chat/completions", json=_canary(prompt))).json()
    (first,) = body["choices"][0]["logprobs"]["content"]
    assert first["token"] == body["choices"][0]["message"]["content"]
    return first["token"], {alt["token"]: alt["logprob"] for alt in first["top_logprobs"]}


@pytest.mark.parametrize("prompt", CANARY_PROMPTS)
async def test_substituted_model_fails_the_canary_stably(
    start_emulator: StartEmulator, prompt: str
) -> None:
    server = await start_emulator()
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        healthy = [await _canary_answer(http, prompt) for _ in range(2)]
        await http.put(control_url(http, "faults"), json={"substitute_model": True})
        substituted = [await _canary_answer(http, prompt) for _ in range(2)]
        await http.put(control_url(http, "faults"), json={})
        restored = await _canary_answer(http, prompt)
        count = (await stats(http))["injected_substituted"]
    assert healthy[0] == healthy[1] == restored
    assert substituted[0] == substituted[1]
    (token, top), (other_token, other_top) = healthy[0], substituted[0]
    assert token != other_token
    assert len(top) == len(other_top) == 5
    assert top != other_top and top[token] != other_top[other_token]
    assert count == 2


async def test_substituted_model_changes_text_and_completion_logprobs(
    start_emulator: StartEmulator,
) -> None:
    healthy = await start_emulator()
    substituted = await start_emulator(faults={"substitute_model": True})
    completion = {"model": MODEL, "prompt": "Once", "max_tokens": 8, "logprobs": 3}
    answers = []
    for server in (healthy, substituted):
        async with httpx.AsyncClient(base_url=server.base_url) as http:
            chat = (await http.post("/chat/completions", json=chat_request(max_tokens=8))).json()
            text = (await http.post("/completions", json=completion)).json()["choices"][0]
            answers.append((chat["choices"][0]["message"]["content"], text["logprobs"]))
    (chat_a, logprobs_a), (chat_b, logprobs_b) = answers
    assert len(chat_a.split()) == len(chat_b.split()) == 8
    assert all(a != b for a, b in zip(chat_a.split(), chat_b.split(), strict=True))
    assert logprobs_a["tokens"] != logprobs_b["tokens"]
    assert logprobs_a["top_logprobs"] != logprobs_b["top_logprobs"]
