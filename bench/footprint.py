"""What a gateway process costs before and around its traffic, for two or more checkouts side
by side in one run: `switchyard --help`, `serve`'s start-up and idle RSS, the modules it
loads, and latency at one client (p50, p99, max).

Usage:
    git worktree add /tmp/before <commit>
    python -m bench.footprint --tree before=/tmp/before --tree after=. [--rounds 5]

Every tree serves the same non-emulated config: the embedded config's policies over two
OpenAI-compatible backends, which are emulated engines in processes of their own
(`bench.cpu.cli.gateway_config`), so no tree loads an emulator for its backends. In each
round every measure gives each tree a turn, in an order that alternates between rounds, so
drifts of the shared machine hit all alike. The gateway runs on CPU 0, the client and the
engines on CPU 1.

- **help**: wall seconds of `switchyard --help`, the median of three runs per turn.
- **start**: wall seconds from spawning `switchyard serve` to its first `/healthz` 200
  (polled every 5 ms), a new process each turn.
- **idle RSS**: VmRSS of that process after `--idle-s` without a request.
- **latency c=1**: one client, keep-alive, non-streaming requests to the instant engine
  (`--requests` after a warm-up): p50, p99 and max of the whole exchange, beside the same
  client sent straight to the engine in the same turn (`direct`).
- **modules**: once per tree, `serve` with `-X importtime` until ready: the product's
  modules it imported, and whether `emulator`, `bench`, `sqlalchemy` or `alembic` among
  them (this launch is not timed).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from bench.ab_trees import tree_command, tree_env
from bench.cpu.cli import gateway_config
from bench.load import Pool, Target, request_bytes
from bench.procs import Server, free_port, run_measured, sample
from bench.targets import INSTANT, PACED, start_emulator

SERVER_CPUS = {0}
CLIENT_CPUS = {1}
PRODUCT = ("gateway", "policies", "providers", "emulator")
HEAVY = ("emulator", "bench", "sqlalchemy", "alembic")
MAX_TOKENS = 16


@dataclass
class TreeCells:
    """One tree's measures over every round."""

    help_s: list[float] = field(default_factory=list)
    start_s: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)
    latencies_s: list[float] = field(default_factory=list)
    direct_s: list[float] = field(default_factory=list)
    errors: int = 0
    modules: dict[str, Any] = field(default_factory=dict)


def help_seconds(tree: Path, python: str) -> float:
    """The median wall time of three `switchyard --help` runs of `tree`'s code."""
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run(
            tree_command(["--help"], python),
            env=tree_env(tree),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
            timeout=60,
        )
        runs.append(time.perf_counter() - started)
    return statistics.median(runs)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def start_gateway(
    name: str, tree: Path, python: str, config: Path, workdir: Path, extra: list[str]
) -> tuple[Server, int, float]:
    """`serve` of `tree` on a free port: the server, its port and the seconds to ready."""
    port = free_port()
    argv = tree_command(["serve", "--config", str(config), "--port", str(port)], python)
    argv[1:1] = extra
    started = time.perf_counter()
    server = Server(name, argv, workdir / f"{name}.log", env=tree_env(tree), cpus=SERVER_CPUS)
    url = f"http://127.0.0.1:{port}/healthz"
    try:
        deadline = started + 60
        while not _healthy(url):
            if time.perf_counter() > deadline or server.exited():
                raise RuntimeError(f"{name} did not start: see {server.log_path}")
            time.sleep(0.005)
    except BaseException:
        server.stop()
        raise
    return server, port, time.perf_counter() - started


def modules_loaded(log: Path) -> dict[str, Any]:
    """What `-X importtime` printed: the product's modules and the heavy packages."""
    names = []
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("import time:") and "|" in line:
            names.append(line.rsplit("|", 1)[1].strip())
    product = sorted({n for n in names if n.split(".")[0] in PRODUCT})
    return {
        "product_modules": len(product),
        "all_modules": len(set(names)),
        "heavy": sorted({n.split(".")[0] for n in names if n.split(".")[0] in HEAVY}),
    }


async def latency_turn(port: int, direct_port: int, requests: int, cells: TreeCells) -> None:
    """`requests` at one client through the gateway, then as many straight to the engine."""
    for target, sink in (
        (Target("gateway", port, INSTANT.model), cells.latencies_s),
        (Target("direct", direct_port, INSTANT.model), cells.direct_s),
    ):
        body = request_bytes(target, False, MAX_TOKENS)
        pool = Pool(target, 1)
        try:
            await pool.run(50, 1, body, False)
            got = await pool.run(requests, 1, body, False)
        finally:
            await pool.close()
        sink.extend(got.latencies)
        cells.errors += got.errors


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    engines = {e.name: start_emulator(e, workdir, CLIENT_CPUS) for e in (INSTANT, PACED)}
    ports = {name: port for name, (_, port) in engines.items()}
    config = workdir / "gateway.yaml"
    config.write_text(yaml.safe_dump(gateway_config(ports, 0, {})))
    cells = {name: TreeCells() for name in args.trees}
    try:
        for name, tree in args.trees.items():
            python = args.pythons.get(name, sys.executable)
            server, _, _ = start_gateway(
                f"{name}-imports", tree, python, config, workdir, ["-X", "importtime"]
            )
            server.stop()
            cells[name].modules = modules_loaded(server.log_path)
        for round_no in range(args.rounds):
            names = list(args.trees) if round_no % 2 == 0 else list(reversed(args.trees))
            for name in names:
                await _turn(name, args, config, workdir, ports[INSTANT.name], cells[name])
        return _summary(cells)
    finally:
        for server, _ in engines.values():
            server.stop()


async def _turn(
    name: str, args: argparse.Namespace, config: Path, workdir: Path, direct: int, cells: TreeCells
) -> None:
    tree, python = args.trees[name], args.pythons.get(name, sys.executable)
    cells.help_s.append(help_seconds(tree, python))
    server, port, start_s = start_gateway(name, tree, python, config, workdir, [])
    try:
        cells.start_s.append(start_s)
        await asyncio.sleep(args.idle_s)
        cells.rss_mb.append(sample(server.pid).rss_kb / 1024)
        await latency_turn(port, direct, args.requests, cells)
    finally:
        server.stop()


def _ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1e3


def _summary(cells: dict[str, TreeCells]) -> dict[str, Any]:
    rows = []
    for name, c in cells.items():
        rows.append(
            {
                "tree": name,
                "help_s": round(statistics.median(c.help_s), 3),
                "start_s": round(statistics.median(c.start_s), 3),
                "idle_rss_mb": round(statistics.median(c.rss_mb), 1),
                "p50_ms": round(_ms(c.latencies_s, 0.50), 3),
                "p99_ms": round(_ms(c.latencies_s, 0.99), 3),
                "max_ms": round(max(c.latencies_s, default=float("nan")) * 1e3, 3),
                "p99_over_p50": round(_ms(c.latencies_s, 0.99) / _ms(c.latencies_s, 0.50), 2),
                "direct_p50_ms": round(_ms(c.direct_s, 0.50), 3),
                "direct_p99_ms": round(_ms(c.direct_s, 0.99), 3),
                "requests": len(c.latencies_s),
                "errors": c.errors,
                **c.modules,
                "per_round": {
                    "help_s": [round(v, 3) for v in c.help_s],
                    "start_s": [round(v, 3) for v in c.start_s],
                    "rss_mb": [round(v, 1) for v in c.rss_mb],
                },
            }
        )
    return {"rows": rows}


def render(summary: dict[str, Any]) -> str:
    lines = [
        "| tree | --help s | serve start s | idle RSS MB | product modules | heavy loaded "
        "| c=1 p50 ms | p99 ms | max ms | p99/p50 | direct p50 / p99 ms | errors |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in summary["rows"]:
        lines.append(
            f"| {r['tree']} | {r['help_s']:.2f} | {r['start_s']:.2f} | {r['idle_rss_mb']:.0f} "
            f"| {r['product_modules']} | {', '.join(r['heavy']) or 'none'} "
            f"| {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['max_ms']:.1f} "
            f"| {r['p99_over_p50']:.2f} | {r['direct_p50_ms']:.2f} / {r['direct_p99_ms']:.2f} "
            f"| {r['errors']} |"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from bench.ab_trees import parse_args as trees_args

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="turns per tree per measure")
    parser.add_argument("--requests", type=int, default=2000, help="c=1 requests per turn")
    parser.add_argument("--idle-s", type=float, default=3.0, help="idle before reading RSS")
    parser.add_argument("--json", type=Path, help="write the results here")
    own, rest = parser.parse_known_args(argv)
    trees = trees_args([*rest, "--phases", "idle"])
    own.trees, own.pythons = trees.trees, trees.pythons
    return own


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    measured = partial(run, args)
    return run_measured(
        measured, render, cpus=CLIENT_CPUS, prefix="sy-footprint-", json_path=args.json
    )


if __name__ == "__main__":
    sys.exit(main())
