"""`switchyard bench quality`: detection speed and false positives per injected fault.

    .venv/bin/python -m bench.quality                       # every scenario, ~2 minutes
    .venv/bin/python -m bench.quality --scenarios loops --twin-requests 500
    .venv/bin/python -m bench.quality --fleet --seeds 11-20   # four backends, two faulty

Prints a Markdown table (the one in docs/quality.md) and, with `--json FILE`, writes it.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from bench.quality.detection import SCENARIOS, Harness, Outcome, Scenario


@dataclass(frozen=True)
class RunLimits:
    seed: int = 7
    warmup: int = 300
    max_fault_steps: int = 3000
    hold_steps: int = 300
    max_restore_steps: int = 10_800
    twin_requests: int = 2500
    """Healthy-twin requests per scenario, at least (4 scenarios: 10,000 in all)."""
    probe_interval_s: float = 300.0


async def run_scenario(scenario: Scenario, limits: RunLimits) -> Outcome:
    """Warm-up, fault on until ejected, a stretch more, fault cleared until restored."""
    out = Outcome(scenario)
    async with Harness(scenario, seed=limits.seed, probe_interval_s=limits.probe_interval_s) as h:
        watch = _TwinWatch(h)
        h.set_twin_faults()
        for _ in range(limits.warmup):
            await watch.tick()
        h.set_fault(True)
        await _until_ejected(watch, limits, out)
        for _ in range(limits.hold_steps):
            await watch.tick()
        h.set_fault(False)
        await _until_restored(watch, limits, out)
        assert h.prober is not None
        out.faulty_state_changes = h.book.transitions("faulty", "emulated-model")
        out.twin_requests = h.served["twin"]
        out.faulty_requests = h.served["faulty"]
        out.twin_ejections = watch.ejections
        out.probe_tokens = h.prober.tokens
    return out


async def _until_ejected(watch: _TwinWatch, limits: RunLimits, out: Outcome) -> None:
    h = watch.harness
    assert h.prober is not None
    fault_at, cycles_at, served_at = h.clock.now, h.prober.cycles, h.served["faulty"]
    for _ in range(limits.max_fault_steps):
        await watch.tick()
        if h.view("faulty").state == "ejected":
            out.faulty_requests_to_ejection = h.served["faulty"] - served_at
            out.seconds_to_ejection = h.clock.now - fault_at
            out.cycles_to_ejection = h.prober.cycles - cycles_at
            out.ejected_by = h.view("faulty").reason
            return


async def _until_restored(watch: _TwinWatch, limits: RunLimits, out: Outcome) -> None:
    """Restored = healthy from some point on, to the end of the run (no relapse); the run
    also goes on until the twin has served its share of requests."""
    h = watch.harness
    cleared_at = h.clock.now
    healthy_since: float | None = cleared_at if h.view("faulty").state == "healthy" else None
    steps = 0
    while steps < limits.max_restore_steps or h.served["twin"] < limits.twin_requests:
        await watch.tick()
        steps += 1
        healthy = h.view("faulty").state == "healthy"
        if not healthy:
            healthy_since = None
        elif healthy_since is None:
            healthy_since = h.clock.now
        settled = steps >= limits.max_restore_steps // 4
        if healthy and settled and h.served["twin"] >= limits.twin_requests:
            break
    if healthy_since is not None:
        out.seconds_to_restore = healthy_since - cleared_at


class _TwinWatch:
    """Ticks the harness and counts every time the healthy twin becomes ejected."""

    def __init__(self, harness: Harness) -> None:
        self.harness = harness
        self.ejections = 0
        self._was_ejected = False

    async def tick(self) -> None:
        await self.harness.tick()
        ejected = self.harness.view("twin").state == "ejected"
        self.ejections += ejected and not self._was_ejected
        self._was_ejected = ejected


def table(outcomes: list[Outcome]) -> str:
    head = (
        "| fault | target | ejected after (faulty requests / probe cycles / virtual s) "
        "| by | healthy twin: requests, ejections | restored after fault cleared "
        "| state changes (faulty) | |\n|---|---|---|---|---|---|---|---|"
    )
    rows = [head]
    for o in outcomes:
        s = o.scenario
        target = (
            f"≤ {s.target_requests} requests"
            if s.target_requests
            else f"≤ {s.target_cycles} cycles"
        )
        detected = "not ejected"
        if o.seconds_to_ejection is not None:
            detected = (
                f"{o.faulty_requests_to_ejection} / {o.cycles_to_ejection} "
                f"/ {o.seconds_to_ejection:,.0f}"
            )
        restored = f"{o.seconds_to_restore:,.0f} s" if o.seconds_to_restore is not None else "no"
        rows.append(
            f"| {s.fault} | {target} | {detected} | {o.ejected_by.split(';')[0]} "
            f"| {o.twin_requests:,}, {o.twin_ejections} | {restored} | {o.faulty_state_changes} "
            f"| {'met' if o.met else 'MISSED'} |"
        )
    twin = sum(o.twin_requests for o in outcomes)
    false = sum(o.twin_ejections for o in outcomes)
    rows.append(f"\nHealthy twins: {twin:,} requests, {false} ejections.")
    return "\n".join(rows)


def to_json(outcome: Outcome) -> dict[str, Any]:
    return {
        "scenario": outcome.scenario.name,
        "fault": outcome.scenario.fault,
        "faults": outcome.scenario.faults,
        "target_requests": outcome.scenario.target_requests,
        "target_cycles": outcome.scenario.target_cycles,
        "faulty_requests_to_ejection": outcome.faulty_requests_to_ejection,
        "cycles_to_ejection": outcome.cycles_to_ejection,
        "seconds_to_ejection": outcome.seconds_to_ejection,
        "ejected_by": outcome.ejected_by,
        "seconds_to_restore": outcome.seconds_to_restore,
        "faulty_state_changes": outcome.faulty_state_changes,
        "faulty_requests": outcome.faulty_requests,
        "twin_requests": outcome.twin_requests,
        "twin_ejections": outcome.twin_ejections,
        "probe_tokens": outcome.probe_tokens,
        "met": outcome.met,
    }


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--fleet" in argv:  # several faulty backends at once, idle or loaded (fleet.py)
        from bench.quality.fleet import main as fleet_main

        argv.remove("--fleet")
        return fleet_main(argv)
    parser = argparse.ArgumentParser(prog="switchyard bench quality", description=__doc__)
    parser.add_argument("--scenarios", default=",".join(s.name for s in SCENARIOS))
    defaults = RunLimits()
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--twin-requests", type=int, default=defaults.twin_requests)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    # Tens of thousands of emulator requests: their access log is noise here.
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)
    wanted = args.scenarios.split(",")
    scenarios = [s for s in SCENARIOS if s.name in wanted]
    limits = RunLimits(seed=args.seed, twin_requests=args.twin_requests)
    outcomes = []
    for scenario in scenarios:
        started = time.monotonic()
        outcomes.append(asyncio.run(run_scenario(scenario, limits)))
        print(f"{scenario.name}: {time.monotonic() - started:.1f} s", file=sys.stderr)
    print(table(outcomes))
    if args.json is not None:
        payload = {
            "seed": args.seed,
            "limits": limits.__dict__,
            "scenarios": [to_json(o) for o in outcomes],
        }
        args.json.write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2))
    return 0 if all(o.met for o in outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
