"""The book's side of a suspect's trial and of the audit: levels, verdicts, words, entries.

Pure functions of a pair's scores, its trial and the config, so that `quality_book.py` keeps the
state machine and these keep the arithmetic (`suspicion.py`) tied to the signals.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from gateway.quality.book.audit import MAX_SIGNALS, AuditEntry, SignalEvidence
from gateway.quality.book.peers import PeerComparison
from gateway.quality.book.score import SignalScore
from gateway.quality.book.suspicion import Conclusion, Hypotheses, Trial, ejection_level
from gateway.quality.config import QualityConfig
from gateway.quality.explain import label

SLA_SIGNALS = frozenset({"ttft", "tpot"})


def levels(scores: Iterable[SignalScore], config: QualityConfig) -> dict[str, float]:
    """Each fidelity signal's ejection level (above its peers' rate, where it has peers)."""
    return {
        s.signal: ejection_level(config.tolerance(s.signal), config.demote_below, s.baseline)
        for s in scores
        if s.signal not in SLA_SIGNALS
    }


def hypotheses(
    signal: str, scores: Iterable[SignalScore], config: QualityConfig
) -> Hypotheses | None:
    """The trial's two rates for a signal: its tolerated rate and one as far above its
    ejection level (both above the peers' rate, for signals judged against peers)."""
    baseline = next((s.baseline for s in scores if s.signal == signal), 0.0)
    tolerance = config.tolerance(signal)
    level = ejection_level(tolerance, config.demote_below, baseline)
    alpha, beta = config.trial_false_ejection, config.trial_false_clearance
    return Hypotheses.around(baseline + tolerance.tolerated, level, alpha, beta)


def suspected(scores: Iterable[SignalScore]) -> list[str]:
    """Fidelity signals whose score is below 1: some evidence against the pair."""
    return [s.signal for s in scores if s.score < 1.0 and s.signal not in SLA_SIGNALS]


def judge_trial(
    trial: Trial, scores: tuple[SignalScore, ...], config: QualityConfig
) -> tuple[Conclusion, str]:
    """Convicted when any suspected signal is; cleared when every one is; else open."""
    for signal in suspected(scores):
        trial.suspect(signal)  # a new doubt joins the trial
    verdicts: dict[str, Conclusion] = {}
    for signal, (bad, total) in trial.counts.items():
        test = hypotheses(signal, scores, config)
        verdict = test.conclude(bad, total) if test is not None else "cleared"
        if verdict == "convicted" and test is not None:
            why = f"trial convicted {label(signal)}: {_counts(bad, total)} since suspected"
            return "convicted", f"{why} ({test.p1:.1%} more likely than {test.p0:.1%})"
        verdicts[signal] = verdict
    if verdicts and all(v == "cleared" for v in verdicts.values()):
        cleared = ", ".join(f"{label(s)} {_counts(*trial.counts[s])}" for s in verdicts)
        return "cleared", f"trial cleared: {cleared} since suspected, within tolerance"
    return "open", ""


def suspect_progress(
    trial: Trial, scores: tuple[SignalScore, ...], config: QualityConfig
) -> tuple[float, float]:
    """(responses judged since suspected, responses needed to clear if all are good), for
    the signal furthest from clearing."""
    worst = (0.0, 0.0)
    for signal, (bad, total) in trial.counts.items():
        test = hypotheses(signal, scores, config)
        need = test.needed(bad, total) if test is not None else total
        if worst == (0.0, 0.0) or need - total > worst[1] - worst[0]:
            worst = (total, need)
    return worst


def suspect_reason(seen: float, need: float, worst: str) -> str:
    needed = "∞" if math.isinf(need) else f"{need:.0f}"
    return f"suspect (gathering evidence: {seen:.0f}/{needed}): {worst}"


def audit_entry(
    *,
    at: float,
    before: str,
    after: str,
    trigger: str,
    scores: tuple[SignalScore, ...],
    trial: Trial | None,
    comparisons: Mapping[str, PeerComparison],
    probes: Iterable[str],
    config: QualityConfig,
) -> AuditEntry:
    """The evidence behind one change: the signals that counted, worst first, bounded."""
    fidelity = min((s.score for s in scores if s.signal not in SLA_SIGNALS), default=1.0)
    counted = [s for s in scores if s.signal not in SLA_SIGNALS]
    tried = trial.counts if trial is not None else {}
    counted = [s for s in counted if s.score < 1.0 or s.signal in tried]
    counted.sort(key=lambda s: s.score)
    limits = levels(scores, config)
    entries = []
    for score in counted[:MAX_SIGNALS]:
        tolerance = config.tolerance(score.signal)
        comparison = comparisons.get(score.signal)
        counts = tried.get(score.signal)
        entries.append(
            SignalEvidence(
                signal=score.signal,
                score=score.score,
                bad=score.bad,
                total=score.total,
                recent=score.recent,
                tolerated=tolerance.tolerated,
                broken=tolerance.broken,
                level=limits.get(score.signal, 1.0),
                trial_bad=counts[0] if counts is not None else None,
                trial_total=counts[1] if counts is not None else None,
                peer_rate=comparison.baseline if comparison is not None else None,
                peers=comparison.peers if comparison is not None else (),
            )
        )
    return AuditEntry(at, before, after, trigger, fidelity, tuple(entries), tuple(probes))


def _counts(bad: float, total: float) -> str:
    return f"{bad:.0f}/{total:.0f}"
