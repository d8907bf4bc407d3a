"""Quality faults drawn at a rate: loops, broken tool calls, latency spikes, bursts, cuts."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from itertools import groupby
from typing import Any

import httpx
import orjson
import pytest

from emulator import inference_path
from emulator.content.tool_faults import ToolFault, corrupt_tool_call
from emulator.request_parsing import ToolSpec
from emulator.timed_response import TimedResponse
from tests.emulator.conftest import (
    MODEL,
    StartEmulator,
    chat_request,
    control_url,
    sse_payloads,
    stats,
)

BOOKING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "train": {"type": "string"},
        "seats": {"type": "integer"},
        "first_class": {"type": "boolean"},
    },
    "required": ["train", "seats"],
}
BOOKING_TOOL = {"type": "function", "function": {"name": "book", "parameters": BOOKING_SCHEMA}}
OTHER_TOOL = {"type": "function", "function": {"name": "book_v2", "parameters": {}}}
_PYTHON_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "boolean": bool,
}

Probe = Callable[[httpx.AsyncClient], Awaitable[bool]]


def _schema_violated(arguments: object) -> bool:
    if not isinstance(arguments, dict):
        return True
    if any(name not in arguments for name in BOOKING_SCHEMA["required"]):
        return True
    properties = BOOKING_SCHEMA["properties"]
    return any(
        not isinstance(value, _PYTHON_TYPES[properties[name]["type"]])
        or (properties[name]["type"] == "integer" and isinstance(value, bool))
        for name, value in arguments.items()
    )


def _tool_fault_kind(call: dict[str, Any]) -> str | None:
    """Which way a booking call is broken; None when it is a good call."""
    if call["function"]["name"] not in ("book", "book_v2"):
        return "undeclared_name"
    try:
        arguments = orjson.loads(call["function"]["arguments"])
    except orjson.JSONDecodeError:
        return "invalid_json"
    return "schema_violation" if _schema_violated(arguments) else None


def _is_loop(content: str) -> bool:
    words = content.split()
    phrase = words[:3]
    return len(words) > 6 and words == (phrase * len(words))[: len(words)]


async def _loop_probe(http: httpx.AsyncClient) -> bool:
    response = await http.post("/chat/completions", json=chat_request(max_tokens=24))
    choice = response.json()["choices"][0]
    return bool(choice["finish_reason"] == "length" and _is_loop(choice["message"]["content"]))


async def _tool_probe(http: httpx.AsyncClient) -> bool:
    request = chat_request(tools=[BOOKING_TOOL, OTHER_TOOL])
    choice = (await http.post("/chat/completions", json=request)).json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    return _tool_fault_kind(choice["message"]["tool_calls"][0]) is not None


async def _spike_probe(http: httpx.AsyncClient) -> bool:
    # Spikes last 0 s here (time scale 0): the counter is what shows them.
    before = (await stats(http))["injected_latency_spikes"]
    await http.post("/completions", json={"model": MODEL, "prompt": "x", "max_tokens": 1})
    return (await stats(http))["injected_latency_spikes"] > before


async def _burst_probe(http: httpx.AsyncClient) -> bool:
    response = await http.post("/chat/completions", json=chat_request(max_tokens=1))
    return response.status_code == 503


async def _cut_probe(http: httpx.AsyncClient) -> bool:
    try:
        response = await http.post("/chat/completions", json=chat_request(stream=True))
    except httpx.RemoteProtocolError:
        return True
    return "[DONE]" not in sse_payloads(response.text)


@dataclass(frozen=True)
class FaultCase:
    rate_field: str
    probe: Probe
    extra: dict[str, Any]
    settings: dict[str, Any]


CASES = {
    "loop": FaultCase("loop_rate", _loop_probe, {}, {}),
    "malformed_tool_call": FaultCase("malformed_tool_call_rate", _tool_probe, {}, {}),
    "latency_spike": FaultCase("latency_spike_rate", _spike_probe, {}, {"time_scale": 0.0}),
    "error_burst": FaultCase("error_burst_rate", _burst_probe, {"error_burst_length": 1}, {}),
    "cut_stream": FaultCase("cut_stream_rate", _cut_probe, {}, {}),
}


async def _pattern(http: httpx.AsyncClient, probe: Probe, count: int) -> list[bool]:
    return [await probe(http) for _ in range(count)]


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize(("rate", "expected"), [(0.0, False), (1.0, True)])
async def test_rate_zero_never_rate_one_always(
    start_emulator: StartEmulator, name: str, rate: float, expected: bool
) -> None:
    case = CASES[name]
    faults = {case.rate_field: rate, **case.extra}
    server = await start_emulator(faults=faults, **case.settings)
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        assert await _pattern(http, case.probe, 20) == [expected] * 20


@pytest.mark.parametrize("name", list(CASES))
async def test_seeded_rate_is_plausible_and_replays(
    start_emulator: StartEmulator, name: str
) -> None:
    case = CASES[name]
    faults = {case.rate_field: 0.3, "seed": 42, **case.extra}
    server = await start_emulator(faults=faults, **case.settings)
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        first = await _pattern(http, case.probe, 200)
        # Replacing the faults re-seeds the draws: the same seed replays the same requests.
        await http.put(control_url(http, "faults"), json=faults)
        again = await _pattern(http, case.probe, 200)
        await http.put(control_url(http, "faults"), json={**faults, "seed": 43})
        other = await _pattern(http, case.probe, 200)
    assert 35 <= sum(first) <= 85
    assert again == first
    assert other != first


async def test_malformed_tool_calls_come_in_three_kinds(start_emulator: StartEmulator) -> None:
    server = await start_emulator(faults={"malformed_tool_call_rate": 1.0, "seed": 1})
    kinds: set[str | None] = set()
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        for stream in [False] * 30 + [True] * 30:
            request = chat_request(tools=[BOOKING_TOOL, OTHER_TOOL], stream=stream)
            response = await http.post("/chat/completions", json=request)
            call, finish = _tool_call(response, stream=stream)
            assert finish == "tool_calls"
            kinds.add(_tool_fault_kind(call))
        counted = (await stats(http))["injected_malformed_tool_calls"]
    assert kinds == {"invalid_json", "undeclared_name", "schema_violation"}
    assert counted == 60


def _tool_call(response: httpx.Response, *, stream: bool) -> tuple[dict[str, Any], str]:
    if not stream:
        choice = response.json()["choices"][0]
        return choice["message"]["tool_calls"][0], choice["finish_reason"]
    chunks = sse_payloads(response.text)[:-1]
    deltas = [chunk["choices"][0]["delta"] for chunk in chunks]
    name = deltas[0]["tool_calls"][0]["function"]["name"]
    arguments = "".join(
        delta["tool_calls"][0]["function"]["arguments"] for delta in deltas if "tool_calls" in delta
    )
    call = {"function": {"name": name, "arguments": arguments}}
    return call, chunks[-1]["choices"][0]["finish_reason"]


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "object"}, [{}]),
        ({"type": "object", "properties": {"a": {"type": "string"}}}, {"a": 12345}),
        ({"type": "object", "properties": {"n": {"type": "integer"}}}, {"n": "not a integer"}),
        ({"type": "object", "properties": {"a": {}}, "required": ["a"]}, {}),
    ],
)
def test_schema_violations(schema: dict[str, Any], expected: object) -> None:
    arguments = {"a": "example"} if "a" in schema.get("required", []) else {}
    tool = ToolSpec("f", schema, ("f",))
    name, text = corrupt_tool_call(tool, arguments, ToolFault("schema_violation"))
    assert (name, orjson.loads(text)) == ("f", expected)


def test_undeclared_name_avoids_every_declared_name() -> None:
    tool = ToolSpec("f", {}, ("f", "f_v2", "f_v2_v2"))
    assert corrupt_tool_call(tool, {}, ToolFault("undeclared_name"))[0] == "f_v2_v2_v2"


async def test_loop_fills_max_tokens(start_emulator: StartEmulator) -> None:
    server = await start_emulator(faults={"loop_rate": 1.0})
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        body = (await http.post("/chat/completions", json=chat_request(max_tokens=40))).json()
        streamed = await http.post(
            "/chat/completions", json=chat_request(max_tokens=40, stream=True)
        )
    choice = body["choices"][0]
    assert choice["finish_reason"] == "length" and body["usage"]["completion_tokens"] == 40
    assert (
        _is_loop(choice["message"]["content"]) and len(choice["message"]["content"].split()) == 40
    )
    chunks = sse_payloads(streamed.text)[:-1]
    text = "".join(chunk["choices"][0]["delta"].get("content") or "" for chunk in chunks)
    assert text == choice["message"]["content"]


async def test_latency_spike_adds_scaled_time_before_the_first_byte(
    start_emulator: StartEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What each response is planned to wait before its first byte; the wait itself is the
    # stall's (test_faults.py), so it is not waited out here.
    stalls: list[float] = []

    class Planned(TimedResponse):
        def __init__(self, *, stall_s: float = 0.0, **fields: Any) -> None:
            stalls.append(stall_s)
            super().__init__(**fields)

    monkeypatch.setattr(inference_path, "TimedResponse", Planned)
    faults = {"latency_spike_rate": 1.0, "latency_spike_s": 0.6}
    server = await start_emulator(faults=faults, time_scale=0.5)
    embeddings = {"model": MODEL, "input": "x"}
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        for path, body in [("/chat/completions", chat_request()), ("/embeddings", embeddings)]:
            assert (await http.post(path, json=body)).status_code == 200
        assert (await stats(http))["injected_latency_spikes"] == 2
    assert stalls == [pytest.approx(0.3)] * 2


async def test_error_burst_fails_exactly_its_length(start_emulator: StartEmulator) -> None:
    faults = {"error_burst_rate": 0.3, "error_burst_length": 4, "error_burst_status": 429}
    server = await start_emulator(faults={**faults, "seed": 5})
    paths = [
        ("/chat/completions", chat_request(max_tokens=1)),
        ("/completions", {"model": MODEL, "prompt": "x", "max_tokens": 1}),
        ("/embeddings", {"model": MODEL, "input": "x"}),
    ]
    failed: list[bool] = []
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        # Go on past 90 requests until a success closes the last burst.
        while len(failed) < 90 or failed[-1]:
            path, body = paths[len(failed) % len(paths)]
            response = await http.post(path, json=body)
            failed.append(response.status_code != 200)
            if response.status_code != 200:
                assert response.status_code == 429
                assert set(response.json()["error"]) == {"message", "type", "param", "code"}
        bursts = (await stats(http))["injected_error_bursts"]
    runs = [len(list(group)) for is_failure, group in groupby(failed) if is_failure]
    assert runs and all(run % 4 == 0 for run in runs)
    assert 4 in runs
    assert sum(runs) == 4 * bursts


@pytest.mark.parametrize(
    ("faults", "chunks"),
    [
        ({"cut_stream_rate": 1.0}, 1),
        ({"cut_stream_rate": 1.0, "cut_stream_after_chunks": 3}, 3),
        ({"cut_stream_after_chunks": 2}, 2),  # no rate: every stream is cut
        ({"cut_stream_rate": 0.0, "cut_stream_after_chunks": 2}, None),
    ],
)
async def test_cut_stream_rate_and_position(
    start_emulator: StartEmulator, faults: dict[str, Any], chunks: int | None
) -> None:
    server = await start_emulator(faults=faults)
    received: list[str] = []
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        request = chat_request(stream=True, max_tokens=10)
        try:
            async with http.stream("POST", "/chat/completions", json=request) as response:
                async for line in response.aiter_lines():
                    received.append(line)
        except httpx.RemoteProtocolError:
            pass
        cut_streams = (await stats(http))["injected_cut_streams"]
    payloads = sse_payloads("\n".join(received))
    if chunks is None:
        assert payloads[-1] == "[DONE]" and cut_streams == 0
    else:
        assert len(payloads) == chunks and cut_streams == 1
        assert all("choices" in payload for payload in payloads)
