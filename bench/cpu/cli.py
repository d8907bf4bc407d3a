"""Gateway CPU per request and per SSE chunk with the defaults on, and what each part costs.

Usage:
    switchyard bench cpu [--quick] [--rounds N] [--json FILE]     (or: python -m bench.cpu)
    switchyard bench cpu --ingress messages|responses --variants defaults all-off
    switchyard bench cpu --variants defaults tracing-1.0 tracing-0.01   (tracing's cost)

Issue 16's item 9: with the quality tap, telemetry and probes at their defaults and the
embedded config's cache-aware profile, CPU per non-streaming request ≤ 400 µs and per SSE
chunk ≤ 20 µs, at every concurrency. Variants of the same config, each with one part
turned off, run side by side against the same emulated engines, taking turns in every
phase (so noise on the shared machine hits all alike); a part's cost is the difference.
The gateways share CPU 0 (only the one whose turn it is gets load); the load generator
(`bench.load`, one keep-alive connection per worker, closed loop) and the engines CPU 1.
CPU = utime + stime of the gateway's process (/proc/PID/stat) around its turn, ÷ requests;
per chunk = (streaming CPU - requests x the same variant's non-streaming CPU per request
at that concurrency) ÷ SSE chunks relayed. `tcp-pipe` and `asgi-relay`, measured the same
way, are no gateways but floors: a bare byte pipe (bench/cpu/floor_pipe.py), and uvicorn with the
lean upstream client relaying and nothing else (bench/cpu/floor_relay.py). Gateways run at the
default log level, so the access log writes its line per request as it does for a user.
First, with no traffic, each server idles in turns (10 s a turn; 2 s with --quick): its
CPU and wake-ups a second (all threads' run time from /proc/PID/task/*/schedstat): what its
background timers cost. With `--ingress messages` or `--ingress responses` the clients speak
Anthropic's Messages or OpenAI's Responses API, which the gateway translates both ways (the
floors, which only relay, sit those runs out); a chunk is then one of that format's SSE
events. `tracing-1.0` and `tracing-0.01` are the defaults with traces on at those sample
ratios, exported to a real OTLP receiver on loopback (`bench.cpu.tracing`).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import urllib.request
from functools import partial
from pathlib import Path
from typing import Any

import uvloop
import yaml

from bench.cpu import tracing
from bench.cpu.chunk_path import relay_parts
from bench.cpu.parts import measure
from bench.cpu.turns import Cell, chunk_us, idle_turn, load_turn
from bench.load import INGRESS_PATHS, Target, request_bytes
from bench.procs import Server, free_port, install_interrupts, pin_self, sample
from bench.targets import INSTANT, MAIN_BIN, PACED, Engine, _ready_or_stopped, start_emulator
from gateway.config.root import parse_config

SERVER_CPUS = {0}
CLIENT_CPUS = {1}
EMBEDDED = Path(__file__).resolve().parents[2] / "gateway" / "examples" / "embedded.yaml"
TELEMETRY_OFF = {"access_log": "off", "prometheus": False, "dashboard": False}
SIMPLE = [{"ref": "healthy-filter"}, {"ref": "least-load-scorer"}, {"ref": "max-score-picker"}]

VARIANTS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "quality-off": {"quality": {"enabled": False}},
    "telemetry-off": {"telemetry": TELEMETRY_OFF},
    "simple-profile": {"_simple": True},
    "gc-cpython": {"server": {"gc_gen0_threshold": 0, "gc_freeze": False}},
    "aiohttp-client": {"_backend": {"http_client": "aiohttp"}},
    "all-off": {"_simple": True, "quality": {"enabled": False}, "telemetry": TELEMETRY_OFF},
    **{name: {"_tracing": ratio} for name, ratio in tracing.RATIOS.items()},
}
"""What each variant changes from the defaults; `defaults` is what a user runs."""
FLOORS = {"tcp-pipe": "floor_pipe", "asgi-relay": "floor_relay"}
"""Not gateways, measured the same way: `tcp-pipe` (`bench.cpu.floor_pipe`), a bare byte pipe
on uvloop, the floor under any Python relay (event loop and kernel per read and write);
`asgi-relay` (`bench.cpu.floor_relay`), uvicorn and the lean upstream client relaying each
request and nothing else, the floor under a pulled relay (a task and an ASGI `send` per
chunk) on the gateway's own stack."""
TARGETS = {"per request": 400.0, "per chunk": 20.0}


def gateway_config(
    engine_ports: dict[str, int], port: int, change: dict[str, Any], traces_to: str = ""
) -> dict[str, Any]:
    """The embedded config's policies and profiles over the bench's two engines
    (`traces_to`: the OTLP receiver a tracing variant exports to)."""
    embedded = yaml.safe_load(EMBEDDED.read_text())
    change = dict(change)
    simple = change.pop("_simple", False)
    backend_change = change.pop("_backend", {})
    ratio = change.pop("_tracing", None)
    if ratio is not None:
        change["tracing"] = tracing.section(ratio, traces_to)
    profiles = list(embedded["profiles"])
    if simple:
        profiles.append({"name": "simple", "plugins": SIMPLE})
    config: dict[str, Any] = {
        "server": {"host": "127.0.0.1", "port": port, **change.pop("server", {})},
        "backends": [
            {
                "name": engine.name,
                "kind": "openai-compatible",
                "base_url": f"http://127.0.0.1:{engine_ports[engine.name]}/v1",
                "models": [engine.model],
                "max_concurrency": 1024,
                **backend_change,
            }
            for engine in (INSTANT, PACED)
        ],
        "routes": [
            {
                "name": engine.model,
                "model": engine.model,
                "backends": [engine.name],
                "profile": "simple" if simple else "cache-aware",
            }
            for engine in (INSTANT, PACED)
        ],
        "policies": embedded["policies"],
        "profiles": profiles,
    }
    return config | change


def _parts(ports: dict[str, int], max_tokens: int) -> list[tuple[str, float]]:
    """`bench.cpu.parts` on the defaults' config and one answer of the instant engine."""
    data = gateway_config(ports, 0, {})
    data["profiles"].append({"name": "simple", "plugins": SIMPLE})
    simple = {"name": "simple", "model": INSTANT.model, "backends": [INSTANT.name]}
    data["routes"].append(simple | {"profile": "simple"})
    raw = request_bytes(Target("engine", ports[INSTANT.name], INSTANT.model), False, max_tokens)
    body = raw[raw.index(b"\r\n\r\n") + 4 :]
    url = f"http://127.0.0.1:{ports[INSTANT.name]}/v1/chat/completions"
    ask = urllib.request.Request(url, body, {"content-type": "application/json"})
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(ask) as reply:
        answer = reply.read()
    return measure(parse_config(data), INSTANT.model, "simple", body, answer)


def cpu_s(server: Server) -> float:
    return sample(server.pid).cpu_s


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    engines = {e.name: start_emulator(e, workdir, CLIENT_CPUS) for e in (INSTANT, PACED)}
    ports = {name: port for name, (_, port) in engines.items()}
    gateways: dict[str, dict[str, tuple[Server, int]]] = {}
    traced = any(name in tracing.RATIOS for name in args.variants)
    receiver = await tracing.start_receiver() if traced else None
    try:
        relayed = await (relay_parts(2_000, 200) if args.quick else relay_parts())
        parts = _parts(ports, args.max_tokens) + relayed
        for name in args.variants:
            if name in FLOORS:
                gateways[name] = {e: _floor(name, e, p, workdir) for e, p in ports.items()}
                continue
            port = free_port()
            path = workdir / f"{name}.yaml"
            traces_to = receiver.endpoint if receiver is not None else ""
            config = gateway_config(ports, port, VARIANTS[name], traces_to)
            path.write_text(yaml.safe_dump(config))
            argv = [str(MAIN_BIN / "switchyard"), "serve", "--config", str(path)]
            argv += ["--port", str(port)]  # the default log level: the access log runs
            server = Server(name, argv, workdir / f"{name}.log", cpus=SERVER_CPUS)
            gateways[name] = {engine: (server, port) for engine in ports}
            _ready_or_stopped(server, f"http://127.0.0.1:{port}/healthz", timeout_s=60)
        idle = await _idle(args, gateways)
        summary = await _phases(args, gateways) | {"parts_us": parts, "idle": idle}
        if receiver is not None:
            summary["tracing"] = await tracing.report(receiver, args.variants, summary["rows"])
        return summary
    finally:
        if receiver is not None:  # first: a gateway's last export fails fast as it stops
            await receiver.stop()
        for server, _ in {s for by_engine in gateways.values() for s in by_engine.values()}:
            server.stop()
        for server, _ in engines.values():
            server.stop()


def _floor(floor: str, engine: str, engine_port: int, workdir: Path) -> tuple[Server, int]:
    port = free_port()
    argv = [sys.executable, "-m", f"bench.cpu.{FLOORS[floor]}", str(port), str(engine_port)]
    name = f"{floor}-{engine}"
    server = Server(name, argv, workdir / f"{name}.log", cpus=SERVER_CPUS)
    _ready_or_stopped(server, f"http://127.0.0.1:{port}/v1/models", timeout_s=30)
    return server, port


async def _phases(
    args: argparse.Namespace, gateways: dict[str, dict[str, tuple[Server, int]]]
) -> dict[str, Any]:
    results: dict[str, dict[str, Cell]] = {}
    names = list(gateways)
    for phase, stream, engine, concurrency in _phase_list(args.concurrency):
        cells = results[phase] = {name: Cell() for name in names}
        requests = _requests(args, stream, concurrency)
        for round_no in range(args.rounds):
            order = names[round_no % len(names) :] + names[: round_no % len(names)]
            for name in order:
                server, port = gateways[name][engine.name]
                target = Target(name, port, engine.model, INGRESS_PATHS[args.ingress])
                cpu_of = partial(cpu_s, server)
                await load_turn(
                    target, concurrency, requests, stream, args.max_tokens, cpu_of, cells[name]
                )
        print(f"  {phase}: " + ", ".join(_brief(n, cells[n]) for n in names), flush=True)
    return _summary(results, names)


async def _idle(
    args: argparse.Namespace, gateways: dict[str, dict[str, tuple[Server, int]]]
) -> list[dict[str, Any]]:
    """Each server's CPU a second and wake-ups a second with no traffic, in turns: what
    its background timers cost."""
    servers = {name: by_engine[INSTANT.name][0] for name, by_engine in gateways.items()}
    cells = {name: Cell() for name in servers}
    seconds = 2.0 if args.quick else 10.0
    for _ in range(args.rounds):
        for name, server in servers.items():
            cells[name].add_idle(*await idle_turn(server.pid, seconds))
    rates = (f"{name} {cell.cpu_s / cell.idle_s * 1e3:.2f} ms/s" for name, cell in cells.items())
    print("  idle: " + ", ".join(rates))
    return [
        {
            "variant": name,
            "cpu_ms_per_s": round(cell.cpu_s / cell.idle_s * 1e3, 3),
            "wakes_per_s": round(cell.wakes / cell.idle_s, 1),
        }
        for name, cell in cells.items()
    ]


def _phase_list(concurrencies: list[int]) -> list[tuple[str, bool, Engine, int]]:
    """(name, streaming, engine, connections) of each phase: non-streaming and streaming at
    each concurrency, and at c=1 `stream-burst`, the instant engine's streams (each arrives
    in one or two reads): what a stream costs beyond its chunks' wake-ups."""
    phases = [(f"non-stream c={c}", False, INSTANT, c) for c in concurrencies]
    phases += [(f"stream c={c}", True, PACED, c) for c in concurrencies]
    if 1 in concurrencies:
        phases.append(("stream-burst c=1", True, INSTANT, 1))
    return phases


def _requests(args: argparse.Namespace, stream: bool, concurrency: int) -> int:
    base = (200 if stream else 1500) if concurrency == 1 else (600 if stream else 4000)
    if args.quick:
        base //= 10
    return max(int(base * args.scale), concurrency)


def _brief(name: str, cell: Cell) -> str:
    return f"{name} {cell.cpu_s / max(cell.requests, 1) * 1e6:.0f} µs/req"


def _summary(results: dict[str, dict[str, Cell]], names: list[str]) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for phase, cells in results.items():
        stream = phase.startswith("stream")
        twin = "non-stream " + phase.rsplit(" ", 1)[1] if stream else None
        for name in names:
            cell = cells[name]
            per_request = cell.cpu_s / max(cell.requests, 1) * 1e6
            row: dict[str, Any] = {
                "phase": phase,
                "variant": name,
                "requests": cell.requests,
                "errors": cell.errors,
                "cpu_us_per_request": round(per_request, 1),
                "turns_us": [round(x, 1) for x in cell.per_request_us],
            }
            if stream and twin in results:
                row["chunks_per_request"] = round(cell.chunks / max(cell.requests, 1), 1)
                row["cpu_us_per_chunk"] = round(chunk_us(cell, results[twin][name]), 2)
            rows.append(row)
    return {"rows": rows, "targets_us": TARGETS}


def render(summary: dict[str, Any]) -> str:
    rows = summary["rows"]
    ingress = summary.get("ingress", "chat")
    lines = [] if ingress == "chat" else [f"Clients speak {INGRESS_PATHS[ingress]}.", ""]
    lines += [
        "| phase | variant | requests | errors | CPU µs/req | CPU µs/chunk | vs defaults µs/req |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    defaults = {r["phase"]: r for r in rows if r["variant"] == "defaults"}
    for row in rows:
        base = defaults.get(row["phase"])
        delta = (
            f"{row['cpu_us_per_request'] - base['cpu_us_per_request']:+.0f}"
            if base is not None and row is not base
            else "—"
        )
        chunk = f"{row['cpu_us_per_chunk']:.1f}" if "cpu_us_per_chunk" in row else "—"
        lines.append(
            f"| {row['phase']} | {row['variant']} | {row['requests']} | {row['errors']} | "
            f"{row['cpu_us_per_request']:.0f} | {chunk} | {delta} |"
        )
    if summary.get("idle"):
        lines += ["", "| idle (no traffic), variant | CPU ms a second | wake-ups a second |"]
        lines += ["|---|---:|---:|"]
        lines += [
            f"| {row['variant']} | {row['cpu_ms_per_s']:.2f} | {row['wakes_per_s']:.1f} |"
            for row in summary["idle"]
        ]
    if summary.get("tracing"):
        lines += tracing.render(summary["tracing"])
    if summary.get("parts_us"):
        lines += ["", "| part, alone in-process | µs per call |", "|---|---:|"]
        lines += [f"| {name} | {us:.1f} |" for name, us in summary["parts_us"]]
    lines += ["", "Targets (defaults):"]
    for row in rows:
        if row["variant"] != "defaults" or row["phase"].startswith("stream-burst"):
            continue  # a burst's chunks come in one read: no target's measure
        if "cpu_us_per_chunk" in row:
            value, what = row["cpu_us_per_chunk"], "per chunk"
        else:
            value, what = row["cpu_us_per_request"], "per request"
        target = TARGETS[what]
        verdict = "met" if value <= target else "missed"
        lines.append(f"- {row['phase']}: {value:.1f} µs {what} (≤ {target:g}): {verdict}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the requests (smoke)")
    parser.add_argument("--rounds", type=int, default=2, help="turns per variant per phase")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply request counts")
    parser.add_argument("--max-tokens", type=int, default=64, help="output tokens per request")
    parser.add_argument(
        "--concurrency", type=int, nargs="+", default=[1, 64], help="phases' connections"
    )
    parser.add_argument(
        "--variants",
        nargs="+",
        default=[*VARIANTS, *FLOORS],
        choices=[*VARIANTS, *FLOORS],
        metavar="V",
        help=f"gateway configs ({', '.join(VARIANTS)}) and the floors ({', '.join(FLOORS)})",
    )
    parser.add_argument(
        "--ingress",
        choices=list(INGRESS_PATHS),
        default="chat",
        help="the clients' API: chat (Chat Completions), messages (Anthropic's Messages, "
        "translated), responses (OpenAI's Responses, translated); the floors speak chat only",
    )
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    if "defaults" not in args.variants:
        args.variants.insert(0, "defaults")
    if not tracing.installed():
        asked = [v for v in args.variants if v in tracing.RATIOS]
        if asked and args.variants is not parser.get_default("variants"):
            parser.error(f"{', '.join(asked)} need the `tracing` extra installed")
        args.variants = [v for v in args.variants if v not in tracing.RATIOS]
    if args.ingress != "chat":
        args.variants = [v for v in args.variants if v not in FLOORS]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    install_interrupts()
    pin_self(CLIENT_CPUS)
    with tempfile.TemporaryDirectory(prefix="switchyard-cpu-") as tmp:
        print(
            f"switchyard bench cpu: variants {', '.join(args.variants)}; "
            f"ingress {args.ingress}; logs in {tmp}"
        )
        summary = uvloop.run(run(args, Path(tmp)))
    summary["ingress"] = args.ingress
    print(render(summary))
    if args.json is not None:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
