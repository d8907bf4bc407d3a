"""Plain-text tables of a benchmark result, for the terminal and for docs/benchmarks.md."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _cell(value: Any, fmt: str = "{:.3f}") -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return fmt.format(value)
    return str(value)


def _percent(share: float | None) -> str:
    return "—" if share is None else f"{share * 100:.0f}"


def _signed(value: Any) -> str:
    return "—" if value is None else f"{value:+.3f}"


def render(headers: Sequence[str], rows: Sequence[Sequence[str]], left: int = 2) -> str:
    """A Markdown table, padded so that it also reads well in a terminal.

    The first ``left`` columns (names) are left-aligned, the rest (numbers) right-aligned.
    """
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |"]
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        cells = [
            c.ljust(w) if i < left else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def latency_table(phases: list[dict[str, Any]]) -> str:
    headers = [
        "phase",
        "target",
        "p50 ms",
        "p99 ms",
        "added p50",
        "added p99",
        "TTFC p50",
        "TTFC p99",
        "added TTFC p50",
        "added TTFC p99",
        "req/s",
        "errors",
    ]
    rows = []
    for phase in phases:
        for name, r in phase["results"].items():
            if "unavailable" in r:
                continue  # said once, in the memory table's status column
            rows.append(
                [
                    phase["name"],
                    name,
                    _cell(r.get("p50_ms")),
                    _cell(r.get("p99_ms")),
                    _signed(r.get("added_p50_ms")),
                    _signed(r.get("added_p99_ms")),
                    _cell(r.get("ttfc_p50_ms")),
                    _cell(r.get("ttfc_p99_ms")),
                    _signed(r.get("added_ttfc_p50_ms")),
                    _signed(r.get("added_ttfc_p99_ms")),
                    _cell(r.get("throughput_rps"), "{:.0f}"),
                    str(r.get("errors", 0)),
                ]
            )
    return render(headers, rows)


def cost_table(phases: list[dict[str, Any]]) -> str:
    headers = [
        "phase",
        "target",
        "CPU µs/req",
        "CPU µs/chunk",
        "CPU % of a core",
        "kernel %",
        "chunks/req",
        "frames/req",
    ]
    rows = []
    for phase in phases:
        for name, r in phase["results"].items():
            if "cpu_us_per_req" not in r:
                continue
            util = r.get("server_cpu_util")  # of one core
            rows.append(
                [
                    phase["name"],
                    name,
                    _cell(r.get("cpu_us_per_req"), "{:.1f}"),
                    _cell(r.get("cpu_us_per_chunk"), "{:.1f}"),
                    _percent(util),
                    _percent(r.get("kernel_share")),
                    _cell(r.get("chunks_per_req"), "{:.1f}"),
                    _cell(r.get("frames_per_req"), "{:.1f}"),
                ]
            )
    return render(headers, rows)


def _short(text: str, limit: int = 70) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def memory_table(targets: dict[str, dict[str, Any]]) -> str:
    headers = ["target", "idle RSS MB", "peak RSS MB", "processes", "status"]
    # Status is free text: keep it in the last column, left-aligned by its own padding.
    rows = [
        [
            name,
            _cell(t.get("idle_rss_mb"), "{:.1f}"),
            _cell(t.get("peak_rss_mb"), "{:.1f}"),
            _cell(t.get("processes")),
            _short(t.get("status", "ok")),
        ]
        for name, t in targets.items()
        if name != "direct"
    ]
    return render(headers, rows, left=1)


_UNIT_FORMAT = {"µs": ".1f", "ms": ".3f", "MB": ".1f"}


def verdict_table(checks: list[dict[str, Any]]) -> str:
    headers = ["Switchyard target", "limit", "measured", "verdict"]
    rows = [
        [
            c["check"],
            f"≤ {c['limit']:g} {c['unit']}",
            "—" if c["value"] is None else f"{c['value']:{_UNIT_FORMAT[c['unit']]}} {c['unit']}",
            c["verdict"],
        ]
        for c in checks
    ]
    return render(headers, rows, left=1)
