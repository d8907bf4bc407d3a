"""`switchyard bench quality --fleet`: several faulty backends at once, on an idle or a
loaded gateway machine, as a new user would try it.

    switchyard bench quality --fleet --seeds 11-20 --json bench/results/quality-fleet.json

Each run starts the real gateway (in process, on loopback) in front of four emulated
engines on one route: `loop35` loops on 35 % of its text answers, `tools12` malforms
12 % of its tool calls, `twin-a` and `twin-b` are healthy. Clients send a mixed workload
(half with a tool to call, half streamed) at a fixed concurrency through the `balanced`
profile's quality parts: `quality-filter`, `quality-scorer` and a load scorer, then
`max-score-picker`. Time is real, and the probes' intervals are shortened to fit a run
of a few hundred requests. The `loaded` scenario also runs one CPU burner per core (busy
loops in subprocesses, stopped by PID), so timing, and with it which backend gets which
request, shifts as it would on a busy machine.

Per run it reports each faulty backend's fate (ejected after how many of its requests,
or the state it ended in) and the healthy twins' ejections, which should be none.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson

from emulator.loopback import LoopbackServer
from emulator.server import EmulatorServer
from emulator.settings import EmulatorSettings
from gateway.config.root import parse_config
from gateway.http.app import create_app
from gateway.quality.book.quality_book import QualityBook

MODEL = "emulated-model"
FLEET: dict[str, dict[str, Any]] = {
    "loop35": {"loop_rate": 0.35},
    "tools12": {"malformed_tool_call_rate": 0.12},
    "twin-a": {},
    "twin-b": {},
}
FAULTY = ("loop35", "tools12")
TWINS = ("twin-a", "twin-b")
_TOOL = {
    "type": "function",
    "function": {
        "name": "lookup",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["query", "limit"],
        },
    },
}
_PROFILE = [
    {"ref": "healthy-filter"},
    {"ref": "quality-filter"},
    {"ref": "quality-scorer", "weight": 1.0},
    {"ref": "load", "weight": 1.0},
    {"ref": "max-score-picker"},
]


@dataclass(frozen=True)
class FleetLimits:
    requests: int = 500
    concurrency: int = 4
    token_delay_ms: float = 1.0
    probe_interval_s: float = 20.0
    suspect_interval_s: float = 1.0


@dataclass
class BackendOutcome:
    served: int = 0
    ejected_after: int | None = None
    """Its own requests served when it was first ejected; None: never ejected."""
    ejections: int = 0
    final_state: str = "unknown"
    audit_entries: int = 0
    first_trigger: str = ""


@dataclass
class RunOutcome:
    scenario: str
    seed: int
    backends: dict[str, BackendOutcome] = field(default_factory=dict)
    suspect_probes: int = 0
    wall_s: float = 0.0

    @property
    def twin_ejections(self) -> int:
        return sum(self.backends[name].ejections for name in TWINS)

    @property
    def faulty_caught(self) -> int:
        return sum(self.backends[name].ejected_after is not None for name in FAULTY)


def gateway_config(urls: dict[str, str], limits: FleetLimits) -> dict[str, Any]:
    probes = {
        "interval_s": limits.probe_interval_s,
        "suspect_interval_s": limits.suspect_interval_s,
        "needle_tokens": 3000,
    }
    return {
        "backends": [{"name": n, "base_url": u, "models": [MODEL]} for n, u in urls.items()],
        "routes": [{"name": "default", "model": MODEL, "backends": list(urls)}],
        "policies": [{"type": "least-load-scorer", "name": "load"}],
        "profiles": [{"name": "balanced", "plugins": _PROFILE}],
        "health": {"active_probes": False},
        "quality": {"probes": probes},
    }


def request_body(rng: random.Random) -> dict[str, Any]:
    words = " ".join(rng.choice(("river", "stone", "signal", "yard", "track")) for _ in range(8))
    body: dict[str, Any] = {
        "model": "default",
        "max_tokens": 64,
        "stream": rng.random() < 0.5,
        "messages": [{"role": "user", "content": f"Tell me about {words}."}],
    }
    if rng.random() < 0.5:
        body["tools"] = [_TOOL]
    return body


class _Tally:
    """Counts each backend's requests and notes the first ejection of each."""

    def __init__(self, book: QualityBook) -> None:
        self.book = book
        self.out = {name: BackendOutcome() for name in FLEET}
        self._states = dict.fromkeys(FLEET, "unknown")

    def served(self, backend: str) -> None:
        if backend in self.out:
            self.out[backend].served += 1
        self.look()

    def look(self) -> None:
        for name, outcome in self.out.items():
            state = self.book.view(name, MODEL).state
            if state == "ejected" and self._states[name] != "ejected":
                outcome.ejections += 1
                if outcome.ejected_after is None:
                    outcome.ejected_after = outcome.served
            self._states[name] = state


async def run_once(scenario: str, seed: int, limits: FleetLimits) -> RunOutcome:
    loop = asyncio.get_running_loop()
    started = loop.time()
    engines: dict[str, EmulatorServer] = {}
    burners = start_burners() if scenario == "loaded" else []
    try:
        for index, (name, faults) in enumerate(FLEET.items()):
            # Real time: the probe cadence is fitted to runs of max_tokens-long answers
            # (answers that end on their own shorten a run by a third, and fewer probes
            # fire), so the answers stay exactly max_tokens long.
            settings = EmulatorSettings(
                ignore_eos=True,
                token_delay_ms=limits.token_delay_ms,
                faults={**faults, "seed": seed * 10 + index} if faults else {},
            )
            engines[name] = EmulatorServer(settings, host="127.0.0.1", port=0)
            await engines[name].start()
        urls = {name: engine.base_url for name, engine in engines.items()}
        outcome = await _drive(scenario, seed, urls, limits)
    finally:
        stop_burners(burners)
        for engine in engines.values():
            await engine.stop()
    outcome.wall_s = loop.time() - started
    return outcome


async def _drive(scenario: str, seed: int, urls: dict[str, str], limits: FleetLimits) -> RunOutcome:
    app = create_app(parse_config(gateway_config(urls, limits)))
    server = LoopbackServer(app, lifespan="on")
    await server.start()
    gateway = app.state.gateway
    assert gateway.quality is not None
    tally = _Tally(gateway.quality.book)
    rng = random.Random(seed)
    bodies = [request_body(rng) for _ in range(limits.requests)]
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for body in bodies:
        queue.put_nowait(body)
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:

            async def worker() -> None:
                while not queue.empty():
                    response = await client.post("/v1/chat/completions", json=queue.get_nowait())
                    tally.served(response.headers.get("x-switchyard-backend", ""))

            await asyncio.gather(*(worker() for _ in range(limits.concurrency)))
            await asyncio.sleep(1.5)  # the last responses' evidence, and a refresh
            tally.look()
    finally:
        await server.stop()
    book = gateway.quality.book
    for name, out in tally.out.items():
        out.final_state = book.view(name, MODEL).state
        audit = book.audit(name, MODEL)
        out.audit_entries = len(audit)
        out.first_trigger = audit[0].trigger if audit else ""
    probes = gateway.prober.suspects.probes if gateway.prober is not None else 0
    return RunOutcome(scenario, seed, tally.out, suspect_probes=probes)


def start_burners() -> list[subprocess.Popen[bytes]]:
    """One busy loop per core, as separate processes (stopped by PID)."""
    code = "while True: pass"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(os.cpu_count() or 1)]


def stop_burners(burners: list[subprocess.Popen[bytes]]) -> None:
    for burner in burners:
        burner.kill()
        burner.wait()


def table(outcomes: list[RunOutcome]) -> str:
    head = (
        "| scenario | seed | loop35 (35 % loops) | tools12 (12 % bad tool calls) "
        "| twins: requests, ejections | suspect probes | wall s |\n|---|--:|---|---|---|--:|--:|"
    )
    rows = [head]
    for o in outcomes:
        twins = sum(o.backends[n].served for n in TWINS)
        rows.append(
            f"| {o.scenario} | {o.seed} | {_fate(o.backends['loop35'])} "
            f"| {_fate(o.backends['tools12'])} | {twins:,}, {o.twin_ejections} "
            f"| {o.suspect_probes} | {o.wall_s:.0f} |"
        )
    return "\n".join(rows)


def summary(outcomes: list[RunOutcome]) -> str:
    lines = []
    for scenario in sorted({o.scenario for o in outcomes}):
        runs = [o for o in outcomes if o.scenario == scenario]
        caught = {n: sum(o.backends[n].ejected_after is not None for o in runs) for n in FAULTY}
        after = {
            n: sorted(o.backends[n].ejected_after or 0 for o in runs if o.backends[n].ejected_after)
            for n in FAULTY
        }
        false = sum(o.twin_ejections for o in runs)
        twins = sum(o.backends[n].served for o in runs for n in TWINS)
        parts = [_caught_text(n, caught[n], len(runs), after[n]) for n in FAULTY]
        parts.append(f"healthy twins {twins:,} requests, {false} ejections")
        lines.append(f"- **{scenario}**: " + "; ".join(parts))
    return "\n".join(lines)


def _caught_text(name: str, caught: int, runs: int, after: list[int]) -> str:
    text = f"{name} ejected in {caught}/{runs} runs"
    if after:
        text += f" (median after {after[len(after) // 2]} of its requests)"
    return text


def _fate(b: BackendOutcome) -> str:
    if b.ejected_after is not None:
        return f"ejected after {b.ejected_after} (of {b.served}); now {b.final_state}"
    return f"{b.final_state} after {b.served}"


def to_json(o: RunOutcome) -> dict[str, Any]:
    return {
        "scenario": o.scenario,
        "seed": o.seed,
        "wall_s": round(o.wall_s, 1),
        "suspect_probes": o.suspect_probes,
        "backends": {name: b.__dict__ for name, b in o.backends.items()},
    }


def _seeds(text: str) -> list[int]:
    if "-" in text:
        low, high = text.split("-")
        return list(range(int(low), int(high) + 1))
    return [int(part) for part in text.split(",")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="switchyard bench quality --fleet", description=__doc__)
    parser.add_argument("--scenarios", default="idle,loaded")
    parser.add_argument("--seeds", default="11-20", help="e.g. 11-20 or 1,2,3")
    parser.add_argument("--requests", type=int, default=FleetLimits.requests)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)
    limits = FleetLimits(requests=args.requests)
    outcomes = []
    for scenario in args.scenarios.split(","):
        for seed in _seeds(args.seeds):
            outcome = asyncio.run(run_once(scenario, seed, limits))
            print(f"{scenario} seed {seed}: {outcome.wall_s:.0f} s", file=sys.stderr)
            outcomes.append(outcome)
    print(table(outcomes))
    print()
    print(summary(outcomes))
    if args.json is not None:
        payload = {"limits": limits.__dict__, "runs": [to_json(o) for o in outcomes]}
        args.json.write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2))
    return 0 if all(o.twin_ejections == 0 for o in outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
