"""Timing: token delay, prefill and time scale, checked as ratios with generous bounds."""

from __future__ import annotations

import time

import httpx

from emulator.engine.timing import LinearTiming
from emulator.settings import EmulatorSettings
from tests.emulator.conftest import StartEmulator, chat_request


def test_linear_timing_formula() -> None:
    settings = EmulatorSettings(
        token_delay_ms=20, base_latency_ms=10, prefill_ms_per_1k_tokens=100, time_scale=0.5
    )
    timing = LinearTiming.from_settings(settings)
    assert abs(timing.first_token_delay_s(2000) - (10 + 200) * 0.5 / 1000) < 1e-12
    assert abs(timing.token_delay_s() - 0.010) < 1e-12


async def _elapsed(http: httpx.AsyncClient, **fields: object) -> float:
    started = time.perf_counter()
    response = await http.post("/chat/completions", json=chat_request(**fields))
    assert response.status_code == 200
    return time.perf_counter() - started


async def test_token_delay_slows_streams_and_bodies(start_emulator: StartEmulator) -> None:
    fast = await start_emulator(token_delay_ms=0)
    slow = await start_emulator(token_delay_ms=20)
    async with (
        httpx.AsyncClient(base_url=fast.base_url) as fast_http,
        httpx.AsyncClient(base_url=slow.base_url) as slow_http,
    ):
        for stream in (True, False):
            quick = await _elapsed(fast_http, max_tokens=10, stream=stream)
            paced = await _elapsed(slow_http, max_tokens=10, stream=stream)
            # 9 gaps of 20 ms between 10 tokens: never less, and clearly above no delay.
            assert paced >= 0.17
            assert paced > 2 * quick


async def test_tokens_arrive_spread_out(start_emulator: StartEmulator) -> None:
    server = await start_emulator(token_delay_ms=30)
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        arrivals: list[float] = []
        request = chat_request(max_tokens=6, stream=True)
        async with http.stream("POST", "/chat/completions", json=request) as response:
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    arrivals.append(time.perf_counter())
    assert arrivals[-1] - arrivals[0] >= 0.14  # 5 gaps of 30 ms


async def test_prefill_and_base_latency_set_time_to_first_token(
    start_emulator: StartEmulator,
) -> None:
    server = await start_emulator(base_latency_ms=50, prefill_ms_per_1k_tokens=500)
    prompt = [{"role": "user", "content": "x" * 800}]  # 200 tokens -> 100 ms prefill
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        started = time.perf_counter()
        request = chat_request(messages=prompt, max_tokens=1, stream=True)
        async with http.stream("POST", "/chat/completions", json=request) as response:
            headers_after = time.perf_counter() - started
            lines = response.aiter_lines()
            while not (await anext(lines)).startswith("data: "):
                pass
            first_token_after = time.perf_counter() - started
    assert first_token_after >= 0.14
    assert first_token_after - headers_after >= 0.1


async def test_time_scale_speeds_everything_up(start_emulator: StartEmulator) -> None:
    server = await start_emulator(token_delay_ms=200, base_latency_ms=500, time_scale=0.1)
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        elapsed = await _elapsed(http, max_tokens=6)
    # Unscaled this is 0.5 + 5 * 0.2 = 1.5 s; scaled by 0.1 it is 150 ms.
    assert 0.14 <= elapsed < 1.0
