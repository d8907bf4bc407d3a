"""The matrix report: one table per measure, each value with its ratio to SGLang's router,
the hit ratio against the offline bounded router at the row's own pace, and issue 13's
targets for cache-aware; the same as one JSON document for tools.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson

from bench.replay.profiles import SGLANG
from bench.tables import render as render_table

from .targets import REQUIREMENTS, SUBJECT, Check, check_cell

Row = Mapping[str, Any]
CellKey = tuple[str, str, int]
"""(cell, load, seed): the rows of one trace at one load, one per policy."""


def percent(value: float) -> str:
    return f"{100 * value:.1f} %"


def fixed(digits: int) -> Callable[[float], str]:
    return lambda value: f"{value:,.{digits}f}"


@dataclass(frozen=True)
class Measure:
    key: str
    title: str
    show: Callable[[float], str]


MEASURES: tuple[Measure, ...] = (
    Measure("token_cache_hit_ratio", "Cache hit ratio", percent),
    Measure("goodput_ratio", "Goodput: share of all requests meeting both SLOs", percent),
    Measure("goodput_rps", "Good requests per second (trace time)", fixed(2)),
    Measure("ttft_ms_p50", "TTFT p50 (trace-time ms)", fixed(0)),
    Measure("ttft_ms_p90", "TTFT p90 (trace-time ms)", fixed(0)),
    Measure("tpot_ms_p50", "TPOT p50 (trace-time ms)", fixed(0)),
    Measure("imbalance_requests", "Request imbalance (max / mean over engines)", fixed(2)),
    Measure("imbalance_prompt_tokens", "Prompt-token imbalance (max / mean)", fixed(2)),
)


def with_ratio(value: float | None, reference: float | None, show: Callable[[float], str]) -> str:
    """`61.2 % (1.04x)`: the value and value / reference; no ratio without a reference."""
    if value is None:
        return "-"
    if not reference:  # None, or 0 (no ratio to a zero)
        return show(value)
    return f"{show(value)} ({value / reference:.2f}x)"


def group(rows: Sequence[Row]) -> dict[CellKey, dict[str, Row]]:
    """Rows by (cell, load, seed), then by policy, in the order they ran."""
    grid: dict[CellKey, dict[str, Row]] = {}
    for row in rows:
        grid.setdefault((row["cell"], row["load"], row["seed"]), {})[row["policy"]] = row
    return grid


def policies_of(rows: Sequence[Row]) -> list[str]:
    return list(dict.fromkeys(row["policy"] for row in rows))


def _labels(key: CellKey, seeds: int) -> list[str]:
    cell, load, seed = key
    return [cell, load, str(seed)] if seeds > 1 else [cell, load]


def _headers(seeds: int) -> list[str]:
    return ["cell", "load", "seed"] if seeds > 1 else ["cell", "load"]


def _value(row: Row | None, measure: Measure, reference: float | None) -> str:
    if row is None:
        return "-"
    if row.get("error"):
        return "error"
    return with_ratio(row.get(measure.key), reference, measure.show)


def _reference(by_policy: Mapping[str, Row], key: str) -> float | None:
    sglang = by_policy.get(SGLANG)
    if sglang is None or sglang.get("error"):
        return None
    value: float | None = sglang.get(key)
    return value


def measure_table(rows: Sequence[Row], measure: Measure) -> str:
    """Rows: cell x load (x seed); columns: policies; SGLang's own column without a ratio."""
    grid, policies = group(rows), policies_of(rows)
    seeds = len({row["seed"] for row in rows})
    lines = []
    for key, by_policy in grid.items():
        reference = _reference(by_policy, measure.key)
        cells = [
            _value(by_policy.get(p), measure, None if p == SGLANG else reference) for p in policies
        ]
        lines.append(_labels(key, seeds) + cells)
    return render_table(_headers(seeds) + policies, lines, left=len(_headers(seeds)))


def _against_offline(row: Row | None) -> str:
    if row is None:
        return "-"
    if row.get("error"):
        return "error"
    hits, bound = row.get("token_cache_hit_ratio"), row.get("offline_bounded_at_pace")
    if hits is None or not bound:
        return "-"
    return f"{hits / bound:.2f}x of {percent(bound)}"


def offline_table(rows: Sequence[Row]) -> str:
    """Hits / the offline bounded longest-prefix router at each row's own E2E p50."""
    grid, policies = group(rows), policies_of(rows)
    seeds = len({row["seed"] for row in rows})
    lines = [
        _labels(key, seeds) + [_against_offline(by_policy.get(p)) for p in policies]
        for key, by_policy in grid.items()
    ]
    return render_table(_headers(seeds) + policies, lines, left=len(_headers(seeds)))


def trace_table(rows: Sequence[Row]) -> str:
    """Per (cell, seed): requests, time scale, the oracle and the offline routers (nominal)."""
    seen: dict[tuple[str, int], Row] = {}
    for row in rows:
        seen.setdefault((row["cell"], row["seed"]), row)
    lines = []
    for (cell, seed), row in seen.items():
        params = row.get("parameters") or {}
        offline = params.get("offline_routing_hit_ratios") or {}
        bounded = offline.get("bounded-longest-prefix")
        lines.append([
            cell, str(seed), f"{params.get('requests', 0):,}", f"{params.get('time_scale', 0):g}",
            percent(row["oracle_hit_ratio"]) if row.get("oracle_hit_ratio") is not None else "-",
            percent(bounded) if bounded is not None else "-",
        ])  # fmt: skip
    headers = ["cell", "seed", "requests", "time scale", "oracle", "offline bounded (nominal)"]
    return render_table(headers, lines)


@dataclass(frozen=True)
class CellTargets:
    cell: str
    load: str
    seed: int
    family: str
    checks: list[Check]


def judge(rows: Sequence[Row]) -> list[CellTargets]:
    """Issue 13's targets for cache-aware on every (cell, load, seed) it ran on."""
    judged = []
    for (cell, load, seed), by_policy in group(rows).items():
        if SUBJECT not in by_policy:
            continue
        family = str(by_policy[SUBJECT].get("family", ""))
        judged.append(CellTargets(cell, load, seed, family, check_cell(by_policy, family)))
    return judged


def _verdict_text(check: Check | None) -> str:
    if check is None:
        return ""  # the requirement does not apply to this cell
    return {"met": "met", "missed": "MISSED", "n/a": "n/a"}[check.verdict]


def targets_table(judged: Sequence[CellTargets]) -> str:
    seeds = len({t.seed for t in judged})
    lines = []
    for cell in judged:
        found = {c.requirement: c for c in cell.checks}
        verdicts = [_verdict_text(found.get(r.name)) for r in REQUIREMENTS]
        lines.append(_labels((cell.cell, cell.load, cell.seed), seeds) + verdicts)
    headers = _headers(seeds) + [r.name for r in REQUIREMENTS]
    return render_table(headers, lines, left=len(headers))


def targets_summary(judged: Sequence[CellTargets]) -> str:
    """`cache-aware meets 9 of 13 checks; 4 not judged (no sglang row x4).`"""
    checks = [c for cell in judged for c in cell.checks]
    met = sum(c.verdict == "met" for c in checks)
    reasons = Counter(c.why for c in checks if c.verdict == "n/a")
    text = f"{SUBJECT} meets {met} of {len(checks)} checks"
    if reasons:
        shown = ", ".join(f"{why} x{n}" for why, n in reasons.items())
        text += f"; {sum(reasons.values())} not judged ({shown})"
    return text + "."


def render(rows: Sequence[Row], header: str) -> str:
    """The whole text report."""
    out = [header, "", "Traces:", "", trace_table(rows)]
    ratio = f"; in brackets, the ratio to {SGLANG}'s" if SGLANG in policies_of(rows) else ""
    for measure in MEASURES:
        out += ["", f"{measure.title}{ratio}:", "", measure_table(rows, measure)]
    out += ["", "Cache hit ratio / the offline bounded longest-prefix router at the row's own"]
    out += ["E2E p50 (`offline_hit_ratios_at_e2e_p50`):", "", offline_table(rows)]
    judged = judge(rows)
    if judged:
        out += ["", f"Issue 13's targets for {SUBJECT}:", "", targets_table(judged)]
        out += ["", targets_summary(judged)]
    failed = [row for row in rows if row.get("error")]
    out += [""] if failed else []
    out += [f"{r['cell']} {r['load']} seed {r['seed']} {r['policy']}: not measured: {r['error']}"
            for r in failed]  # fmt: skip
    return "\n".join(out)


def document(rows: Sequence[Row], parameters: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON report: the run's parameters, every row, every target verdict."""
    return {
        "parameters": dict(parameters),
        "rows": list(rows),
        "targets": [asdict(cell) for cell in judge(rows)],
    }


def write_json(path: Path, rows: Sequence[Row], parameters: Mapping[str, Any]) -> None:
    data = document(rows, parameters)
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
