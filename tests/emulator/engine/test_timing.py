"""Timing: token delay, prefill and time scale, checked as the offsets a response's pacer
is asked to wait for, on a pacer that records them instead of sleeping (no clock read)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from starlette.types import Message

import emulator.timed_response as timed_response_module
import emulator.timeline as timeline_module
from emulator.engine.pacing import LinearPacer
from emulator.engine.runtime_state import EmulatorStats
from emulator.engine.timing import LinearTiming
from emulator.settings import EmulatorSettings
from emulator.timed_response import TimedResponse
from tests.emulator.conftest import StartEmulator, chat_request


def test_linear_timing_formula() -> None:
    settings = EmulatorSettings(
        token_delay_ms=20, base_latency_ms=10, prefill_ms_per_1k_tokens=100, time_scale=0.5
    )
    timing = LinearTiming.from_settings(settings)
    assert abs(timing.first_token_delay_s(2000) - (10 + 200) * 0.5 / 1000) < 1e-12
    assert abs(timing.token_delay_s() - 0.010) < 1e-12


@pytest.mark.usefixtures("virtual_time")
async def test_the_linear_pacer_sleeps_until_the_offset() -> None:
    pacer = LinearPacer()
    pacer.start()
    await pacer.wait_until(0.3)
    # On the virtual clock the loop wakes at the timer itself: 0.3 s, up to the float
    # rounding of (start + 0.3) - start at the clock's magnitude, far under its resolution.
    assert pacer.reached() == pytest.approx(0.3, rel=0, abs=1e-9)


class RecordingPacer(LinearPacer):
    """A linear pacer that notes each offset it is asked to wait for, then takes it as
    reached at once."""

    def __init__(self, log: list[tuple[str, object]] | None = None) -> None:
        super().__init__()
        self.waits: list[float] = []
        self._log = log
        self._reached = 0.0

    def start(self) -> None:
        pass

    def reached(self) -> float:
        return self._reached

    async def wait_until(self, offset: float) -> None:
        self.waits.append(offset)
        if self._log is not None:
            self._log.append(("wait", offset))
        self._reached = max(self._reached, offset)
        await asyncio.sleep(0)


@pytest.fixture
def paced(monkeypatch: pytest.MonkeyPatch) -> list[RecordingPacer]:
    """Every linear pacer the emulator makes from now on, recording."""
    made: list[RecordingPacer] = []

    def recording() -> RecordingPacer:
        made.append(RecordingPacer())
        return made[-1]

    monkeypatch.setattr(timeline_module, "LinearPacer", recording)
    monkeypatch.setattr(timed_response_module, "LinearPacer", recording)
    return made


async def _chat(server_url: str, **fields: Any) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=server_url) as http:
        response = await http.post("/chat/completions", json=chat_request(**fields))
    assert response.status_code == 200
    return {} if fields.get("stream") else dict(response.json())


@pytest.mark.parametrize(
    ("token_delay_ms", "stream", "waits"),
    [
        # Each of 10 tokens when due, 20 ms apart; a body once its last token is.
        pytest.param(20, True, [0.02 * k for k in range(10)], id="paced-stream"),
        pytest.param(20, False, [0.18], id="paced-body"),
        pytest.param(0, True, [0.0], id="stream-at-once"),
        pytest.param(0, False, [0.0], id="body-at-once"),
    ],
)
async def test_token_delay_paces_streams_and_bodies(
    start_emulator: StartEmulator,
    paced: list[RecordingPacer],
    token_delay_ms: float,
    stream: bool,
    waits: list[float],
) -> None:
    server = await start_emulator(token_delay_ms=token_delay_ms)
    await _chat(server.base_url, max_tokens=10, stream=stream)
    (pacer,) = paced
    assert pacer.waits == pytest.approx(waits)


async def test_prefill_and_base_latency_set_time_to_first_token(
    start_emulator: StartEmulator, paced: list[RecordingPacer]
) -> None:
    server = await start_emulator(base_latency_ms=50, prefill_ms_per_1k_tokens=500)
    prompt = [{"role": "user", "content": "x" * 800}]  # about 200 tokens: 100 ms prefill
    body = await _chat(server.base_url, messages=prompt, max_tokens=1)
    prompt_tokens = body["usage"]["prompt_tokens"]
    assert prompt_tokens >= 200
    (pacer,) = paced
    assert pacer.waits == [pytest.approx((50 + 500 * prompt_tokens / 1000) / 1000)]


async def test_time_scale_speeds_everything_up(
    start_emulator: StartEmulator, paced: list[RecordingPacer]
) -> None:
    server = await start_emulator(token_delay_ms=200, base_latency_ms=500, time_scale=0.1)
    await _chat(server.base_url, max_tokens=6)
    # Unscaled this is 0.5 + 5 * 0.2 = 1.5 s; scaled by 0.1 it is 150 ms.
    (pacer,) = paced
    assert pacer.waits == [pytest.approx(0.15)]


async def test_a_stream_sends_its_headers_before_the_first_token_is_due() -> None:
    log: list[tuple[str, object]] = []

    async def send(message: Message) -> None:
        log.append(("send", message.get("body", message["type"])))

    async def receive() -> Message:
        await asyncio.Event().wait()  # the client never leaves
        raise AssertionError

    response = TimedResponse(
        status=200,
        headers=[],
        events=[(0.15, b"first"), (0.25, b"second")],
        stats=EmulatorStats(),
        headers_first=True,
        pacer=RecordingPacer(log),
    )
    await response({"type": "http"}, receive, send)
    assert log == [
        ("send", "http.response.start"),
        ("wait", 0.15),
        ("send", b"first"),
        ("wait", 0.25),
        ("send", b"second"),
    ]
