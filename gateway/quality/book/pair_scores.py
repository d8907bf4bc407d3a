"""One pair's signal scores: its decayed evidence, against its peers' where a signal is relative.

Pure functions of a pair, the book's settings and the peers' rates as `refresh()` last
collected them; the book decides what to do with the scores.
"""

from __future__ import annotations

from gateway.quality.book.pair import Pair
from gateway.quality.book.peers import PEER_RELATIVE, PeerRates, compare
from gateway.quality.book.score import DecayedRate, SignalScore, signal_score
from gateway.quality.config import QualityConfig


def score_one(
    config: QualityConfig,
    pair: Pair,
    name: str,
    rate: DecayedRate,
    signals: dict[str, DecayedRate],
    peer_rates: PeerRates,
    now: float,
) -> SignalScore | None:
    """`name`'s score from `rate` (one of `signals`, the pair's whole or fresh evidence);
    None for a peer-relative signal with no peers to compare with (that is no evidence).
    Keeps the peer comparison on the pair, for its audit."""
    evidence = rate.decayed(now, config.half_life_s)
    baseline = 0.0
    if name in PEER_RELATIVE:
        found = compare(
            pair.backend, pair.model, name, pair.strata, peer_rates, now, config.half_life_s
        )
        if found is None:
            return None
        pair.comparisons[name] = found
        baseline = found.baseline
        if signals is pair.signals:  # on the kinds of requests peers also saw
            evidence = found.evidence
    return signal_score(
        name,
        evidence,
        config.tolerance(name),
        z=config.confidence_z,
        prior_weight=config.prior_weight,
        min_evidence=config.min_evidence,
        baseline=baseline,
        recent_z=config.recent_confidence_z,
    )


def score_all(
    config: QualityConfig,
    pair: Pair,
    signals: dict[str, DecayedRate] | None,
    peer_rates: PeerRates,
    now: float,
) -> tuple[SignalScore, ...]:
    """Every signal's score that is evidence (see `score_one`)."""
    if not signals:
        return ()
    found = (
        score_one(config, pair, name, rate, signals, peer_rates, now)
        for name, rate in signals.items()
    )
    return tuple(score for score in found if score is not None)


def within_tolerance(
    config: QualityConfig,
    pair: Pair,
    names: set[str],
    peer_rates: PeerRates,
    now: float,
) -> bool:
    """Every one of `names` still scores 1 on the pair's evidence: a healthy pair's bad
    responses on them change neither its state nor what routing reads of it."""
    for name in names:
        rate = pair.signals.get(name)
        if rate is None:
            continue
        score = score_one(config, pair, name, rate, pair.signals, peer_rates, now)
        if score is not None and score.score < 1.0:
            return False
    return True
