"""One backend x model pair as the quality book keeps it, and what the book reports of it."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from gateway.fleet.backoff import Backoff
from gateway.quality.book.audit import MAX_PROBES, AuditEntry
from gateway.quality.book.peers import PeerComparison, Strata
from gateway.quality.book.score import DecayedRate, SignalScore
from gateway.quality.book.suspicion import Trial
from policies.snapshot import QualityState, QualityView

UNKNOWN = QualityView()


@dataclass(frozen=True, slots=True)
class StateChange:
    at: float
    backend: str
    model: str
    before: QualityState
    after: QualityState
    evidence: AuditEntry | None = None
    """What caused it: signals, counts, thresholds, trial, peers, probe answers."""


@dataclass(frozen=True, slots=True)
class HistoryPoint:
    at: float
    fidelity: float
    sla: float
    state: QualityState


@dataclass(slots=True)
class Pair:
    backend: str
    model: str
    backoff: Backoff
    """The ejection back-off: its attempts are the ejections since last forgiven."""
    signals: dict[str, DecayedRate] = field(default_factory=dict)
    state: QualityState = "unknown"
    ejected_until: float = 0.0
    healthy_since: float = 0.0
    transitions: int = 0
    fresh: dict[str, DecayedRate] | None = None
    """Evidence since probation began; None outside probation."""
    history: deque[HistoryPoint] = field(default_factory=deque)
    sampled_at: float = float("-inf")
    view: QualityView = field(default_factory=lambda: UNKNOWN)
    scores: tuple[SignalScore, ...] = ()
    peer_reason: str = ""
    """Why a peer replica ejected the pair (`apply_peer`), shown while that ejection lasts."""
    strata: Strata = field(default_factory=dict)
    """Evidence of the signals judged against peers, per kind of request."""
    comparisons: dict[str, PeerComparison] = field(default_factory=dict)
    """The latest comparison with peers per such signal, for the audit."""
    trial: Trial | None = None
    """The suspect's test; None unless suspect."""
    audit: deque[AuditEntry] = field(default_factory=deque)
    probes: deque[str] = field(default_factory=lambda: deque(maxlen=MAX_PROBES))
    """The latest probe answers, as short verdicts."""


def fresh_responses(pair: Pair) -> float:
    """Responses of evidence since probation began (the busiest signal's weight)."""
    return max((rate.total for rate in (pair.fresh or {}).values()), default=0.0)
