"""The real-engine report: two Markdown tables (engine tokens; latency and throughput), a
line per policy with its replicas and notes, the targets against round-robin, and JSON."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from bench.replay.report import detail_lines
from bench.tables import render

from .summary import BASELINE

TARGET_RATIO = 0.5
"""The issue's targets: cache-aware at most half round-robin's evaluated tokens and TTFT p50."""

Format = Callable[[Any], str]


def _int(value: Any) -> str:
    return "-" if value is None else f"{round(value):,}"


def _num(digits: int) -> Format:
    return lambda v: "-" if v is None else f"{v:,.{digits}f}"


def _seconds(ms: Any) -> str:
    return "-" if ms is None else f"{ms / 1000:,.1f}"


def _share(row: dict[str, Any]) -> str:
    prompt, cached = row.get("prompt_tokens"), row.get("cached_tokens")
    return f"{cached / prompt:.1%}" if prompt else "-"


TOKENS: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
    ("requests", lambda r: _int(r["requests"])),
    ("errors", lambda r: _int(r["errors"])),
    ("prompt tok", lambda r: _int(r["prompt_tokens"])),
    ("evaluated", lambda r: _int(r["evaluated_prompt_tokens"])),
    ("evaluated (/metrics)", lambda r: _int(r["metrics_evaluated_prompt_tokens"])),
    ("cached", lambda r: _int(r["cached_tokens"])),
    ("cached share", _share),
    ("history cached", lambda r: f"{r['followups_with_history_cached']}/{r['followups']}"),
    ("prompt_ms sum s", lambda r: _seconds(r["prompt_ms_sum"])),
    ("evaluated / RR", lambda r: _num(2)(r.get("evaluated_ratio_to_round_robin"))),
]
LATENCY: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
    ("TTFT p50 ms", lambda r: _int(r["ttft_ms_p50"])),
    ("TTFT p90 ms", lambda r: _int(r["ttft_ms_p90"])),
    ("E2E p50 ms", lambda r: _int(r["e2e_ms_p50"])),
    ("req/s", lambda r: _num(3)(r["throughput_rps"])),
    ("out tok/s", lambda r: _num(1)(r["output_tokens_per_s"])),
    ("wall s", lambda r: _num(0)(r["wall_s"])),
    ("TTFT p50 / RR", lambda r: _num(2)(r.get("ttft_p50_ratio_to_round_robin"))),
    ("requests per replica", lambda r: _replica_counts(r.get("backends") or {})),
]


def _replica_counts(backends: dict[str, dict[str, Any]]) -> str:
    return " / ".join(str(row.get("requests", 0)) for row in backends.values()) or "-"


def _table(rows: Sequence[dict[str, Any]], columns: list[tuple[str, Callable[..., str]]]) -> str:
    measured = [r for r in rows if not r.get("error")]
    cells = [[r["policy"], *(fmt(r) for _, fmt in columns)] for r in measured]
    return render(["policy", *(label for label, _ in columns)], cells, left=1)


def render_report(rows: Sequence[dict[str, Any]], parameters: dict[str, Any]) -> str:
    out = [parameter_line(parameters), "", _table(rows, TOKENS), ""]
    out += ["Wall-clock times (real engines; only think times were scaled):", ""]
    out += [_table(rows, LATENCY)]
    for row in rows:
        out += detail_lines(row, "per replica", _replicas(row.get("backends") or {}))
    out += ["", *target_lines(rows)]
    return "\n".join(out)


def parameter_line(p: dict[str, Any]) -> str:
    return (
        f"trace {p['trace_name']} ({p['requests']} requests), think-time scale "
        f"{p['time_scale']:g}, at most {p['concurrency']} in flight; {p['replicas']} llama.cpp "
        f"replicas (xllamacpp {p['engine_version']}) of {p['model_file']}, 1 thread, 1 slot of "
        f"{p['ctx_size']:,} tokens, cache_ram {p['cache_ram_mib']} MiB each (the gateway is "
        f"told {p['gateway_capacity_tokens']:,} tokens), restarted for every policy"
        f"{_rounds(p.get('rounds', 1))}; CPU {p['cpu']} x {p['cpus']}"
    )


def _rounds(rounds: int) -> str:
    if rounds <= 1:
        return ""
    return f"; {rounds} rounds, the order reversed each round, each policy's rounds pooled"


def _replicas(backends: dict[str, dict[str, Any]]) -> str:
    parts = [
        f"{name} {_int(row.get('requests'))} req, {_int(row.get('prompt_tokens'))} prompt tok, "
        f"{_int(row.get('evaluated_prompt_tokens'))} evaluated"
        for name, row in backends.items()
    ]
    return "; ".join(parts) or "-"


def target_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Each policy's two ratios to round-robin against the target (≤ 0.5)."""
    lines = []
    for row in rows:
        if row.get("error") or row["policy"] == BASELINE:
            continue
        checks = [
            _check("evaluated prompt tokens", row.get("evaluated_ratio_to_round_robin")),
            _check("TTFT p50", row.get("ttft_p50_ratio_to_round_robin")),
        ]
        lines.append(f"{row['policy']} vs {BASELINE}: " + "; ".join(checks))
    return lines


def _check(what: str, ratio: float | None) -> str:
    if ratio is None:
        return f"{what}: no ratio"
    verdict = "met" if ratio <= TARGET_RATIO else "missed"
    return f"{what} {ratio:.2f} x (target <= {TARGET_RATIO:g}: {verdict})"


def write_json(path: Path, rows: Sequence[dict[str, Any]], parameters: dict[str, Any]) -> None:
    document = {"parameters": parameters, "policies": list(rows)}
    path.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")
