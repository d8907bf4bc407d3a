"""Gateway overhead: direct vs Switchyard vs LiteLLM's proxy, against the same emulated engines.

Usage: .venv/bin/python -m bench.overhead [--quick] [--skip-litellm] [--json FILE]

Every server is a subprocess stopped by PID on exit (Ctrl-C included). Targets take turns
within each phase, so that noise on the shared machine hits all of them alike.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable from the repo root
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import tables
from bench.load import Pool, Target
from bench.overhead.phases import Running, Settings, record_memory, run_all
from bench.overhead.report import DIRECT, SWITCHYARD, Phase, verdicts
from bench.procs import Server, StartError, install_interrupts, pin_self
from bench.targets import (
    INSTANT,
    LITELLM_REQUIREMENT,
    PACED,
    REPO_DIR,
    ROUTES,
    litellm_version,
    start_emulator,
    start_litellm,
    start_switchyard,
)

SERVER_CPUS = {0}  # the gateway under test gets a core of its own ...
CLIENT_CPUS = {1}  # ... the load generator and the engine share the other
MAX_CONCURRENCY = 64


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few requests per phase (smoke)")
    parser.add_argument("--json", type=Path, help="write the results to this file")
    parser.add_argument("--skip-litellm", action="store_true", help="do not install/run LiteLLM")
    parser.add_argument(
        "--skip-info-log", action="store_true", help="no extra Switchyard run with info logging"
    )
    parser.add_argument("--no-pin", action="store_true", help="do not pin processes to cores")
    parser.add_argument("--max-tokens", type=int, default=64, help="output tokens per request")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply request counts")
    return parser.parse_args(argv)


def plan(quick: bool, scale: float) -> tuple[list[Phase], int]:
    """Phases (non-streaming first: chunk CPU needs their per-request CPU) and rounds."""
    counts = (
        {1: (30, 20), 16: (64, 64), 64: (128, 128)}
        if quick
        else {
            1: (1500, 300),
            16: (3000, 1500),
            64: (6000, 3000),
        }
    )
    phases = [
        Phase(c, stream, max(c, int(counts[c][stream] * scale)))
        for stream in (False, True)
        for c in (1, 16, 64)
    ]
    return phases, 2 if quick else 3


def start_targets(
    args: argparse.Namespace, workdir: Path, started: list[Server], info: dict[str, Any]
) -> tuple[dict[str, Running], dict[bool, int]]:
    """Engines, then the gateways; LiteLLM failing to install or start is reported, not fatal."""
    server_cpus = None if args.no_pin else SERVER_CPUS
    engine_ports: dict[str, int] = {}
    engine_pids: dict[bool, int] = {}
    for engine, stream in ((INSTANT, False), (PACED, True)):
        server, engine_ports[engine.name] = start_emulator(
            engine, workdir, None if args.no_pin else CLIENT_CPUS
        )
        started.append(server)
        engine_pids[stream] = server.pid
    direct = {
        stream: Pool(Target(DIRECT, engine_ports[e.name], e.model), MAX_CONCURRENCY)
        for e, stream in ((INSTANT, False), (PACED, True))
    }
    running = {DIRECT: Running(DIRECT, direct)}
    gateways = [(SWITCHYARD, "warning")]
    if not (args.quick or args.skip_info_log):
        gateways.append(("switchyard-info-log", "info"))
    for name, level in gateways:
        server, port = start_switchyard(name, engine_ports, workdir, server_cpus, level)
        started.append(server)
        running[name] = Running(name, _route_pools(name, port), server)
    if args.skip_litellm:
        info["litellm"] = {"status": "skipped (--skip-litellm)"}
        return running, engine_pids
    try:
        server, port = start_litellm(engine_ports, workdir, server_cpus)
    except (StartError, OSError, subprocess.SubprocessError) as exc:
        info["litellm"] = {"status": f"unavailable: {exc}"}
        return running, engine_pids
    started.append(server)
    running["litellm"] = Running("litellm", _route_pools("litellm", port), server)
    info["litellm"] = {"version": litellm_version(), "requirement": LITELLM_REQUIREMENT}
    return running, engine_pids


def _route_pools(name: str, port: int) -> dict[bool, Pool]:
    return {
        False: Pool(Target(name, port, ROUTES[INSTANT.name]), MAX_CONCURRENCY),
        True: Pool(Target(name, port, ROUTES[PACED.name]), MAX_CONCURRENCY),
    }


def _event_loop_runner() -> asyncio.Runner:
    try:
        import uvloop

        return asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:
        return asyncio.Runner()


def machine() -> dict[str, Any]:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    return {
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "python": platform.python_version(),
        "kernel": platform.release(),
        "loadavg_at_start": os.getloadavg(),
        "switchyard_revision": _revision(),
    }


def _revision() -> str | None:
    """HEAD of the repo, with "+dirty" when the work tree differs (the run measured that)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO_DIR,
        ).stdout.strip()
        diff = subprocess.run(["git", "diff", "--quiet", "HEAD"], check=False, cwd=REPO_DIR)
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+dirty" if diff.returncode != 0 else "")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    install_interrupts()
    phases, rounds = plan(args.quick, args.scale)
    info: dict[str, Any] = {}
    started: list[Server] = []
    result: dict[str, Any] = {"machine": machine(), "params": _params(args, phases, rounds)}
    workdir = Path(tempfile.mkdtemp(prefix="switchyard-bench-"))
    try:
        print(f"starting servers (logs in {workdir}) ...", file=sys.stderr)
        running, engine_pids = start_targets(args, workdir, started, info)
        pin_self(None if args.no_pin else CLIENT_CPUS)
        settings = Settings(rounds, args.max_tokens, 20 if args.quick else 200, engine_pids)
        with _event_loop_runner() as runner:
            result["phases"] = runner.run(run_all(phases, running, settings))
        install_interrupts()  # closing the loop reset them
        record_memory(running, info)
        _mark_unavailable(result["phases"], info)
    except StartError as exc:
        print(f"benchmark aborted: {exc}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("interrupted; stopping servers", file=sys.stderr)
        return 130
    finally:
        for server in reversed(started):
            server.stop()
    result["machine"]["loadavg_at_end"] = os.getloadavg()
    result["targets"] = info
    result["verdicts"] = verdicts(result["phases"], info.get(SWITCHYARD, {}).get("idle_rss_mb"))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    _print(result, args.quick)
    return 0 if _healthy(result) else 1


def _mark_unavailable(phases: list[dict[str, Any]], info: dict[str, Any]) -> None:
    for name, target in info.items():
        status = target.get("status", "")
        if status.startswith("unavailable") or status.startswith("skipped"):
            for phase in phases:
                phase["results"].setdefault(name, {"unavailable": status[:80]})


def _params(args: argparse.Namespace, phases: list[Phase], rounds: int) -> dict[str, Any]:
    return {
        "quick": args.quick,
        "max_tokens": args.max_tokens,
        "token_delay_ms": {"non-stream": INSTANT.token_delay_ms, "stream": PACED.token_delay_ms},
        "rounds_per_phase": rounds,
        "pinned": None
        if args.no_pin
        else {"servers": sorted(SERVER_CPUS), "client+engine": sorted(CLIENT_CPUS)},
        "phases": [p.name + f": {p.requests} requests" for p in phases],
        "started_at": time.strftime("%Y-%m-%d %H:%M:%S %z"),
    }


def _healthy(result: dict[str, Any]) -> bool:
    """The run counts only if the direct path and Switchyard answered every request."""
    return all(
        p["results"][name]["errors"] == 0 and p["results"][name]["requests"] > 0
        for p in result["phases"]
        for name in (DIRECT, SWITCHYARD)
    )


def _print(result: dict[str, Any], quick: bool) -> None:
    phases = result["phases"]
    print("\nLatency (ms; added = target minus direct, same phase; TTFC = time to first chunk)")
    print(tables.latency_table(phases))
    print("\nServer CPU (process tree, /proc/PID/stat utime+stime)")
    print(tables.cost_table(phases))
    print("\nMemory (VmRSS before traffic, VmHWM at the end)")
    print(tables.memory_table(result["targets"]))
    note = " — quick run, indicative only" if quick else ""
    print(f"\nTargets{note}")
    print(tables.verdict_table(result["verdicts"]))
    for phase in phases:
        for name, row in phase["results"].items():
            for example in row.get("error_examples", []):
                print(f"error in {phase['name']} / {name}: {example}")


if __name__ == "__main__":
    sys.exit(main())
