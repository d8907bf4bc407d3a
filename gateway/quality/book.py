"""The quality book: evidence per backend and model, their scores, and ejection state.

Only the gateway writes it (passive signals after each response, probe results); the
router reads one `QualityView` per candidate. A pair's state follows hysteresis:

    healthy --fidelity < demote_below--> ejected --back-off over--> probation
    probation --fidelity >= restore_above--> healthy
    probation --fidelity < demote_below--> ejected again, back-off doubled

The back-off grows with each ejection (with jitter, so gateways do not return in step)
and starts over once the pair has stayed healthy for `forgive_after_s`. In probation only
evidence gathered since probation began is judged: the evidence that ejected the pair
has been paid for, and judging it again would re-eject it with nothing new learned. A
pair restored to healthy keeps only that fresh evidence.

Views are computed when evidence arrives and by `refresh()`, which the gateway calls
about once a second (state deadlines, decay, history samples, peers' rates); reading a
view never changes anything.
"""

from __future__ import annotations

import random
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from gateway.fleet.backoff import Backoff
from gateway.quality.config import QualityConfig
from gateway.quality.explain import describe_signal
from gateway.quality.observation import SignalEvent
from gateway.quality.score import DecayedRate, SignalScore, signal_score
from policies.snapshot import QualityState, QualityView

# Judged against the same model's other backends: an emulator or a terse model may hit
# max_tokens on most requests; what matters is hitting it far more often than peers.
PEER_RELATIVE = frozenset({"max_tokens_hit"})
SLA_SIGNALS = frozenset({"ttft", "tpot"})
_UNKNOWN = QualityView()
_CHANGES_KEPT = 1024


@dataclass(frozen=True, slots=True)
class StateChange:
    at: float
    backend: str
    model: str
    before: QualityState
    after: QualityState


@dataclass(frozen=True, slots=True)
class HistoryPoint:
    at: float
    fidelity: float
    sla: float
    state: QualityState


@dataclass(slots=True)
class _Pair:
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
    view: QualityView = field(default_factory=lambda: _UNKNOWN)
    scores: tuple[SignalScore, ...] = ()


class QualityBook:
    """Bounded: at most `max_pairs` backend x model pairs (least recently updated go)."""

    def __init__(
        self,
        config: QualityConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self._clock = clock
        self._rng = rng or random.Random()
        self._pairs: OrderedDict[tuple[str, str], _Pair] = OrderedDict()
        # (model, signal) -> [(backend, bad rate)] of pairs with enough evidence; rebuilt
        # by refresh(), so judging one pair does not scan every other.
        self._peer_rates: dict[tuple[str, str], list[tuple[str, float]]] = {}
        self.events = 0
        self.dropped_pairs = 0
        self.changes: deque[StateChange] = deque(maxlen=_CHANGES_KEPT)
        self.change_count = 0
        """State changes so far: readers take the newest `change_count - seen` of `changes`."""

    def record(self, backend: str, model: str, events: Iterable[SignalEvent]) -> None:
        """Fold one response's (or probe's) evidence in and re-judge the pair."""
        now = self._clock()
        pair = self._pair(backend, model)
        half_life, window = self.config.half_life_s, self.config.recent_window
        bad = False
        for event in events:
            targets = [pair.signals] if pair.fresh is None else [pair.signals, pair.fresh]
            for signals in targets:
                rate = signals.get(event.signal)
                if rate is None:
                    rate = signals[event.signal] = DecayedRate(at=now)
                rate.add(now, half_life, event.bad, event.weight, event.detail, window)
            self.events += 1
            bad = bad or event.bad
        if bad or pair.state != "healthy":
            self._judge(pair, now)
        # Good evidence cannot demote a healthy pair: its view catches up on refresh().

    def evidence(self, backend: str, model: str) -> dict[str, tuple[float, float]]:
        """Each signal's (bad, total) evidence weight as of now, for keeping across restarts."""
        pair = self._pairs.get((backend, model))
        if pair is None:
            return {}
        now = self._clock()
        out = {}
        for signal, rate in pair.signals.items():
            rate.decay_to(now, self.config.half_life_s)  # as every touch does
            out[signal] = (rate.bad, rate.total)
        return out

    def restore(
        self, backend: str, model: str, evidence: Mapping[str, tuple[float, float]], age_s: float
    ) -> bool:
        """Start a pair from evidence saved `age_s` ago (decayed by that age) and judge it;
        a pair that already has evidence of its own keeps it. True when restored."""
        existing = self._pairs.get((backend, model))
        if existing is not None and existing.signals:
            return False
        now = self._clock()
        pair = self._pair(backend, model)
        for signal, (bad, total) in evidence.items():
            if total > 0 and 0 <= bad <= total:
                rate = pair.signals[signal] = DecayedRate(bad=bad, total=total, at=now - age_s)
                rate.decay_to(now, self.config.half_life_s)
        self._judge(pair, now)
        return True

    def refresh(self) -> None:
        """Re-judge every pair: ends back-offs, lets evidence decay, samples history."""
        now = self._clock()
        self._peer_rates = self._collect_peer_rates(now)
        for pair in self._pairs.values():
            self._judge(pair, now)

    def view(self, backend: str, model: str) -> QualityView:
        """What policies see, as of the last record() or refresh(); never changes state."""
        pair = self._pairs.get((backend, model))
        if pair is None:
            return _UNKNOWN
        view = pair.view
        if view.state == "ejected":
            left = max(0.0, pair.ejected_until - self._clock())
            view = replace(view, ejected_for_s=left)
        return view

    def pairs(self) -> list[tuple[str, str]]:
        return list(self._pairs)

    def scores(self, backend: str, model: str) -> tuple[SignalScore, ...]:
        pair = self._pairs.get((backend, model))
        return pair.scores if pair is not None else ()

    def history(self, backend: str, model: str) -> list[HistoryPoint]:
        pair = self._pairs.get((backend, model))
        return list(pair.history) if pair is not None else []

    def transitions(self, backend: str, model: str) -> int:
        pair = self._pairs.get((backend, model))
        return pair.transitions if pair is not None else 0

    def last_bad(self, backend: str, model: str, signal: str) -> tuple[str, float | None]:
        pair = self._pairs.get((backend, model))
        rate = pair.signals.get(signal) if pair is not None else None
        return (rate.last_bad_detail, rate.last_bad_at) if rate is not None else ("", None)

    def _pair(self, backend: str, model: str) -> _Pair:
        key = (backend, model)
        pair = self._pairs.get(key)
        if pair is None:
            cfg = self.config
            backoff = Backoff(
                cfg.ejection_base_s, cfg.ejection_max_s, rng=self._rng, jitter=cfg.ejection_jitter
            )
            pair = self._pairs[key] = _Pair(backend, model, backoff)
            pair.history = deque(maxlen=self.config.history_size)
            if len(self._pairs) > self.config.max_pairs:
                self._pairs.popitem(last=False)
                self.dropped_pairs += 1
        else:
            self._pairs.move_to_end(key)
        return pair

    def _judge(self, pair: _Pair, now: float) -> None:
        scores = self._score_all(pair, pair.signals, now)
        fidelity, worst = _worst(s for s in scores if s.signal not in SLA_SIGNALS)
        fresh = self._score_all(pair, pair.fresh, now) if pair.fresh is not None else ()
        fresh_fidelity, fresh_worst = _worst(s for s in fresh if s.signal not in SLA_SIGNALS)
        judged = pair.signals
        self._transition(pair, now, fidelity, fresh_fidelity, bool(scores))
        if pair.signals is not judged:  # restored on fresh evidence alone: judge that
            scores = self._score_all(pair, pair.signals, now)
            fidelity, worst = _worst(s for s in scores if s.signal not in SLA_SIGNALS)
        if pair.state == "probation":
            fidelity, worst = fresh_fidelity, fresh_worst
        sla, _ = _worst(s for s in scores if s.signal in SLA_SIGNALS)
        pair.scores = scores
        reason = describe_signal(worst, self.config.half_life_s) if worst else "no bad evidence"
        if pair.state == "unknown":
            reason = "no evidence yet"
        elif pair.state == "probation":
            reason = f"probation, judged on {_fresh_responses(pair):.0f} new responses: "
            reason += describe_signal(worst, self.config.half_life_s) if worst else "ok"
        pair.view = QualityView(
            fidelity=round(fidelity, 4),
            sla=round(sla, 4),
            state=pair.state,
            reason=reason,
            ejected_for_s=max(0.0, pair.ejected_until - now) if pair.state == "ejected" else 0.0,
        )
        if now - pair.sampled_at >= self.config.history_interval_s:
            pair.history.append(HistoryPoint(now, pair.view.fidelity, pair.view.sla, pair.state))
            pair.sampled_at = now

    def _score_all(
        self, pair: _Pair, signals: dict[str, DecayedRate] | None, now: float
    ) -> tuple[SignalScore, ...]:
        cfg = self.config
        out: list[SignalScore] = []
        for name, rate in (signals or {}).items():
            evidence = rate.decayed(now, cfg.half_life_s)
            baseline = 0.0
            if name in PEER_RELATIVE:
                peer = self._peer_rate(pair, name, now)
                if peer is None:
                    continue  # nothing to compare with: not evidence
                baseline = peer
            out.append(
                signal_score(
                    name,
                    evidence,
                    cfg.tolerance(name),
                    z=cfg.confidence_z,
                    prior_weight=cfg.prior_weight,
                    min_evidence=cfg.min_evidence,
                    baseline=baseline,
                    recent_z=cfg.recent_confidence_z,
                )
            )
        return tuple(out)

    def _peer_rate(self, pair: _Pair, signal: str, now: float) -> float | None:
        """Median bad rate of the same model's other backends with enough evidence."""
        rates = sorted(
            rate
            for backend, rate in self._peer_rates.get((pair.model, signal), ())
            if backend != pair.backend
        )
        if not rates:
            return None
        middle = len(rates) // 2
        return rates[middle] if len(rates) % 2 else (rates[middle - 1] + rates[middle]) / 2

    def _collect_peer_rates(self, now: float) -> dict[tuple[str, str], list[tuple[str, float]]]:
        out: dict[tuple[str, str], list[tuple[str, float]]] = {}
        for (backend, model), pair in self._pairs.items():
            for signal in PEER_RELATIVE:
                rate = pair.signals.get(signal)
                if rate is None:
                    continue
                evidence = rate.decayed(now, self.config.half_life_s)
                if evidence.total >= self.config.min_evidence:
                    share = evidence.bad / evidence.total
                    out.setdefault((model, signal), []).append((backend, share))
        return out

    def _transition(
        self, pair: _Pair, now: float, fidelity: float, fresh_fidelity: float, seen: bool
    ) -> None:
        cfg = self.config
        if pair.state == "unknown":
            if not seen:
                return
            pair.state, pair.healthy_since = "healthy", now
        if pair.state == "ejected" and now >= pair.ejected_until:
            self._move(pair, "probation")
            pair.fresh = {}
            return  # nothing new to judge yet
        if pair.state == "healthy":
            if fidelity < cfg.demote_below:
                self._eject(pair, now)
            elif now - pair.healthy_since >= cfg.forgive_after_s:
                pair.backoff.reset()
        elif pair.state == "probation":
            if fresh_fidelity < cfg.demote_below:
                self._eject(pair, now)
            elif fidelity >= cfg.restore_above or (
                fresh_fidelity >= cfg.restore_above and _fresh_responses(pair) >= cfg.min_evidence
            ):
                # Restored: what ejected it is forgotten, what it did since is kept.
                if fidelity < cfg.restore_above and pair.fresh is not None:
                    pair.signals = pair.fresh
                self._move(pair, "healthy")
                pair.healthy_since = now

    def _eject(self, pair: _Pair, now: float) -> None:
        pair.ejected_until = now + pair.backoff.next_s()
        self._move(pair, "ejected")

    def _move(self, pair: _Pair, state: QualityState) -> None:
        self.changes.append(StateChange(self._clock(), pair.backend, pair.model, pair.state, state))
        self.change_count += 1
        pair.state = state
        pair.transitions += 1
        if state != "probation":
            pair.fresh = None


def _fresh_responses(pair: _Pair) -> float:
    """Responses of evidence since probation began (the busiest signal's weight)."""
    return max((rate.total for rate in (pair.fresh or {}).values()), default=0.0)


def _worst(scores: Iterable[SignalScore]) -> tuple[float, SignalScore | None]:
    worst: SignalScore | None = None
    for score in scores:
        if worst is None or score.score < worst.score:
            worst = score
    if worst is None or worst.score >= 1.0:
        return 1.0, None
    return worst.score, worst
