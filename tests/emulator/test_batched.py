"""The batched cost model over HTTP: cached tokens in usage, fleets, metrics, limits."""

from __future__ import annotations

import asyncio
import re
import socket
from typing import Any

import httpx
import pytest

from emulator.fleet import EmulatorFleet
from emulator.loopback import bind_loopback
from emulator.settings import EmulatorSettings
from tests.conftest import eventually
from tests.emulator.conftest import (
    StartEmulator,
    chat_request,
    control_url,
    sse_payloads,
    stats,
)

FAST = {"cost_model": "batched", "time_scale": 0.01}
SYSTEM = {"role": "system", "content": "Answer in the style of a railway timetable. " * 60}
_SAMPLE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? -?[0-9.e+-]+$")


def _conversation(question: str) -> dict[str, Any]:
    return chat_request(messages=[SYSTEM, {"role": "user", "content": question}], max_tokens=8)


async def _usage(
    http: httpx.AsyncClient, body: dict[str, Any], base_url: str = ""
) -> dict[str, Any]:
    response = await http.post(f"{base_url}/chat/completions", json=body)
    assert response.status_code == 200, response.text
    usage: dict[str, Any] = response.json()["usage"]
    return usage


def _cached(usage: dict[str, Any]) -> int:
    cached: int = usage["prompt_tokens_details"]["cached_tokens"]
    return cached


async def test_repeated_prompt_reports_cached_tokens(start_emulator: StartEmulator) -> None:
    server = await start_emulator(**FAST)
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        first = await _usage(http, _conversation("When is the next train?"))
        second = await _usage(http, _conversation("When is the next train?"))
        other = await _usage(http, _conversation("Where is platform nine?"))
    assert _cached(first) == 0
    assert first["prompt_tokens"] == second["prompt_tokens"] > 600
    assert 0 < _cached(second) < second["prompt_tokens"]
    assert _cached(second) % 16 == 0
    # Another question after the same system prompt still hits the system prompt's blocks.
    assert 0 < _cached(other) <= _cached(second)
    assert first["completion_tokens"] == 8


async def test_streamed_usage_and_completions(start_emulator: StartEmulator) -> None:
    server = await start_emulator(**FAST)
    request = {**_conversation("Hi"), "stream": True, "stream_options": {"include_usage": True}}
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        for _ in range(2):
            streamed = await http.post("/chat/completions", json=request)
        payloads = sse_payloads(streamed.text)
        completion = {"model": "emulated-model", "prompt": "tick tock " * 100, "max_tokens": 3}
        texts = [(await http.post("/completions", json=completion)).json() for _ in range(2)]
    assert payloads[-1] == "[DONE]"
    assert _cached(payloads[-2]["usage"]) > 0
    contents = [p["choices"][0]["delta"].get("content") for p in payloads[:-2]]
    assert len([content for content in contents if content]) == 8
    assert _cached(texts[0]["usage"]) == 0 < _cached(texts[1]["usage"])


async def test_fleet_engines_have_independent_caches() -> None:
    async with (
        EmulatorFleet(2, EmulatorSettings(**FAST)) as fleet,
        httpx.AsyncClient() as http,
    ):
        ports = {server.port for server in fleet.servers}
        assert len(ports) == 2
        first, second = fleet.base_urls
        body = _conversation("Is the 9:15 on time?")
        warm = [await _usage(http, body, first) for _ in range(2)]
        cold = await _usage(http, body, second)
    assert _cached(warm[0]) == 0 < _cached(warm[1])
    assert _cached(cold) == 0


def _listening_pair() -> tuple[int, socket.socket]:
    """A port free a moment ago and a listener on the next one (both on loopback)."""
    for _ in range(50):
        blocker = bind_loopback("127.0.0.1", 0)
        blocker.listen()
        base = blocker.getsockname()[1] - 1
        try:
            bind_loopback("127.0.0.1", base).close()
        except OSError:
            blocker.close()
            continue
        return base, blocker
    pytest.skip("no free pair of consecutive ports")


async def test_fleet_on_consecutive_ports_starts_all_or_nothing() -> None:
    base, blocker = _listening_pair()
    with blocker:
        fleet = EmulatorFleet(2, port=base)
        with pytest.raises(OSError):
            await fleet.start()
    # The first engine had bound ``base``; the failed start let go of it.
    check = bind_loopback("127.0.0.1", base)
    check.listen()
    check.close()
    with pytest.raises(ValueError):
        EmulatorFleet(0)
    with pytest.raises(ValueError):
        EmulatorFleet(2, port=65535)


@pytest.mark.parametrize("cost_model", ["linear", "batched"])
async def test_metrics_parse_as_prometheus_text(
    start_emulator: StartEmulator, cost_model: str
) -> None:
    server = await start_emulator(cost_model=cost_model, time_scale=0.01)
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        for _ in range(2):
            await _usage(http, _conversation("Which line?"))
        response = await http.get(http.base_url.join("/metrics"))
    assert response.headers["content-type"].startswith("text/plain")
    samples: dict[str, float] = {}
    for line in response.text.splitlines():
        if line.startswith("#"):
            continue
        assert _SAMPLE.match(line), line
        name_and_labels, value = line.rsplit(" ", 1)
        samples[name_and_labels.split("{")[0]] = float(value)
    assert samples["vllm:prompt_tokens_total"] > 1000
    assert samples["vllm:generation_tokens_total"] == 16
    assert samples["vllm:num_requests_running"] == 0
    if cost_model == "batched":
        assert (
            0 < samples["vllm:prefix_cache_hits_total"] < samples["vllm:prefix_cache_queries_total"]
        )
        assert 0 < samples["emulator:kv_cache_usage_perc"] < 1
        assert samples["vllm:gpu_cache_usage_perc"] == 0  # all finished: only cached
        assert samples["emulator:steps_total"] >= 16


async def test_stats_report_engine_numbers(start_emulator: StartEmulator) -> None:
    server = await start_emulator(**FAST)
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        await _usage(http, _conversation("One more?"))
        numbers = await stats(http)
    assert numbers["completed"] == 1
    assert numbers["steps_total"] >= 8
    assert 0 < numbers["prefill_busy_s"] <= numbers["step_busy_s"]
    assert numbers["requests_running"] == numbers["requests_waiting"] == 0


async def test_a_prompt_larger_than_the_cache_is_refused(start_emulator: StartEmulator) -> None:
    server = await start_emulator(**FAST, kv_capacity_tokens=256)
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        response = await http.post("/chat/completions", json=_conversation("Too long?"))
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "context_length_exceeded"
        small = chat_request(max_tokens=4)
        assert (await http.post("/chat/completions", json=small)).status_code == 200


async def test_client_leaving_frees_its_sequence(start_emulator: StartEmulator) -> None:
    server = await start_emulator(cost_model="batched", time_scale=1.0)
    engine = server.runtime.engine
    assert engine is not None
    request = {**_conversation("Recite the timetable."), "max_tokens": 5000, "stream": True}
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        async with http.stream("POST", "/chat/completions", json=request) as response:
            lines = response.aiter_lines()
            while not (await anext(lines)).startswith("data: "):
                pass
            assert engine.scheduler.running == 1

        async def cancelled() -> bool:
            return bool((await stats(http))["cancelled"])

        await eventually(cancelled, "the stream cancelled")
        assert (await http.get(control_url(http, "stats"))).json()["requests_running"] == 0
    assert engine.cache.pinned_blocks == 0
    assert engine.cache.cached_blocks > 0


async def test_concurrent_streams_all_complete(start_emulator: StartEmulator) -> None:
    server = await start_emulator(**FAST, max_num_seqs=4)
    async with httpx.AsyncClient(base_url=server.base_url) as http:

        async def one(index: int) -> list[Any]:
            body = {**_conversation(f"Question {index}"), "stream": True}
            return sse_payloads((await http.post("/chat/completions", json=body)).text)

        results = await asyncio.gather(*(one(index) for index in range(12)))
    for payloads in results:
        assert payloads[-1] == "[DONE]"
        assert payloads[-2]["choices"][0]["finish_reason"] == "length"
