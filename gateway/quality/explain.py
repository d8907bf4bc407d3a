"""Signal scores in words, for reasons, the API and the dashboards."""

from __future__ import annotations

from gateway.quality.book.score import SignalScore

SIGNAL_LABELS: dict[str, str] = {
    "error": "errors",
    "tool_call": "tool-call failures",
    "tool_call_json": "tool-call arguments not JSON",
    "tool_call_name": "tool calls to unknown tools",
    "tool_call_schema": "tool-call schema failures",
    "finish_reason": "inconsistent finish_reason",
    "repetition": "looping output",
    "empty_output": "empty outputs",
    "unexpected_script": "output in an unexpected script",
    "truncation": "prompt silently truncated",
    "max_tokens_hit": "max_tokens hit",
    "ttft": "TTFT over target",
    "tpot": "TPOT over target",
    "probe_logprob": "canary logprob drift",
    "probe_tool_call": "tool-call probe failures",
    "probe_needle": "needle probe failures",
}


def label(signal: str) -> str:
    return SIGNAL_LABELS.get(signal, signal.replace("_", " "))


def describe_signal(score: SignalScore, half_life_s: float) -> str:
    """E.g. `tool-call schema failures 9/40 (half-life 10 min); score 0.62`, or with
    `(recent responses)` when the last few responses, not the half-life's, set it."""
    counts = f"{_count(score.bad)}/{_count(score.total)}"
    peers = f", peers {score.baseline:.0%}" if score.baseline else ""
    span = "recent responses" if score.recent else f"half-life {_duration(half_life_s)}"
    return f"{label(score.signal)} {counts}{peers} ({span}); score {score.score:.2f}"


def _count(value: float) -> str:
    # Decayed counts are real numbers; 5.98 responses reads better as 6.
    return f"{value:.0f}" if value >= 10 or abs(value - round(value)) < 0.05 else f"{value:.1f}"


def _duration(seconds: float) -> str:
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:.0f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"
