"""`switchyard bench hold | soak | kill-backend | store-outage | slow-clients [--flags]`: run
one scenario, print its figures and write them to bench/results/<name>.json and .txt."""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from bench.procs import StartError
from bench.resilience import hold, kill_backend, slow_clients, soak, store_outage
from bench.resilience.report import render
from bench.targets import BENCH_DIR


@dataclasses.dataclass(frozen=True)
class Scenario:
    params: type[Any]
    run: Callable[[Any, Path], dict[str, Any]]
    passed: Callable[[dict[str, Any]], bool]
    summary: str


SCENARIOS: dict[str, Scenario] = {
    "hold": Scenario(hold.HoldParams, hold.run, hold.passed, hold.__doc__ or ""),
    "soak": Scenario(soak.SoakParams, soak.run, soak.passed, soak.__doc__ or ""),
    "kill-backend": Scenario(
        kill_backend.KillParams, kill_backend.run, kill_backend.passed, kill_backend.__doc__ or ""
    ),
    "slow-clients": Scenario(
        slow_clients.SlowParams,
        slow_clients.run,
        slow_clients.passed,
        slow_clients.__doc__ or "",
    ),
    "store-outage": Scenario(
        store_outage.OutageParams,
        store_outage.run,
        store_outage.passed,
        store_outage.__doc__ or "",
    ),
}


def parse_args(name: str, argv: list[str]) -> argparse.Namespace:
    scenario = SCENARIOS[name]
    parser = argparse.ArgumentParser(
        prog=f"switchyard bench {name}",
        description=scenario.summary,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for field in dataclasses.fields(scenario.params):
        default = field.default
        parser.add_argument(
            "--" + field.name.replace("_", "-"),
            type=type(default),
            default=default,
            help="default: %(default)s",
        )
    parser.add_argument(
        "--out", type=Path, default=BENCH_DIR / "results" / name, help="results file stem"
    )
    parser.add_argument("--no-write", action="store_true", help="print only")
    return parser.parse_args(argv)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in SCENARIOS:
        print(f"usage: switchyard bench {{{','.join(SCENARIOS)}}} [--help]", file=sys.stderr)
        return 2
    name, args = argv[0], parse_args(argv[0], argv[1:])
    scenario = SCENARIOS[name]
    fields = {f.name for f in dataclasses.fields(scenario.params)}
    params = scenario.params(**{k: v for k, v in vars(args).items() if k in fields})
    signal.signal(signal.SIGTERM, _interrupt)  # stop the servers on `kill`, too
    workdir = Path(tempfile.mkdtemp(prefix=f"switchyard-{name}-"))
    print(f"{name}: servers' logs in {workdir}", file=sys.stderr)
    try:
        result = scenario.run(params, workdir)
    except StartError as exc:
        print(f"{name}: aborted: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{name}: interrupted; servers stopped", file=sys.stderr)
        return 130
    ok = scenario.passed(result)
    result = {"scenario": name, "passed": ok, **result}
    text = render(name, result)
    print(text)
    if not args.no_write:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
        args.out.with_suffix(".txt").write_text(text + "\n")
    if ok:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if ok else 1
