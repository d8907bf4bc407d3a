"""`switchyard bench kill-backend`: one of the engines is SIGKILLed mid-run.

Each request is classed by where it was when the engine died: finished before, streaming
(the client had bytes) or not yet streaming (waiting for its first byte, or sent after).
The target: at least 99.9 % of the not-yet-streaming ones succeed (the gateway retries
them elsewhere); the streams cut on the dead engine must end with an explicit error
event, never a silent truncation.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.resilience.client import Outcome
from bench.resilience.servers import (
    EngineSpec,
    GatewaySpec,
    get_json,
    get_text,
    raise_fd_limit,
    running,
)
from bench.resilience.traffic import Mix, Traffic, steady, summary

TARGET_SUCCESS = 0.999


@dataclass(frozen=True)
class KillParams:
    engines: int = 2
    rate_per_s: float = 50.0
    duration_s: float = 30.0
    kill_at_s: float = 10.0
    token_delay_ms: float = 50.0
    base_latency_ms: float = 200.0
    max_tokens: int = 40
    max_in_flight: int = 2000


def _answering_since(outcome: Outcome) -> float | None:
    """When the client first heard back: the response head (a stream's head goes out when
    the gateway commits to a backend), else the first body bytes."""
    return outcome.head if outcome.head is not None else outcome.first_byte


def classify(outcomes: list[Outcome], killed_at: float, killed: str) -> dict[str, list[Outcome]]:
    classes: dict[str, list[Outcome]] = {
        "finished_before_kill": [],
        "streaming_on_killed_engine": [],
        "streaming_on_other_engines": [],
        "not_yet_streaming": [],
    }
    for outcome in outcomes:
        if outcome.ended < killed_at:
            classes["finished_before_kill"].append(outcome)
        elif outcome.backend == killed and outcome.status == 200:
            # Committed to the dead engine: the gateway commits on a backend's first
            # chunk, which a killed process cannot send, so this began before the kill
            # (whenever the client, on the same busy cores, got round to reading it).
            classes["streaming_on_killed_engine"].append(outcome)
        elif (since := _answering_since(outcome)) is not None and since < killed_at:
            classes["streaming_on_other_engines"].append(outcome)
        else:
            classes["not_yet_streaming"].append(outcome)
    return classes


def _cut_streams(outcomes: list[Outcome]) -> dict[str, int]:
    return {
        "error_event": sum(o.error.startswith("error event") for o in outcomes),
        "silent_cut": sum(o.error == "stream ended without [DONE]" for o in outcomes),
        "ok": sum(o.ok for o in outcomes),
    }


async def _drive(params: KillParams, port: int, victim: tuple[str, int]) -> dict[str, Any]:
    traffic = Traffic()
    mix = Mix(max_tokens=params.max_tokens)
    load = asyncio.create_task(
        steady(port, params.rate_per_s, params.duration_s, mix, traffic, params.max_in_flight)
    )
    await asyncio.sleep(params.kill_at_s)
    in_flight = traffic.in_flight
    killed_at = time.monotonic()
    os.kill(victim[1], signal.SIGKILL)
    await load
    ready = await asyncio.to_thread(get_json, f"http://127.0.0.1:{port}/readyz")
    metrics = await asyncio.to_thread(get_text, f"http://127.0.0.1:{port}/metrics")
    classes = classify(traffic.outcomes, killed_at, victim[0])
    waiting = classes["not_yet_streaming"]
    rate = summary(waiting)["success_rate"]
    # How many of the cut streams the client itself read only after the kill.
    late = [
        o for o in classes["streaming_on_killed_engine"] if (_answering_since(o) or 0) > killed_at
    ]
    return {
        "killed": victim[0],
        "in_flight_at_kill": in_flight,
        "all": summary(traffic.outcomes),
        "classes": {name: summary(items) for name, items in classes.items()},
        "streams_cut_on_killed_engine": _cut_streams(classes["streaming_on_killed_engine"]),
        "not_yet_streaming_success_rate": rate,
        "streams_on_killed_engine_read_after_kill": len(late),
        "target_success_rate": TARGET_SUCCESS,
        "readyz_after": ready[1],
        # Attempts that failed and moved on (by failed backend and outcome), ejections.
        "gateway_metrics": [
            line
            for line in metrics.splitlines()
            if line.startswith(("switchyard_retries_total", "switchyard_ejections_total"))
        ],
    }


def run(params: KillParams, workdir: Path) -> dict[str, Any]:
    raise_fd_limit(4 * params.max_in_flight + 1024)
    engine = EngineSpec(
        count=params.engines,
        token_delay_ms=params.token_delay_ms,
        base_latency_ms=params.base_latency_ms,
    )
    with running(engine, GatewaySpec(), workdir) as fleet:
        name = sorted(fleet.engines)[0]
        victim = (name, fleet.engines[name][1].pid)
        result = asyncio.run(_drive(params, fleet.port, victim))
    return {"params": asdict(params), **result}


def passed(result: dict[str, Any]) -> bool:
    rate = result["not_yet_streaming_success_rate"]
    cut = result["streams_cut_on_killed_engine"]
    return rate is not None and rate >= TARGET_SUCCESS and cut["silent_cut"] == 0
