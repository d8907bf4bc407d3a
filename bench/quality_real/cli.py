"""`switchyard bench quality-real`: calibrate the quality probes on real llama.cpp replicas.

    switchyard bench quality-real --out bench/results/quality-real    # ~1 hour on 2 cores
    switchyard bench quality-real --scenarios twins,kv-q4_0 --twin-cycles 20 --fault-cycles 5

Two healthy replicas run throughout (one is the reference, one the twin); each other
scenario starts its own replica and puts it in the twin's place after a warm-up cycle.
Prints the drift and detection tables; `--out PREFIX` writes PREFIX.txt and PREFIX.json.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import platform
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import orjson

from bench.quality_real.campaign import CampaignSettings, ScenarioRun, run_scenario, tool_call_check
from bench.quality_real.replicas import EngineSetup, running_engine
from bench.quality_real.report import detection_table, drift_table, notes, to_json
from bench.quality_real.scenarios import SCENARIOS, Scenario, by_names
from gateway.engines.model_file import ensure_model
from gateway.engines.state import Replica


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="switchyard bench quality-real",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--model", type=Path, help="GGUF (default: SmolLM2-135M-Instruct Q4_1)")
    parser.add_argument("--scenarios", default=",".join(s.name for s in SCENARIOS))
    parser.add_argument("--twin-cycles", type=int, default=200)
    parser.add_argument("--fault-cycles", type=int, default=20)
    parser.add_argument("--needle-tokens", type=int, default=2000, help="the prober's setting")
    parser.add_argument("--drift-threshold", type=float, default=0.15)
    parser.add_argument("--log-dir", type=Path, help="replica logs (default: a temporary folder)")
    parser.add_argument("--out", type=Path, help="write OUT.txt and OUT.json")
    return parser


def run_all(
    model: Path, scenarios: list[Scenario], args: argparse.Namespace, log_dir: Path
) -> tuple[list[ScenarioRun], list[dict[str, Any]]]:
    runs: list[ScenarioRun] = []
    with ExitStack() as stack:
        reference = stack.enter_context(running_engine("reference", model, EngineSetup(), log_dir))
        twin = stack.enter_context(running_engine("twin", model, EngineSetup(), log_dir))
        tool_calls = asyncio.run(tool_call_check(reference))
        for scenario in scenarios:
            runs.append(_run_one(scenario, model, reference, twin, args, log_dir))
            print(f"{scenario.name}: {runs[-1].seconds:.0f} s", file=sys.stderr, flush=True)
    return runs, tool_calls


def _run_one(
    scenario: Scenario,
    model: Path,
    reference: Replica,
    twin: Replica,
    args: argparse.Namespace,
    log_dir: Path,
) -> ScenarioRun:
    twins = scenario.role == "twins"
    settings = CampaignSettings(
        cycles=args.twin_cycles if twins else args.fault_cycles,
        drift_threshold=args.drift_threshold,
        needle_tokens=args.needle_tokens,
    )
    if twins:
        return asyncio.run(run_scenario(scenario, reference, twin, None, settings))
    with running_engine(scenario.name, model, scenario.setup, log_dir) as subject:
        return asyncio.run(run_scenario(scenario, reference, twin, subject, settings))


def environment(model: Path, argv: list[str]) -> dict[str, Any]:
    from importlib.metadata import version

    cpu = next(
        (line.split(":", 1)[1].strip() for line in _cpuinfo() if line.startswith("model name")), "?"
    )
    return {
        "command": "switchyard bench quality-real " + " ".join(argv),
        "model": model.name,
        "engine": f"xllamacpp {version('xllamacpp')}",
        "cpu": cpu,
        "cores": sum(1 for line in _cpuinfo() if line.startswith("processor")),
        "python": platform.python_version(),
        "finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def _cpuinfo() -> list[str]:
    try:
        return Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return []


def render(runs: list[ScenarioRun], tool_calls: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    head = [f"{key}: {value}" for key, value in meta.items()]
    body = [
        "",
        "Canary drift per answer:",
        "",
        drift_table(runs),
        "",
        "Detection:",
        "",
        detection_table(runs),
        "",
    ]
    return "\n".join(head + body + [f"- {line}" for line in notes(runs, tool_calls)]) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    model = ensure_model(args.model)
    scenarios = by_names(args.scenarios)
    with ExitStack() as stack:
        log_dir = args.log_dir or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="quality-real-"))
        )
        runs, tool_calls = run_all(model, scenarios, args, log_dir)
    meta = environment(model, argv)
    text = render(runs, tool_calls, meta)
    print(text)
    if args.out is not None:
        # Suffixes appended, not replaced: "--out results/threshold-0.2" keeps its ".2".
        Path(f"{args.out}.txt").write_text(text)
        payload = to_json(runs, tool_calls, meta)
        Path(f"{args.out}.json").write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2))
    return 0
