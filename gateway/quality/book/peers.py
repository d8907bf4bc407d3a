"""Signals judged against peers: a backend's rate beside its healthy peers' on like requests.

Whether a healthy backend hits `max_tokens` depends mostly on what it was asked: a tool
call ends on its own, a text answer to a small `max_tokens` is cut far more often than
one to a large budget. Comparing one backend's overall rate with its peers' overall rates
therefore compares request mixes, not backends: a twin that happened to get only text
requests (session affinity, the load scorer, plain chance) looked worse than peers that
got tool calls too, and was ejected after nine requests. So evidence is kept per stratum
(the kind of request, `SignalEvent.stratum`), each stratum is compared with the same
stratum of the peers, and the backend's baseline is the peers' rates weighted by its own
mix. Only healthy peers with enough evidence in a stratum count: a suspect, ejected or
recovering peer is exactly the one not to be measured against.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gateway.quality.book.score import DecayedRate, Evidence
from gateway.quality.signals.observation import SignalEvent

PEER_RELATIVE = frozenset({"max_tokens_hit"})
MAX_STRATA = 32
"""Strata kept per pair; later ones share the stratum `other` (bounded memory)."""
_OTHER = "other"

Strata = dict[tuple[str, str], DecayedRate]
"""(signal, stratum) -> its decayed evidence."""
PeerRates = dict[tuple[str, str, str], list[tuple[str, float]]]
"""(model, signal, stratum) -> [(backend, bad rate)] of healthy pairs with enough evidence."""


@dataclass(frozen=True, slots=True)
class PeerComparison:
    """A backend's evidence on the strata its peers also saw, and what peers did there."""

    evidence: Evidence
    baseline: float
    """The peers' rates per stratum, weighted by this backend's own evidence per stratum."""
    peers: tuple[tuple[str, float], ...]
    """Each peer compared and its rate on this backend's mix (the strata it also saw)."""


def add_to_strata(
    strata: Strata, event: SignalEvent, now: float, half_life_s: float, window: float
) -> None:
    key = (event.signal, event.stratum)
    if key not in strata and len(strata) >= MAX_STRATA:
        key = (event.signal, _OTHER)
    rate = strata.get(key)
    if rate is None:
        rate = strata[key] = DecayedRate(at=now)
    rate.add(now, half_life_s, event.bad, event.weight, event.detail, window)


def collect_peer_rates(
    pairs: Iterable[tuple[str, str, Strata]], now: float, half_life_s: float, min_evidence: float
) -> PeerRates:
    """Rates per stratum of the given (backend, model, strata): pass only healthy pairs."""
    out: PeerRates = {}
    for backend, model, strata in pairs:
        for (signal, stratum), rate in strata.items():
            evidence = rate.decayed(now, half_life_s)
            if evidence.total >= min_evidence:
                share = evidence.bad / evidence.total
                out.setdefault((model, signal, stratum), []).append((backend, share))
    return out


def compare(
    backend: str,
    model: str,
    signal: str,
    strata: Mapping[tuple[str, str], DecayedRate],
    rates: PeerRates,
    now: float,
    half_life_s: float,
) -> PeerComparison | None:
    """None when no peer saw any stratum this backend saw: nothing to compare with."""
    bad = total = recent_bad = recent_total = expected = 0.0
    weighted: dict[str, list[float]] = {}
    for (name, stratum), rate in strata.items():
        if name != signal:
            continue
        peers = [(b, r) for b, r in rates.get((model, signal, stratum), ()) if b != backend]
        if not peers:
            continue  # this backend's evidence here has nothing to be compared with
        evidence = rate.decayed(now, half_life_s)
        bad, total = bad + evidence.bad, total + evidence.total
        recent_bad += evidence.recent_bad
        recent_total += evidence.recent_total
        expected += evidence.total * _median([r for _, r in peers])
        for peer, peer_rate in peers:
            sums = weighted.setdefault(peer, [0.0, 0.0])
            sums[0] += evidence.total * peer_rate
            sums[1] += evidence.total
    if total <= 0:
        return None
    peers_seen = tuple(sorted((p, s[0] / s[1]) for p, s in weighted.items() if s[1] > 0))
    evidence = Evidence(bad, total, recent_bad, recent_total)
    return PeerComparison(evidence, expected / total, peers_seen)


def _median(values: list[float]) -> float:
    values = sorted(values)
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2
