"""The scenarios' results as text: the figures first, then per-class or per-phase tables."""

from __future__ import annotations

from typing import Any

_SKIP = {"scenario", "params", "rss_mb_timeline", "errors", "error_examples"}


def _value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}" if value < 1 else f"{value:,.1f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def _scalars(result: dict[str, Any]) -> list[str]:
    return [
        f"  {key}: {_value(value)}"
        for key, value in result.items()
        if key not in _SKIP and not isinstance(value, (dict, list))
    ]


def _counts(row: dict[str, Any]) -> str:
    rate = row.get("success_rate")
    shown = "-" if rate is None else f"{100 * rate:.2f} %"
    return f"{row['requests']:>6} {row['ok']:>6} {row['failed']:>6} {shown:>9}"


def _errors(label: str, row: dict[str, Any]) -> list[str]:
    return [f"  {label}: {kind} x{count}" for kind, count in row.get("errors", {}).items()]


def _classes(result: dict[str, Any]) -> list[str]:
    lines = [f"  {'class':<28} {'sent':>6} {'ok':>6} {'failed':>6} {'success':>9}"]
    errors: list[str] = []
    for name, row in result["classes"].items():
        lines.append(f"  {name:<28} {_counts(row)}")
        errors += _errors(name, row)
    cut = result["streams_cut_on_killed_engine"]
    lines.append(f"  streams cut on the killed engine: {cut}")
    lines += [f"  {line}" for line in result.get("gateway_metrics", [])]
    return lines + errors


def _phases(result: dict[str, Any]) -> list[str]:
    lines = [f"  {'phase':<24} {'sent':>6} {'ok':>6} {'failed':>6} {'success':>9}  readyz"]
    details: list[str] = []
    for phase in result["phases"]:
        ready = phase["readyz"] or {}
        shown = f"{phase['readyz_status']} {ready.get('status')} degraded={ready.get('degraded')}"
        lines.append(f"  {phase['phase']:<24} {_counts(phase['answered'])}  {shown}")
        details.append(
            f"  {phase['phase']}: sync connected={phase['sync_connected']}, "
            f"limits redis={phase['limits_redis']}; " + "; ".join(phase["metrics"])
        )
        details += _errors(phase["phase"], phase["answered"])
    return lines + details


def render(name: str, result: dict[str, Any]) -> str:
    lines = [f"switchyard bench {name}: {'PASSED' if result['passed'] else 'FAILED'}"]
    lines.append("  params: " + ", ".join(f"{k}={v}" for k, v in result["params"].items()))
    lines += _scalars(result)
    if "all" in result:
        lines.append(f"  all requests: {_counts(result['all'])}  (sent ok failed success)")
    if "classes" in result:
        lines += _classes(result)
    if "phases" in result:
        lines += _phases(result)
    lines += _errors("errors", result.get("all", result))
    return "\n".join(lines)
