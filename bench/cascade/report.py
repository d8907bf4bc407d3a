"""The cascade bench's tables (Markdown), from the run's JSON."""

from __future__ import annotations

from typing import Any

_COLUMNS = (
    ("policy", "policy"),
    ("answered_by", "answered by"),
    ("passing", "passing checks"),
    ("accuracy", "accuracy"),
    ("cost_per_passing_usd", "$ / passing"),
    ("cost_per_passing_vs_strong", "vs strong"),
    ("cost_per_correct_usd", "$ / correct"),
    ("latency_p50_s", "p50 s"),
    ("latency_p90_s", "p90 s"),
)


def render(result: dict[str, Any]) -> str:
    out = [f"Small tier: {result['small']}; prices {result['prices']}", ""]
    for seed, kinds in result["workloads"].items():
        for kind, rows in kinds.items():
            out += [
                f"### {kind} (seed {seed}, {next(iter(rows.values()))['requests']} requests)",
                "",
            ]
            out += _table(rows)
    if "logprob" in result:
        out += _logprob(result["logprob"])
    if "learned" in result:
        out += _learned(result["learned"])
    if "streaming" in result:
        st = result["streaming"]
        out += [
            f"### Time to first token when streamed (short, seed {st['seed']}, "
            f"{st['requests']} requests)",
            "",
            "| way | TTFT p50 s | TTFT p90 s |",
            "|---|---|---|",
            *[
                f"| {way} | {_num(st[way]['ttft_p50_s'])} | {_num(st[way]['ttft_p90_s'])} |"
                for way in ("route", "hold", "commit")
            ],
            "",
        ]
    if "overhead" in result:
        o = result["overhead"]
        out += [
            "### Gateway time of a cascade request that passes at its first tier",
            "",
            f"overhead p50 {o['cascade_p50_ms']} ms vs {o['route_p50_ms']} ms on the route "
            f"alone (+{o['added_p50_ms']} ms); p90 {o['cascade_p90_ms']} vs {o['route_p90_ms']} ms "
            f"({o['requests']} requests each, emulated small tier)",
            "",
        ]
    return "\n".join(out)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _table(rows: dict[str, dict[str, Any]]) -> list[str]:
    head = "| " + " | ".join(title for _, title in _COLUMNS) + " |"
    lines = [head, "|" + "---|" * len(_COLUMNS)]
    for policy, row in rows.items():
        cells = [policy if key == "policy" else _cell(key, row.get(key)) for key, _ in _COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


def _cell(key: str, value: Any) -> str:
    if value is None:
        return "-"
    if key == "answered_by":
        return ", ".join(f"{tier} {share:.0%}" for tier, share in value.items())
    if key in ("passing", "accuracy"):
        return f"{value:.1%}"
    if key.endswith("_usd"):
        return f"${value * 1000:.4f}/k"
    if key.endswith("_vs_strong"):
        return f"{value:.2f}x"
    return str(value)


def _logprob(found: dict[str, Any]) -> list[str]:
    a = found["auroc"]
    lines = [
        "### Log-probability check (short answers)",
        "",
        f"AUROC {a['auroc']} ± {a['se']} (z {a['z']}; {a['correct']} right, {a['wrong']} "
        f"wrong small-tier answers, seed {found['seed']}); threshold chosen on seed "
        f"{found['tuned_on']}: {found['threshold']}",
        "",
        "| threshold | escalated | accuracy | at random | $ / request |",
        "|---|---|---|---|---|",
    ]
    for r in found["curve"]:
        lines.append(
            f"| {r['threshold']} | {r['escalated']:.0%} | {r['accuracy']:.1%} | "
            f"{r['random_accuracy']:.1%} | ${r['cost_per_request_usd'] * 1000:.4f}/k |"
        )
    return [*lines, ""]


def _learned(found: dict[str, Any]) -> list[str]:
    lines = [
        f"### Learned starting tier ({found['workload']}, seed {found['seed']})",
        "",
        "| policy | doomed first tries | started above the first tier | $ / passing |",
        "|---|---|---|---|",
    ]
    for policy, row in found["rows"].items():
        lines.append(
            f"| {policy} | {row['doomed']} | {row['started_above_first']} | "
            f"{_cell('cost_per_passing_usd', row['cost_per_passing_usd'])} |"
        )
    return [*lines, ""]
