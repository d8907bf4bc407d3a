"""Two or more checkouts' gateways, the same config, side by side in one run: CPU per
request and per SSE chunk, and idle CPU, of each tree's code.

Usage:
    git worktree add /tmp/before <commit>
    python -m bench.ab_trees --tree before=/tmp/before --tree after=. [--rounds 4]
                             [--ingress chat|messages|responses]
    python -m bench.ab_trees --tree py311=. --tree py313=. --python py313=/venv313/bin/python

What `switchyard bench cpu` does for variants of one config, this does for versions of the
code: each tree's gateway (`gateway.cli serve` with PYTHONPATH at the tree, and
PYTHONSAFEPATH so that the working directory, itself perhaps a checkout, comes not first) serves
the embedded config's policies over the same two emulated engines (`bench.cpu`'s
config), all on CPU 0, the load and the engines on CPU 1; in every round each phase gives
each tree a turn, in an order that alternates, so drifts of the shared machine hit all alike.
CPU is the sum over the server's threads of /proc/PID/task/*/schedstat (nanoseconds); per
chunk is computed as in `bench.cpu` (a stream's CPU less the same tree's non-streaming
CPU per request at that concurrency, per chunk relayed).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from bench.cpu.cli import gateway_config
from bench.cpu.turns import Cell, chunk_us, idle_turn, load_turn
from bench.load import INGRESS_PATHS, Target
from bench.procs import Server, free_port, run_measured, thread_run_s
from bench.targets import INSTANT, PACED, Engine, _ready_or_stopped, start_emulator

SERVER_CPUS = {0}
CLIENT_CPUS = {1}
IDLE_S = 5.0
MAX_TOKENS = 64


@dataclass(frozen=True)
class Phase:
    name: str
    engine: Engine | None
    """None: the idle phase."""
    requests: int
    concurrency: int


PHASES = {
    p.name: p
    for p in (
        Phase("idle", None, 0, 0),
        Phase("non-stream c=1", INSTANT, 1000, 1),
        Phase("stream c=1", PACED, 100, 1),
        Phase("non-stream c=64", INSTANT, 4000, 64),
        Phase("stream c=64", PACED, 600, 64),
    )
}


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    engines = {e.name: start_emulator(e, workdir, CLIENT_CPUS) for e in (INSTANT, PACED)}
    ports = {name: port for name, (_, port) in engines.items()}
    servers: dict[str, tuple[Server, int]] = {}
    try:
        for name, tree in args.trees.items():
            port = free_port()
            path = workdir / f"{name}.yaml"
            path.write_text(yaml.safe_dump(gateway_config(ports, port, {})))
            cli_args = ["serve", "--config", str(path), "--port", str(port)]
            argv = tree_command(cli_args, args.pythons.get(name, sys.executable))
            server = Server(
                name, argv, workdir / f"{name}.log", env=tree_env(tree), cpus=SERVER_CPUS
            )
            servers[name] = (server, port)
            _ready_or_stopped(server, f"http://127.0.0.1:{port}/healthz", timeout_s=60)
        cells = {(p, n): Cell() for p in args.phases for n in servers}
        for round_no in range(args.rounds):
            names = list(servers) if round_no % 2 == 0 else list(reversed(servers))
            for phase in args.phases:
                for name in names:
                    await _turn(PHASES[phase], servers[name], cells[(phase, name)], args)
        return _summary(args.phases, list(servers), cells)
    finally:
        for server, _ in servers.values():
            server.stop()
        for server, _ in engines.values():
            server.stop()


def tree_command(cli_args: list[str], python: str = sys.executable) -> list[str]:
    """`switchyard` with these arguments, run by `python` (this one unless told) from
    whichever tree `tree_env` puts first."""
    code = "import sys; from gateway.cli import main; sys.exit(main())"
    return [python, "-c", code, *cli_args]


def tree_env(tree: Path) -> dict[str, str]:
    """The environment in which `tree_command` runs `tree`'s code. `python -c` puts the
    working directory before PYTHONPATH, so a bench started inside a checkout would run that
    checkout's code for every tree; PYTHONSAFEPATH (Python 3.11) leaves it out."""
    return dict(os.environ, PYTHONPATH=str(tree), PYTHONSAFEPATH="1")


async def _turn(
    phase: Phase, server_port: tuple[Server, int], cell: Cell, args: argparse.Namespace
) -> None:
    server, port = server_port
    if phase.engine is None:
        cell.add_idle(*await idle_turn(server.pid, IDLE_S * args.scale))
        return
    target = Target(server.name, port, phase.engine.model, INGRESS_PATHS[args.ingress])
    requests = max(int(phase.requests * args.scale), phase.concurrency)
    stream = phase.engine is PACED
    cpu_of = partial(_cpu_s, server.pid)
    await load_turn(target, phase.concurrency, requests, stream, MAX_TOKENS, cpu_of, cell)


def _cpu_s(pid: int) -> float:
    return thread_run_s(pid)[0]


def _summary(
    phases: list[str], names: list[str], cells: dict[tuple[str, str], Cell]
) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for phase in phases:
        for name in names:
            cell = cells[(phase, name)]
            row: dict[str, Any] = {"phase": phase, "tree": name, "errors": cell.errors}
            if phase == "idle":
                row["cpu_ms_per_s"] = round(cell.cpu_s / max(cell.idle_s, 1e-9) * 1e3, 3)
                rows.append(row)
                continue
            row["requests"] = cell.requests
            row["cpu_us_per_request"] = round(cell.cpu_s / max(cell.requests, 1) * 1e6, 1)
            twin = cells.get(("non-stream " + phase.split()[-1], name))
            if phase.startswith("stream") and twin is not None and twin.requests:
                row["cpu_us_per_chunk"] = round(chunk_us(cell, twin), 2)
            rows.append(row)
    return {"rows": rows}


def render(summary: dict[str, Any]) -> str:
    lines = ["| phase | tree | CPU µs/req | CPU µs/chunk | idle CPU ms/s | errors |"]
    lines.append("|---|---|---:|---:|---:|---:|")
    for row in summary["rows"]:
        per_request = row.get("cpu_us_per_request")
        chunk = row.get("cpu_us_per_chunk")
        idle = row.get("cpu_ms_per_s")
        lines.append(
            f"| {row['phase']} | {row['tree']} | "
            f"{'—' if per_request is None else f'{per_request:.0f}'} | "
            f"{'—' if chunk is None else f'{chunk:.1f}'} | "
            f"{'—' if idle is None else f'{idle:.2f}'} | {row['errors']} |"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tree", action="append", required=True, metavar="NAME=PATH", help="a checkout"
    )
    parser.add_argument(
        "--python", action="append", default=[], metavar="NAME=INTERPRETER",
        help="run tree NAME's gateway on this Python (default: the one running the bench)",
    )  # fmt: skip
    parser.add_argument("--rounds", type=int, default=4, help="turns per tree per phase")
    parser.add_argument(
        "--phases", nargs="+", default=list(PHASES), choices=list(PHASES), metavar="P",
        help=f"of: {', '.join(PHASES)}",
    )  # fmt: skip
    parser.add_argument("--scale", type=float, default=1.0, help="multiply requests, idle time")
    parser.add_argument(
        "--ingress", choices=list(INGRESS_PATHS), default="chat",
        help="the clients' API (as `switchyard bench cpu --ingress`)",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    trees: dict[str, Path] = {}
    for item in args.tree:
        name, sep, path = item.partition("=")
        if not sep or not name or not (Path(path) / "gateway" / "cli.py").is_file():
            parser.error(f"--tree {item!r}: give NAME=PATH of a checkout of this repository")
        trees[name] = Path(path).resolve()
    if len(trees) < 2:
        parser.error("give at least two --tree")
    args.trees = trees
    args.pythons = _pythons(parser, args.python, trees)
    return args


def _pythons(
    parser: argparse.ArgumentParser, items: list[str], trees: dict[str, Path]
) -> dict[str, str]:
    pythons: dict[str, str] = {}
    for item in items:
        name, sep, python = item.partition("=")
        if not sep or name not in trees or not os.access(python, os.X_OK):
            parser.error(f"--python {item!r}: give NAME=INTERPRETER for a --tree NAME")
        pythons[name] = python
    return pythons


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    measured = partial(run, args)
    return run_measured(
        measured, render, cpus=CLIENT_CPUS, prefix="switchyard-ab-", json_path=args.json
    )


if __name__ == "__main__":
    sys.exit(main())
