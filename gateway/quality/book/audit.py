"""The evidence behind each quality state change, kept so that a decision can be audited.

Every move of a pair (healthy, suspect, ejected, probation, healthy again) keeps one
`AuditEntry`: what triggered it, each signal that counted with its evidence weights,
thresholds and the trial's counts, the peers it was compared with, and a summary of the
pair's latest probe answers. Entries live in a bounded ring per pair, served by
`GET /v1/switchyard/quality` without any store, and go to the store's `quality_events`
with the change when a store is configured. Everything in an entry is bounded in size
and never quotes what a backend answered beyond the probes' own short verdicts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from gateway.quality.explain import label

MAX_SIGNALS = 6
MAX_PROBES = 6
MAX_TEXT = 160


@dataclass(frozen=True, slots=True)
class SignalEvidence:
    signal: str
    score: float
    bad: float
    total: float
    recent: bool
    """The last few responses set the score (bad/total are theirs), not the half-life's."""
    tolerated: float
    broken: float
    level: float
    """The rate at which the score reaches demote_below: what the suspect's test decides."""
    trial_bad: float | None = None
    trial_total: float | None = None
    """The suspect's trial: evidence since the suspicion began; None outside a trial."""
    peer_rate: float | None = None
    peers: tuple[tuple[str, float], ...] = ()
    """For signals judged against peers: each healthy peer compared and its rate."""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "signal": self.signal,
            "label": label(self.signal),
            "score": round(self.score, 4),
            "bad": round(self.bad, 2),
            "total": round(self.total, 2),
            "window": "recent responses" if self.recent else "half-life",
            "tolerated": self.tolerated,
            "broken": self.broken,
            "ejection_level": round(self.level, 4),
        }
        if self.trial_total is not None:
            out["trial"] = {"bad": round(self.trial_bad or 0.0, 2), "total": self.trial_total}
        if self.peer_rate is not None:
            out["peer_rate"] = round(self.peer_rate, 4)
            out["peers"] = [{"backend": b, "rate": round(r, 4)} for b, r in self.peers]
        return out


@dataclass(frozen=True, slots=True)
class AuditEntry:
    at: float
    before: str
    after: str
    trigger: str
    """Why, in words: `fidelity 0.62 < demote_below 0.8`, `trial convicted looping output`."""
    fidelity: float
    signals: tuple[SignalEvidence, ...]
    probes: tuple[str, ...]
    """The pair's latest probe answers, each a short verdict (`tool_call: ok`)."""

    def as_dict(self, now: float) -> dict[str, Any]:
        return {
            "age_s": round(now - self.at, 1),
            "from": self.before,
            "to": self.after,
            "trigger": self.trigger,
            "fidelity": round(self.fidelity, 4),
            "signals": [s.as_dict() for s in self.signals],
            "probes": list(self.probes),
        }

    def as_record(self) -> dict[str, Any]:
        """For the store: the same, without the age (the row has its own time)."""
        out = self.as_dict(self.at)
        del out["age_s"]
        return out


def bounded(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def stored_reason(reason: str, entry: AuditEntry | None) -> str:
    """A state change's `reason` as the store keeps it: the view's reason, then on a line
    of its own `evidence: ` and the entry as JSON (the `quality_events` table has no
    column of its own for it yet)."""
    if entry is None:
        return reason
    return f"{reason}\nevidence: {orjson.dumps(entry.as_record()).decode()}"
