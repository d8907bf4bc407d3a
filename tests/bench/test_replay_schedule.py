"""The dependency-graph scheduler, driven by a fake transport on virtual time: the loop's
clock skips to each next timer, so every send is seen at its exact time."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from bench.replay.schedule import RequestResult, replay
from bench.replay.trace import TraceRequest, load_trace
from tests.bench.synthetic import request, segment, write_trace

pytestmark = pytest.mark.usefixtures("virtual_time")


def at(seconds: float) -> Any:
    """A time on the virtual clock, give or take float rounding."""
    return pytest.approx(seconds, abs=1e-9)


class FakeTransport:
    """Each request takes `service_s`; ids in `failing` fail. Records when each was sent."""

    def __init__(self, service_s: float = 0.02, failing: Sequence[str] = ()) -> None:
        self.service_s = service_s
        self.failing = set(failing)
        self.clock = asyncio.get_running_loop().time
        self.sent: dict[str, float] = {}
        self.ended: dict[str, float] = {}

    async def send(self, req: TraceRequest) -> RequestResult:
        sent = self.clock()
        self.sent[req.id] = sent
        await asyncio.sleep(self.service_s)
        ok = req.id not in self.failing
        done = self.clock()
        self.ended[req.id] = done
        return RequestResult(
            req.id, ok=ok, sent_at=sent, done_at=done, first_token_at=done if ok else None,
            error=None if ok else "HTTP 503: injected",
        )  # fmt: skip


async def _replay(reqs: list[TraceRequest], transport: FakeTransport, **options: Any) -> Any:
    return await replay(reqs, transport, clock=transport.clock, **options)


def _requests(tmp_path: Path, *lines: dict[str, object]) -> list[TraceRequest]:
    path = write_trace(tmp_path / "t.jsonl", [segment("s", "text"), *lines])
    return load_trace(path).requests


async def test_roots_start_at_scaled_start_times(tmp_path: Path) -> None:
    reqs = _requests(tmp_path, request("a", ["s"], start=0), request("b", ["s"], start=10))
    transport = FakeTransport()
    run = await _replay(reqs, transport, time_scale=0.02)
    assert transport.sent["a"] == at(run.started_at)
    assert transport.sent["b"] == at(run.started_at + 0.2)
    assert [r.request_id for r in run.results] == ["a", "b"]
    assert run.results[1].due_at == at(run.started_at + 0.2)
    assert run.time_scale == 0.02


async def test_a_child_waits_for_its_parent_to_end_plus_after(tmp_path: Path) -> None:
    reqs = _requests(
        tmp_path,
        request("p", ["s"], start=0),
        request("c", ["s"], parent="p", after=5),
        request("g", ["s"], parent="c", after=0),
    )
    transport = FakeTransport(service_s=0.1)
    await _replay(reqs, transport, time_scale=0.02)
    assert transport.sent["c"] == at(transport.ended["p"] + 0.1)
    assert transport.sent["g"] == at(transport.ended["c"])


async def test_fan_out_sends_every_child_together(tmp_path: Path) -> None:
    children = [request(f"c{i}", ["s"], parent="p", after=1) for i in range(5)]
    reqs = _requests(tmp_path, request("p", ["s"], start=0), *children)
    transport = FakeTransport(service_s=0.05)
    run = await _replay(reqs, transport, time_scale=0.05)
    sent = [transport.sent[f"c{i}"] for i in range(5)]
    assert sent == [at(transport.ended["p"] + 0.05)] * 5
    assert len(run.results) == 6


async def test_a_failed_parent_still_releases_its_children(tmp_path: Path) -> None:
    reqs = _requests(
        tmp_path,
        request("p", ["s"], start=0),
        request("c", ["s"], parent="p", after=1),
        request("g", ["s"], parent="c", after=1),
    )
    transport = FakeTransport(failing=["p"])
    run = await _replay(reqs, transport, time_scale=0.01)
    by_id = {r.request_id: r for r in run.results}
    assert set(by_id) == {"p", "c", "g"}
    assert not by_id["p"].ok and by_id["p"].error == "HTTP 503: injected"
    assert by_id["c"].ok and by_id["g"].ok
    assert transport.sent["c"] == at(transport.ended["p"] + 0.01)


@pytest.mark.parametrize(("time_scale", "gap_s"), [(0.1, 0.2), (0.01, 0.02)])
async def test_time_scale_stretches_after_too(
    tmp_path: Path, time_scale: float, gap_s: float
) -> None:
    reqs = _requests(
        tmp_path, request("p", ["s"], start=0), request("c", ["s"], parent="p", after=2)
    )
    transport = FakeTransport(service_s=0)
    await _replay(reqs, transport, time_scale=time_scale)
    assert transport.sent["c"] == at(transport.ended["p"] + gap_s)


async def test_on_result_sees_every_request(tmp_path: Path) -> None:
    reqs = _requests(
        tmp_path, request("a", ["s"], start=0), request("b", ["s"], parent="a", after=0)
    )
    seen: list[str] = []
    await _replay(
        reqs, FakeTransport(), time_scale=0.01, on_result=lambda r: seen.append(r.request_id)
    )
    assert seen == ["a", "b"]
