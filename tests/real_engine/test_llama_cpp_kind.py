"""The `llama-cpp` kind against two real llama-server replicas: the gateway learns each
one's context window from `/props` and its busy slots from `/slots`, relays the engine's
own cached-token count, reads it from a stream's final `timings` too, and keeps a
conversation on the replica that holds its prefix."""

from __future__ import annotations

import os
from typing import Any

import httpx
import orjson
import pytest

from gateway.engines.state import Replica
from gateway.fleet.scrape.engine_metrics import samples
from tests.conftest import RunningGateway, StartGateway, eventually

ROUTE = "chat"
SYSTEM = (
    "You are a patient geography tutor. Answer every question in one short sentence, "
    "name the country and the continent, avoid lists, never use more than twenty words, "
    "and when a question is ambiguous pick the most common reading of it. "
)


def gateway_config(replicas: list[Replica]) -> dict[str, Any]:
    """Both replicas as `kind: llama-cpp` backends with no context window configured; a
    profile that routes on the prefix the router predicts cached."""
    fast = {"interval_s": 0.1, "stale_after_s": 1.0, "timeout_s": 0.5}
    return {
        "backends": [
            {"name": r.name, "kind": "llama-cpp", "base_url": r.base_url, "models": ["smollm2"]}
            | {"llama_cpp": fast, "cache": {"capacity_tokens": 100_000}}
            for r in replicas
        ],
        "routes": [
            {"name": ROUTE, "model": "smollm2", "backends": [r.name for r in replicas]}
            | {"profile": "prefix"}
        ],
        "policies": [
            {"type": "prefix-cache-scorer", "name": "prefix", "params": {"scale_tokens": 64}}
        ],
        "profiles": [
            {
                "name": "prefix",
                "plugins": [
                    {"ref": "healthy-filter"},
                    {"ref": "context-window-filter"},
                    {"ref": "prefix", "weight": 1.0},
                    {"ref": "max-score-picker"},
                ],
            }
        ],
    }


async def backends(gw: RunningGateway) -> dict[str, dict[str, Any]]:
    rows = (await gw.client.get("/v1/switchyard/backends")).json()["backends"]
    return {row["name"]: row for row in rows}


async def decision(gw: RunningGateway, response: httpx.Response) -> dict[str, Any]:
    decision_id = response.headers["x-switchyard-decision"]
    found: dict[str, Any] = (await gw.client.get(f"/v1/switchyard/decisions/{decision_id}")).json()
    return found


def prefix_reasons(found: dict[str, Any]) -> dict[str, str]:
    return {c["backend"]: c["scores"]["prefix"]["reason"] for c in found["candidates"]}


async def cached_counted(gw: RunningGateway, backend: str) -> float:
    """`switchyard_cached_prompt_tokens_total` of `backend`: the engine-reported cached
    tokens the gateway's records carried."""
    text = (await gw.client.get("/metrics")).text
    name = "switchyard_cached_prompt_tokens_total"
    return sum(s.value for s in samples(text, {name}) if s.labels.get("backend") == backend)


@pytest.fixture
async def gw(llama_replicas: list[Replica], start_gateway: StartGateway) -> RunningGateway:
    running = await start_gateway(gateway_config(llama_replicas))

    async def status_read() -> bool:
        rows = await backends(running)
        return all(
            row["context_window_source"] == "engine"
            and row["healthy"]
            and (row["engine_slots"] or {}).get("fresh")
            for row in rows.values()
        )

    await eventually(status_read, "every replica's /props and /slots read", within_s=30.0)
    return running


async def test_the_window_and_slots_are_read_from_the_engines(
    gw: RunningGateway, llama_replicas: list[Replica]
) -> None:
    rows = await backends(gw)
    for replica in llama_replicas:
        row = rows[replica.name]
        assert row["context_window_tokens"] == replica.n_ctx
        slots = row["engine_slots"]
        assert (slots["total"], slots["n_ctx"], slots["last_error"]) == (
            replica.parallel,
            replica.n_ctx,
            "",
        )
        assert slots["polls"] > 0
    # The window learnt is what the context-window-filter reads: too long a reply fits none.
    body = {"model": ROUTE, "messages": [{"role": "user", "content": "hi"}]}
    refused = await gw.client.post("/v1/chat/completions", json={**body, "max_tokens": 4096})
    assert refused.status_code == 503
    found = await decision(gw, refused)
    for candidate in found["candidates"]:
        verdict = candidate["verdicts"]["context-window-filter"]
        assert verdict["keep"] is False
        assert verdict["reason"].endswith(f"> window {llama_replicas[0].n_ctx:,}")


async def test_a_conversation_stays_with_its_cache_and_the_engines_count_is_used(
    gw: RunningGateway,
) -> None:
    # A fresh system prompt: no replica holds it from an earlier test.
    messages: list[dict[str, str]] = [
        {"role": "system", "content": f"Session {os.urandom(6).hex()}. {SYSTEM}"},
        {"role": "user", "content": "Which river flows through Vienna?"},
    ]
    first = await chat(gw, messages)
    served = first.headers["x-switchyard-backend"]
    messages += [
        {"role": "assistant", "content": first.json()["choices"][0]["message"]["content"]},
        {"role": "user", "content": "And which river flows through Paris?"},
    ]
    second = await chat(gw, messages)

    assert second.headers["x-switchyard-backend"] == served
    usage, timings = second.json()["usage"], second.json()["timings"]
    cached = usage["prompt_tokens_details"]["cached_tokens"]
    assert cached > 0, "the engine reports the first turn's prefix cached"
    assert cached == timings["cache_n"]
    reasons = prefix_reasons(await decision(gw, second))
    assert reasons[served].endswith("prompt tokens cached"), reasons
    other = next(name for name in reasons if name != served)
    assert reasons[other].startswith("no cached prefix"), reasons

    # A stream without include_usage: only the final chunk's timings carry the count.
    messages += [
        {"role": "assistant", "content": second.json()["choices"][0]["message"]["content"]},
        {"role": "user", "content": "And through Budapest?"},
    ]
    third, stream_cached = await chat_stream(gw, messages)
    assert third == served
    assert stream_cached > cached
    reported = first.json()["usage"]["prompt_tokens_details"]["cached_tokens"]
    expected = reported + cached + stream_cached

    async def counted() -> bool:
        return await cached_counted(gw, served) == expected

    await eventually(counted, f"{expected} engine-reported cached tokens counted", within_s=10)


async def chat(gw: RunningGateway, messages: list[dict[str, str]]) -> httpx.Response:
    body = {"model": ROUTE, "messages": messages, "max_tokens": 8, "temperature": 0}
    response = await gw.client.post("/v1/chat/completions", json=body, timeout=120)
    assert response.status_code == 200, response.text
    return response


async def chat_stream(gw: RunningGateway, messages: list[dict[str, str]]) -> tuple[str, int]:
    """The backend that streamed the answer and the `timings.cache_n` of its last chunk."""
    body = {"model": ROUTE, "messages": messages, "max_tokens": 8, "temperature": 0}
    body["stream"] = True
    events: list[bytes] = []
    async with gw.client.stream("POST", "/v1/chat/completions", json=body, timeout=120) as r:
        assert r.status_code == 200
        backend = r.headers["x-switchyard-backend"]
        async for line in r.aiter_lines():
            if line.startswith("data: "):
                events.append(line[6:].encode())
    assert events[-1] == b"[DONE]"
    last = orjson.loads(events[-2])
    assert "usage" not in last
    cache_n: int = last["timings"]["cache_n"]
    return backend, cache_n
