"""The quality book: evidence per backend and model, their scores, and ejection state.

Only the gateway writes it (passive signals after each response, probe results); the
router reads one `QualityView` per candidate. A pair's state follows hysteresis:

    healthy --fidelity < 1--> suspect --trial convicts (or fidelity < certain_below)--> ejected
    suspect --trial clears--> healthy
    ejected --back-off over--> probation
    probation --fidelity >= restore_above--> healthy
    probation --fidelity < demote_below--> ejected again, back-off doubled

A suspect's trial (`suspicion.py`) judges only evidence gathered since the suspicion
began, until it decides either way; every change keeps its evidence (`audit.py`).

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
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import replace

from gateway.fleet.backoff import Backoff
from gateway.quality.book.audit import AuditEntry, bounded
from gateway.quality.book.pair import UNKNOWN, HistoryPoint, Pair, StateChange, fresh_responses
from gateway.quality.book.pair_scores import score_all, within_tolerance
from gateway.quality.book.peers import PEER_RELATIVE, PeerRates, add_to_strata, collect_peer_rates
from gateway.quality.book.score import DecayedRate, SignalScore, worst_of
from gateway.quality.book.suspicion import Trial
from gateway.quality.book.trial_judge import (
    audit_entry,
    judge_trial,
    suspect_progress,
    suspect_reason,
    suspected,
)
from gateway.quality.config import QualityConfig
from gateway.quality.explain import describe_signal
from gateway.quality.signals.observation import SignalEvent
from policies.snapshot import QualityState, QualityView

__all__ = ["PEER_RELATIVE", "HistoryPoint", "QualityBook", "StateChange"]
SLA_SIGNALS = frozenset({"ttft", "tpot"})
_CHANGES_KEPT = 1024


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
        self._pairs: OrderedDict[tuple[str, str], Pair] = OrderedDict()
        # (model, signal) -> [(backend, bad rate)] of pairs with enough evidence; rebuilt
        # by refresh(), so judging one pair does not scan every other.
        self._peer_rates: PeerRates = {}
        self.events = 0
        self.dropped_pairs = 0
        self.changes: deque[StateChange] = deque(maxlen=_CHANGES_KEPT)
        self.change_count = 0
        """State changes so far: readers take the newest `change_count - seen` of `changes`."""
        self.on_change: Callable[[StateChange], None] | None = None
        """Called with each state change as it happens (sharing with peer replicas); must
        not block."""

    def forget(self, backends: Collection[str]) -> None:
        """Drop every pair of `backends` (a reload removed them, DNS discovery among its
        causes): a later backend of one of those names, a pod at an address another had,
        starts with no evidence and no ejection of the one before."""
        for key in [key for key in self._pairs if key[0] in backends]:
            del self._pairs[key]

    def record(self, backend: str, model: str, events: Iterable[SignalEvent]) -> None:
        """Fold one response's (or probe's) evidence in and re-judge the pair."""
        now = self._clock()
        pair = self._pair(backend, model)
        half_life, window = self.config.half_life_s, self.config.recent_window
        bad: set[str] = set()
        targets = (pair.signals,) if pair.fresh is None else (pair.signals, pair.fresh)
        for event in events:
            for signals in targets:
                rate = signals.get(event.signal)
                if rate is None:
                    rate = signals[event.signal] = DecayedRate(at=now)
                rate.add(now, half_life, event.bad, event.weight, event.detail, window)
            if event.signal in PEER_RELATIVE:
                add_to_strata(pair.strata, event, now, half_life, window)
            if pair.trial is not None:
                pair.trial.add(event.signal, event.bad, event.weight)
            self.events += 1
            if event.bad:
                bad.add(event.signal)
        if pair.state != "healthy" or (
            bad and not within_tolerance(self.config, pair, bad, self._peer_rates, now)
        ):
            self._judge(pair, now)
        # Good evidence, or bad evidence still within tolerance, cannot demote a healthy
        # pair: its view catches up on refresh(), about once a second.

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

    def apply_peer(
        self, backend: str, model: str, state: QualityState, for_s: float, reason: str
    ) -> bool:
        """A peer replica's verdict on a pair. Its ejection holds here for `for_s` (or
        longer, if this replica's own lasts longer), without growing this replica's
        back-off; its restore ends a probation here. Evidence stays each replica's own, so
        this replica keeps judging it. True when it changed anything."""
        now = self._clock()
        pair = self._pair(backend, model)
        if state == "ejected" and for_s > 0:
            if pair.state == "ejected" and pair.ejected_until >= now + for_s:
                return False
            pair.ejected_until = now + for_s
            if pair.state != "ejected":
                self._move(pair, "ejected")
            pair.peer_reason = reason
        elif state == "healthy" and pair.state == "probation":
            # As a restore here: what ejected it is forgotten, what it did since is kept.
            if pair.fresh is not None:
                pair.signals = pair.fresh
            self._move(pair, "healthy")
            pair.healthy_since = now
        else:
            return False
        self._judge(pair, now)
        return True

    def refresh(self) -> None:
        """Re-judge every pair: ends back-offs, lets evidence decay, samples history."""
        now = self._clock()
        # Peers under suspicion, ejected or in probation are not the measure of others.
        healthy = (
            (pair.backend, pair.model, pair.strata)
            for pair in self._pairs.values()
            if pair.state in ("healthy", "unknown")
        )
        cfg = self.config
        self._peer_rates = collect_peer_rates(healthy, now, cfg.half_life_s, cfg.min_evidence)
        for pair in self._pairs.values():
            self._judge(pair, now)

    def view(self, backend: str, model: str) -> QualityView:
        """What policies see, as of the last record() or refresh(); never changes state."""
        pair = self._pairs.get((backend, model))
        if pair is None:
            return UNKNOWN
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

    def audit(self, backend: str, model: str) -> list[AuditEntry]:
        """The evidence behind the pair's latest state changes, oldest first (bounded)."""
        pair = self._pairs.get((backend, model))
        return list(pair.audit) if pair is not None else []

    def on_trial(self, backend: str, model: str) -> list[str]:
        """The signals a suspect's trial is judging; empty unless suspect."""
        pair = self._pairs.get((backend, model))
        return list(pair.trial.counts) if pair is not None and pair.trial is not None else []

    def note_probe(self, backend: str, model: str, verdict: str) -> None:
        """A probe's short verdict, kept for the evidence of the pair's next state change."""
        pair = self._pairs.get((backend, model))
        if pair is not None:
            pair.probes.append(bounded(verdict))

    def last_bad(self, backend: str, model: str, signal: str) -> tuple[str, float | None]:
        pair = self._pairs.get((backend, model))
        rate = pair.signals.get(signal) if pair is not None else None
        return (rate.last_bad_detail, rate.last_bad_at) if rate is not None else ("", None)

    def _pair(self, backend: str, model: str) -> Pair:
        key = (backend, model)
        pair = self._pairs.get(key)
        if pair is None:
            cfg = self.config
            backoff = Backoff(
                cfg.ejection_base_s, cfg.ejection_max_s, rng=self._rng, jitter=cfg.ejection_jitter
            )
            pair = self._pairs[key] = Pair(backend, model, backoff)
            pair.history = deque(maxlen=self.config.history_size)
            pair.audit = deque(maxlen=self.config.audit_size)
            if len(self._pairs) > self.config.max_pairs:
                self._pairs.popitem(last=False)
                self.dropped_pairs += 1
        else:
            self._pairs.move_to_end(key)
        return pair

    def _judge(self, pair: Pair, now: float) -> None:
        scores = pair.scores = self._score_all(pair, pair.signals, now)
        fidelity, worst = worst_of(s for s in scores if s.signal not in SLA_SIGNALS)
        fresh = self._score_all(pair, pair.fresh, now) if pair.fresh is not None else ()
        fresh_fidelity, fresh_worst = worst_of(s for s in fresh if s.signal not in SLA_SIGNALS)
        judged = pair.signals
        self._transition(pair, now, fidelity, fresh_fidelity, bool(scores))
        if pair.signals is not judged:  # restored on fresh evidence alone: judge that
            scores = pair.scores = self._score_all(pair, pair.signals, now)
            fidelity, worst = worst_of(s for s in scores if s.signal not in SLA_SIGNALS)
        if pair.state == "probation":
            fidelity, worst = fresh_fidelity, fresh_worst
        sla, _ = worst_of(s for s in scores if s.signal in SLA_SIGNALS)
        half_life = self.config.half_life_s
        reason = describe_signal(worst, half_life) if worst else "no bad evidence"
        seen = needed = 0.0
        if pair.state == "unknown":
            reason = "no evidence yet"
        elif pair.state == "suspect" and pair.trial is not None:
            seen, needed = suspect_progress(pair.trial, scores, self.config)
            reason = suspect_reason(seen, needed, reason)
        elif pair.state == "probation":
            reason = f"probation, judged on {fresh_responses(pair):.0f} new responses: "
            reason += describe_signal(worst, half_life) if worst else "ok"
        elif pair.state == "ejected" and pair.peer_reason:
            reason = pair.peer_reason
        pair.view = QualityView(
            fidelity=round(fidelity, 4),
            sla=round(sla, 4),
            state=pair.state,
            reason=reason,
            ejected_for_s=max(0.0, pair.ejected_until - now) if pair.state == "ejected" else 0.0,
            evidence_seen=seen,
            evidence_needed=needed,
        )
        if now - pair.sampled_at >= self.config.history_interval_s:
            pair.history.append(HistoryPoint(now, pair.view.fidelity, pair.view.sla, pair.state))
            pair.sampled_at = now

    def _score_all(
        self, pair: Pair, signals: dict[str, DecayedRate] | None, now: float
    ) -> tuple[SignalScore, ...]:
        return score_all(self.config, pair, signals, self._peer_rates, now)

    def _transition(
        self, pair: Pair, now: float, fidelity: float, fresh_fidelity: float, seen: bool
    ) -> None:
        cfg = self.config
        if pair.state == "unknown":
            if not seen:
                return
            pair.state, pair.healthy_since = "healthy", now
        if pair.state == "ejected" and now >= pair.ejected_until:
            self._move(pair, "probation", "back-off over")
            pair.fresh = {}
            return  # nothing new to judge yet
        if pair.state in ("healthy", "suspect") and fidelity < cfg.certain_below:
            trigger = f"fidelity {fidelity:.2f} < certain_below {cfg.certain_below}"
            self._eject(pair, now, trigger)
        elif pair.state == "healthy":
            if fidelity < 1.0:
                self._suspect(pair, now, fidelity)
            elif now - pair.healthy_since >= cfg.forgive_after_s:
                pair.backoff.reset()
        elif pair.state == "suspect" and pair.trial is not None:
            verdict, why = judge_trial(pair.trial, pair.scores, cfg)
            if verdict == "convicted":
                self._eject(pair, now, why)
            elif verdict == "cleared":
                self._clear(pair, now, why)
        elif pair.state == "probation":
            if fresh_fidelity < cfg.demote_below:
                trigger = f"probation: fidelity {fresh_fidelity:.2f} on new evidence"
                self._eject(pair, now, f"{trigger} < demote_below {cfg.demote_below}")
            elif fidelity >= cfg.restore_above or (
                fresh_fidelity >= cfg.restore_above and fresh_responses(pair) >= cfg.min_evidence
            ):
                # Restored: what ejected it is forgotten, what it did since is kept.
                if fidelity < cfg.restore_above and pair.fresh is not None:
                    pair.signals = pair.fresh
                fresh_text = f"fidelity {max(fidelity, fresh_fidelity):.2f}"
                self._move(pair, "healthy", f"{fresh_text} >= restore_above {cfg.restore_above}")
                pair.healthy_since = now

    def _suspect(self, pair: Pair, now: float, fidelity: float) -> None:
        pair.trial = Trial(now)
        for signal in suspected(pair.scores):
            pair.trial.suspect(signal)
        self._move(pair, "suspect", f"fidelity {fidelity:.2f} < 1: gathering evidence")

    def _clear(self, pair: Pair, now: float, why: str) -> None:
        """The trial's own evidence replaces what raised the suspicion, which it outweighed."""
        trial = pair.trial
        self._move(pair, "healthy", why)
        pair.healthy_since = now
        window = self.config.recent_window
        for signal, (bad, total) in (trial.counts if trial is not None else {}).items():
            recent = min(1.0, window / total) if total > 0 else 0.0  # as full as it gets
            rate = DecayedRate(bad, total, bad * recent, total * recent, at=now)
            pair.signals[signal] = rate
            for key in [key for key in pair.strata if key[0] == signal]:
                del pair.strata[key]

    def _eject(self, pair: Pair, now: float, trigger: str = "") -> None:
        pair.ejected_until = now + pair.backoff.next_s()
        self._move(pair, "ejected", trigger)

    def _move(self, pair: Pair, state: QualityState, trigger: str = "") -> None:
        at = self._clock()
        # Probation is judged on the evidence since it began: that is what the entry shows.
        fresh = pair.fresh is not None and pair.state == "probation"
        entry = audit_entry(
            at=at,
            before=pair.state,
            after=state,
            trigger=bounded(trigger or "a peer replica's verdict"),
            scores=self._score_all(pair, pair.fresh, at) if fresh else pair.scores,
            trial=pair.trial,
            comparisons=pair.comparisons,
            probes=pair.probes,
            config=self.config,
        )
        pair.audit.append(entry)
        change = StateChange(at, pair.backend, pair.model, pair.state, state, entry)
        self.changes.append(change)
        self.change_count += 1
        pair.state = state
        pair.transitions += 1
        pair.peer_reason = ""
        if state != "probation":
            pair.fresh = None
        if state != "suspect":
            pair.trial = None
        if self.on_change is not None:
            self.on_change(change)
