"""The dependency-graph scheduler, driven by a fake transport on the real clock."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from bench.replay.schedule import RequestResult, replay
from bench.replay.trace import TraceRequest, load_trace
from tests.bench.synthetic import request, segment, write_trace

# Generous for a loaded 2-core machine; every expected gap below is well above it.
SLACK_S = 0.05


class FakeTransport:
    """Each request takes `service_s`; ids in `failing` fail. Records when each was sent."""

    def __init__(self, service_s: float = 0.02, failing: Sequence[str] = ()) -> None:
        self.service_s = service_s
        self.failing = set(failing)
        self.sent: dict[str, float] = {}
        self.ended: dict[str, float] = {}

    async def send(self, req: TraceRequest) -> RequestResult:
        sent = time.perf_counter()
        self.sent[req.id] = sent
        await asyncio.sleep(self.service_s)
        ok = req.id not in self.failing
        done = time.perf_counter()
        self.ended[req.id] = done
        return RequestResult(
            req.id, ok=ok, sent_at=sent, done_at=done, first_token_at=done if ok else None,
            error=None if ok else "HTTP 503: injected",
        )  # fmt: skip


def _requests(tmp_path: Path, *lines: dict[str, object]) -> list[TraceRequest]:
    path = write_trace(tmp_path / "t.jsonl", [segment("s", "text"), *lines])
    return load_trace(path).requests


async def test_roots_start_at_scaled_start_times(tmp_path: Path) -> None:
    reqs = _requests(tmp_path, request("a", ["s"], start=0), request("b", ["s"], start=10))
    transport = FakeTransport()
    started = time.perf_counter()
    run = await replay(reqs, transport, time_scale=0.02)
    assert transport.sent["a"] - started < SLACK_S
    assert 0.2 <= transport.sent["b"] - started < 0.2 + SLACK_S
    assert [r.request_id for r in run.results] == ["a", "b"]
    assert run.results[1].due_at == pytest.approx(run.started_at + 0.2)
    assert run.time_scale == 0.02


async def test_a_child_waits_for_its_parent_to_end_plus_after(tmp_path: Path) -> None:
    reqs = _requests(
        tmp_path,
        request("p", ["s"], start=0),
        request("c", ["s"], parent="p", after=5),
        request("g", ["s"], parent="c", after=0),
    )
    transport = FakeTransport(service_s=0.1)
    await replay(reqs, transport, time_scale=0.02)
    gap = transport.sent["c"] - transport.ended["p"]
    assert 0.1 <= gap < 0.1 + SLACK_S
    assert 0 <= transport.sent["g"] - transport.ended["c"] < SLACK_S


async def test_fan_out_sends_every_child_together(tmp_path: Path) -> None:
    children = [request(f"c{i}", ["s"], parent="p", after=1) for i in range(5)]
    reqs = _requests(tmp_path, request("p", ["s"], start=0), *children)
    transport = FakeTransport(service_s=0.05)
    run = await replay(reqs, transport, time_scale=0.05)
    sent = [transport.sent[f"c{i}"] for i in range(5)]
    assert max(sent) - min(sent) < SLACK_S
    assert min(sent) - transport.ended["p"] >= 0.05
    assert len(run.results) == 6


async def test_a_failed_parent_still_releases_its_children(tmp_path: Path) -> None:
    reqs = _requests(
        tmp_path,
        request("p", ["s"], start=0),
        request("c", ["s"], parent="p", after=1),
        request("g", ["s"], parent="c", after=1),
    )
    transport = FakeTransport(failing=["p"])
    run = await replay(reqs, transport, time_scale=0.01)
    by_id = {r.request_id: r for r in run.results}
    assert set(by_id) == {"p", "c", "g"}
    assert not by_id["p"].ok and by_id["p"].error == "HTTP 503: injected"
    assert by_id["c"].ok and by_id["g"].ok
    assert transport.sent["c"] >= transport.ended["p"]


async def test_time_scale_stretches_after_too(tmp_path: Path) -> None:
    reqs = _requests(
        tmp_path, request("p", ["s"], start=0), request("c", ["s"], parent="p", after=2)
    )
    slow, fast = FakeTransport(service_s=0), FakeTransport(service_s=0)
    await replay(reqs, slow, time_scale=0.1)
    await replay(reqs, fast, time_scale=0.01)
    assert slow.sent["c"] - slow.ended["p"] >= 0.2
    assert fast.sent["c"] - fast.ended["p"] < 0.02 + SLACK_S


async def test_on_result_sees_every_request(tmp_path: Path) -> None:
    reqs = _requests(
        tmp_path, request("a", ["s"], start=0), request("b", ["s"], parent="a", after=0)
    )
    seen: list[str] = []
    await replay(
        reqs, FakeTransport(), time_scale=0.01, on_result=lambda r: seen.append(r.request_id)
    )
    assert seen == ["a", "b"]
