"""The replay report: Markdown tables for people, one JSON object per policy for tools."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from .hybrid import summary_line as hybrid_line
from .overload import RECOVERY_SHARE

# Every row carries every key (None when not measured), so consumers need no guards.
MEASURE_KEYS = (
    "requests", "errors", "wall_s", "duration_s", "throughput_rps", "output_tokens_per_s",
    "goodput_ratio", "goodput_rps", "prompt_tokens", "cached_tokens", "completion_tokens",
    "token_cache_hit_ratio", "oracle_hit_ratio",
    "ttft_ms_p50", "ttft_ms_p90", "ttft_ms_p99", "tpot_ms_p50", "tpot_ms_p99",
    "e2e_ms_p50", "e2e_ms_p99", "dispatch_lag_ms_p99",
    "imbalance_requests", "imbalance_prompt_tokens", "decision_us_p50", "decision_us_p99",
    "prefill_utilisation_mean", "kv_held_mean",
    "total_cost_usd", "cost_per_1k_requests_usd", "cost_per_good_request_usd", "gateway_cost_usd",
    "late_unanswered", "refused_before_deadline", "pre_burst_goodput_ratio", "recovery_s",
)  # fmt: skip

Column = tuple[str, str, Callable[[Any], str]]


def _num(digits: int) -> Callable[[Any], str]:
    return lambda v: "-" if v is None else f"{v:,.{digits}f}"


def _pct(value: Any) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _int(value: Any) -> str:
    return "-" if value is None else f"{value:,}"


SUMMARY: list[Column] = [
    ("requests", "requests", _int),
    ("errors", "errors", _int),
    ("token_cache_hit_ratio", "cache hit", _pct),
    ("oracle_hit_ratio", "oracle", _pct),
    ("goodput_ratio", "goodput", _pct),
    ("goodput_rps", "good req/s", _num(2)),
    ("throughput_rps", "req/s", _num(2)),
    ("output_tokens_per_s", "out tok/s", _num(0)),
    ("imbalance_requests", "imbalance req", _num(2)),
    ("imbalance_prompt_tokens", "imbalance tok", _num(2)),
    ("prefill_utilisation_mean", "prefill util", _pct),
    ("kv_held_mean", "KV held", _pct),
    ("decision_us_p50", "decision µs p50", _num(0)),
]
LATENCY: list[Column] = [
    (f"{measure}_ms_p{q}", f"{label} p{q}", _num(0))
    for measure, label, qs in (("ttft", "TTFT", (50, 90, 99)), ("tpot", "TPOT", (50, 99)))
    for q in qs
] + [("e2e_ms_p50", "E2E p50", _num(0)), ("e2e_ms_p99", "E2E p99", _num(0))]


def _usd(value: Any) -> str:
    return "-" if value is None else f"${value:,.4f}"


COST: list[Column] = [
    ("token_cache_hit_ratio", "cache hit", _pct),
    ("goodput_ratio", "goodput", _pct),
    ("ttft_ms_p50", "TTFT p50", _num(0)),
    ("ttft_ms_p90", "TTFT p90", _num(0)),
    ("total_cost_usd", "cost", _usd),
    ("cost_per_1k_requests_usd", "$ / 1k req", _usd),
    ("cost_per_good_request_usd", "$ / good req", _usd),
    ("gateway_cost_usd", "gateway's cost", _usd),
]


def complete_row(row: dict[str, Any], oracle: float, parameters: dict[str, Any]) -> dict[str, Any]:
    """All measure keys, the oracle, and the run parameters, whatever the row holds."""
    full = {"policy": row["policy"], "error": row.get("error")}
    full.update({key: row.get(key) for key in MEASURE_KEYS})
    full["oracle_hit_ratio"] = round(oracle, 4)
    full.update(backends={}, engine_stats={}, error_kinds={}, notes=[], by_class={}, by_tenant={})
    full["timeline"] = None  # a list of windows with --timeline-s
    extra = {k: v for k, v in row.items() if k not in MEASURE_KEYS and k != "cost_model"}
    # The cost model the engines really ran (an older emulator falls back to linear).
    used = {**parameters, "cost_model": row.get("cost_model", parameters.get("cost_model"))}
    return {**full, **extra, "parameters": used}


def table(rows: Sequence[dict[str, Any]], columns: list[Column]) -> str:
    header = ["policy", *(label for _, label, _ in columns)]
    lines = [_line(header), _line(["---"] * len(header))]
    for row in rows:
        if row.get("error"):
            continue
        lines.append(_line([row["policy"], *(fmt(row.get(key)) for key, _, fmt in columns)]))
    return "\n".join(lines)


def _line(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def render(rows: Sequence[dict[str, Any]], parameters: dict[str, Any]) -> str:
    """The whole text report: parameters, summary, latencies, backends, failures."""
    out = [_parameter_line(parameters), "", table(rows, SUMMARY), ""]
    out += ["Latency in trace-time ms (wall time / time scale):", "", table(rows, LATENCY)]
    if any(row.get("total_cost_usd") is not None for row in rows):
        out += ["", "Cost (USD; good = met both SLOs):", "", table(rows, COST)]
    for row in rows:
        out += detail_lines(row, "per backend", _backends(row.get("backends") or {}))
    for row in rows:
        out += group_lines(row)
    for row in rows:
        out += overload_lines(row, parameters)
    return "\n".join(out)


GROUP: list[Column] = [
    ("requests", "requests", _int),
    ("succeeded", "ok", _int),
    ("shed", "shed", _int),
    ("goodput_ratio", "goodput", _pct),
    ("ttft_ms_p50", "TTFT p50", _num(0)),
    ("ttft_ms_p90", "TTFT p90", _num(0)),
    ("ttft_ms_p99", "TTFT p99", _num(0)),
    ("queue_ms_p50", "queue p50", _num(0)),
    ("queue_ms_p99", "queue p99", _num(0)),
]


def group_lines(row: dict[str, Any]) -> list[str]:
    """A target's table per class and per tenant (`by_class`, `by_tenant`), if it has any."""
    groups = [
        (f"{kind} {name}", measures)
        for kind, key in (("class", "by_class"), ("tenant", "by_tenant"))
        for name, measures in (row.get(key) or {}).items()
    ]
    if row.get("error") or not groups:
        return []
    header = ["group", *(label for _, label, _ in GROUP)]
    lines = ["", f"{row['policy']} per class and tenant (trace-time ms):", ""]
    lines += [_line(header), _line(["---"] * len(header))]
    for name, measures in groups:
        lines.append(_line([name, *(fmt(measures.get(key)) for key, _, fmt in GROUP)]))
    return lines


WINDOW: list[Column] = [
    ("requests", "requests", _int),
    ("good", "good", _int),
    ("slow", "slow", _int),
    ("shed", "shed", _int),
    ("failed", "failed", _int),
    ("goodput_ratio", "goodput", _pct),
]


def overload_lines(row: dict[str, Any], parameters: dict[str, Any]) -> list[str]:
    """A target's answers against the TTFT deadline, its recovery after a burst, and its
    timeline table (with `--timeline-s`)."""
    if row.get("error") or row.get("late_unanswered") is None:
        return []
    slo = parameters.get("ttft_slo_ms")
    within = f" (TTFT SLO {slo:,.0f} ms)" if slo is not None else ""
    lines = [
        "",
        f"{row['policy']} deadlines{within}: {_int(row['late_unanswered'])} late without an "
        f"answer, {_int(row.get('refused_before_deadline'))} refused within it" + _recovery(row),
    ]
    windows = row.get("timeline")
    if not windows:
        return lines
    burst = parameters.get("burst_start_s"), parameters.get("burst_end_s")
    shown = f"; burst {burst[0]:g}-{burst[1]:g} s" if None not in burst else ""
    width = parameters.get("timeline_s", 0)
    lines += ["", f"{row['policy']} per {width:g} s window of when requests were due{shown}:"]
    header = ["trace s", *(label for _, label, _ in WINDOW)]
    lines += ["", _line(header), _line(["---"] * len(header))]
    for window in windows:
        span = f"{window['start_s']:g}-{window['end_s']:g}"
        if None not in burst and window["start_s"] < burst[1] and window["end_s"] > burst[0]:
            span += " burst"
        lines.append(_line([span, *(fmt(window.get(key)) for key, _, fmt in WINDOW)]))
    return lines


def _recovery(row: dict[str, Any]) -> str:
    reference = row.get("pre_burst_goodput_ratio")
    if reference is None:
        return ""
    share = f"{RECOVERY_SHARE:.0%}"
    if row.get("recovery_s") is None:
        return f"; goodput not back to {share} of the pre-burst {_pct(reference)} by the end"
    return (
        f"; goodput back to {share} of the pre-burst {_pct(reference)} "
        f"{row['recovery_s']:g} s after the burst"
    )


def detail_lines(row: dict[str, Any], label: str, backends: str) -> list[str]:
    """A row's lines under the tables: why it was not measured, or its backends (as
    `backends` describes them), notes and most frequent errors."""
    if row.get("error"):
        return ["", f"{row['policy']}: not measured: {row['error']}"]
    out = ["", f"{row['policy']} {label}: {backends}"]
    out += [f"  note: {note}" for note in row.get("notes") or []]
    out += [f"  error x{n}: {message}" for message, n in (row.get("error_kinds") or {}).items()]
    return out


def _parameter_line(p: dict[str, Any]) -> str:
    return (
        f"trace {p['trace_name']} ({p['requests']} requests), time scale {p['time_scale']:g}"
        f"{' (default)' if p['time_scale_is_default'] else ''}, {_engines(p)}"
        f"prefill {p['prefill_tokens_per_s']:,.0f} tok/s, "
        f"decode {p['decode_base_ms']:g} ms + {p['decode_per_seq_ms']:g} ms/seq, "
        f"SLO TTFT {p['ttft_slo_ms']:g} ms / TPOT {p['tpot_slo_ms']:g} ms"
        + _references_scope(p)
        + _pooled(p.get("oracle_pooled_kv_hit_ratio"))
        + _offline(p.get("offline_routing_hit_ratios"))
        + _class_rule(p.get("class_rule"))
        + ("\n" + hybrid_line() if p.get("fleet") == "hybrid" else "")
    )


def _references_scope(p: dict[str, Any]) -> str:
    """The hybrid fleet's caches differ (two small local KVs, two clouds' caches bounded by
    a TTL, not a size): its references are computed for equal caches, and say so."""
    if p.get("fleet") != "hybrid" or p.get("oracle_pooled_kv_hit_ratio") is None:
        return ""
    return (
        f"; references below for {p['fleet_size']} equal caches of "
        f"{p['kv_capacity_tokens']:,} tokens (an approximation of this fleet)"
    )


def _engines(p: dict[str, Any]) -> str:
    if p.get("fleet") == "hybrid":  # the speeds that follow are the local engines'
        return "hybrid fleet (next line), local engines' "
    return f"{p['fleet_size']} engines x {p['kv_capacity_tokens']:,} KV tokens, "


def _pooled(ratio: float | None) -> str:
    """The LRU-bounded oracle, when computed (see `oracle_hit_ratio`)."""
    if ratio is None:
        return ""
    return f"; oracle with the fleet's KV pooled in one LRU cache {ratio:.1%}"


def _offline(ratios: dict[str, float] | None) -> str:
    """Offline routers over the fleet's separate caches (see `offline_routing_hit_ratios`)."""
    if not ratios:
        return ""
    shown = ", ".join(f"{router} {ratio:.1%}" for router, ratio in ratios.items())
    return f"; offline over separate caches, no KV held by running requests: {shown}"


def _class_rule(rule: dict[str, Any] | None) -> str:
    """The seeded rule that gave classes and tenants to the trace's unlabelled requests."""
    if not rule:
        return ""
    weights = ":".join(f"{w:g}" for w in rule["tenant_weights"])
    return (
        f"; classes by seed {rule['seed']}: {100 * rule['interactive_share']:g}% of sessions "
        f"interactive, tenants {weights}"
    )


def _backends(backends: dict[str, dict[str, Any]]) -> str:
    parts = []
    for name, row in backends.items():
        text = f"{name} {_int(row.get('requests'))} req"
        if row.get("prompt_tokens") is not None:
            text += f" {_int(row.get('prompt_tokens'))} prompt tok"
        if row.get("prefill_utilisation") is not None:
            text += f" prefill {_pct(row['prefill_utilisation'])}"
        if row.get("kv_held_mean") is not None:
            text += f" KV held {_pct(row['kv_held_mean'])}"
        if row.get("cost_usd") is not None:
            text += f" {_usd(row['cost_usd'])}"
        parts.append(text)
    return "; ".join(parts) or "-"


def write_json(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    path.write_bytes(orjson.dumps(list(rows), option=orjson.OPT_INDENT_2) + b"\n")
