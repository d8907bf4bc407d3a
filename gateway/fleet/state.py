"""Live per-backend load bookkeeping (in flight, queued prefill, decoding, engine readings,
provider budgets, a context window the engine reported) and the snapshots policies read,
built from it and the health detector's state."""

from __future__ import annotations

import logging
import math
import random
import time
from typing import TYPE_CHECKING

from gateway.config.credentials import backend_credentials
from gateway.fleet.backend_state import BackendState, describe_backend, readings_for
from gateway.fleet.backend_view import (
    build_view,
    capacity,
    context_window,
    current_budget,
    still_current,
)
from gateway.fleet.estimates import BackendEstimates
from gateway.fleet.health import HealthDetector
from gateway.fleet.provider_limits import (
    capped,
    rate_limited_wait,
    read_budget,
    spent_budget,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from gateway.config.backends import BackendConfig
    from gateway.config.root import HealthConfig
    from gateway.fleet.scrape.engine_metrics import EngineLoad
    from gateway.fleet.scrape.llama_cpp_status import EngineSlots
    from gateway.fleet.sync.health_events import HealthEvent, HealthKind
    from policies.snapshot import BackendView
    from providers.rate_limits import RateLimitSignal

logger = logging.getLogger("switchyard")


class FleetState:
    """Mutable state of every backend. Only the gateway writes it; policies see snapshots.

    Health evidence and ejections are the `HealthDetector`'s; the methods recording them
    pass them on and drop the views they change.
    """

    def __init__(
        self,
        backends: Iterable[BackendConfig],
        health: HealthConfig,
        *,
        clock: Callable[[], float] | None = None,
        rng: random.Random | None = None,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._clock = clock or time.monotonic
        configs = list(backends)
        self._health = HealthDetector(
            (b.name for b in configs),
            health,
            clock=self._clock,
            rng=rng or random.Random(),
            wall=wall,
        )
        self._backends = {
            b.name: BackendState(
                b,
                BackendEstimates(b.cache.prefill_tokens_per_s, b.cache.tpot_ms),
                self._health.of(b.name),
                backend_credentials(b),
                frozenset(b.models),
                frozenset(b.tags),
                engine=readings_for(b),
            )
            for b in configs
        }
        self._route_seq: dict[str, int] = {}
        self.on_change: Callable[[], None] | None = None
        """Called when a backend may have gained room (a prefill or a request ended, a
        new engine or peer reading): flow control's queue looks again. Must not block."""

    def next_seq(self, route: str) -> int:
        seq = self._route_seq.get(route, 0)
        self._route_seq[route] = seq + 1
        return seq

    def views(self, names: Iterable[str]) -> dict[str, BackendView]:
        """What the policies see of each backend now.

        A backend's view is rebuilt only when it could differ from the last one: after any
        recorded change (which clears it), when its speed estimates moved, when the engine
        reading it shows went stale, and always while ejected (the reason counts down).
        Most decisions then rebuild one or two views of sixteen.
        """
        now = self._clock()
        backends = self._backends
        found = {}
        for name in names:
            state = backends[name]
            view = state.view
            if view is None or not still_current(state, view, now):
                view = build_view(state, now)
                state.view = view if state.health.ejected_until <= now else None
                state.view_engine_fresh = state.engine.freshness(now)
                budget = current_budget(state, now)
                state.view_budget_until = budget.until if budget is not None else math.inf
            found[name] = view
        return found

    def acquire(self, name: str, uncached_tokens: int = 0, budget_tokens: int = 0) -> bool:
        """Count a request dispatched here (`budget_tokens`: its prompt plus `max_tokens`,
        charged to the provider's token budget); True if its prefill queue was empty."""
        state = self._backends[name]
        state.budget_tokens += budget_tokens
        # Other replicas' queued prefill delays this request too (as last published).
        queue_was_empty = state.queued_prefill_tokens + state.remote[1] == 0
        state.in_flight += 1
        state.requests += 1
        state.queued_prefill_tokens += uncached_tokens
        state.view = None
        return queue_was_empty

    def prefill_done(self, name: str, uncached_tokens: int) -> None:
        state = self._backends[name]
        state.queued_prefill_tokens = max(0, state.queued_prefill_tokens - uncached_tokens)
        state.view = None
        self._changed()

    def decode_started(self, name: str) -> None:
        state = self._backends[name]
        state.decoding += 1
        state.view = None

    def decode_ended(self, name: str) -> None:
        state = self._backends[name]
        state.decoding -= 1
        state.view = None
        self._changed()

    def release(self, name: str) -> None:
        state = self._backends[name]
        state.in_flight -= 1
        # llama-server's readings from before may count the slot just freed: drop them.
        engine = state.engine
        if engine.slots is not None:
            now = self._clock()
            engine.slots.supersede(now)
            if engine.metrics is not None:
                engine.metrics.supersede(now)
        state.view = None
        self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    def estimates(self, name: str) -> BackendEstimates:
        return self._backends[name].estimates

    def carry_over(self, previous: FleetState, names: Iterable[str]) -> None:
        """Share `previous`'s live state of these backends (a reload left them unchanged):
        the same objects, so requests still finishing on `previous` count here too."""
        for name in names:
            state = previous._backends[name]
            self._backends[name] = state
            self._health.adopt(name, state.health)
        for route, seq in previous._route_seq.items():
            self._route_seq.setdefault(route, seq)

    def at_capacity(self, name: str) -> bool:
        """Whether as many requests are in flight as it accepts (its provider's budget
        included), as `capacity-filter` sees it."""
        state = self._backends[name]
        return state.in_flight + state.remote[0] >= capacity(state, self._clock())

    def local_load(self) -> dict[str, tuple[int, int, int]]:
        """This replica's own (in_flight, queued_prefill_tokens, decoding) per backend."""
        return {
            name: (s.in_flight, s.queued_prefill_tokens, s.decoding)
            for name, s in self._backends.items()
        }

    def set_remote(self, load: Mapping[str, tuple[int, int, int]]) -> None:
        """Other replicas' summed load; views (what policies read) add it to the local
        counts. A backend this replica does not know is ignored; one missing gets zeros."""
        for name, state in self._backends.items():
            state.remote = load.get(name, (0, 0, 0))
            state.view = None
        self._changed()

    def record_engine_load(self, name: str, load: EngineLoad | None, error: str = "") -> None:
        """A /metrics scrape: `load`, or None with `error` saying why there was none. A
        failed scrape keeps the last reading, which goes stale on its own."""
        state = self._backends[name]
        if state.engine.metrics is not None:
            state.engine.metrics.record(load, error, self._clock())
            state.view = None
            self._changed()

    def record_engine_slots(self, name: str, slots: EngineSlots | None, error: str = "") -> None:
        """A /slots poll of llama-server, as `record_engine_load`."""
        state = self._backends[name]
        if state.engine.slots is not None:
            state.engine.slots.record(slots, error, self._clock())
            state.view = None
            self._changed()

    def learn_context_window(self, name: str, tokens: int) -> None:
        """The context window per sequence the engine reports (llama-server's /props); a
        configured `context_window_tokens` still wins."""
        state = self._backends[name]
        if state.engine.context_window_tokens != tokens:
            state.engine.context_window_tokens = tokens
            state.view = None

    def in_flight(self, name: str) -> int:
        return self._backends[name].in_flight

    def record_success(self, name: str) -> None:
        # Nothing a view shows changes: only the detector's failures in a row and back-off.
        self._health.record_success(name)

    def record_failure(self, name: str, reason: str) -> None:
        """A backend-side failure (connect error, timeout, 5xx): counts towards ejection."""
        self._health.record_failure(name, reason)
        self._backends[name].view = None

    def credentials_refused(self, name: str, message: str) -> None:
        """The backend refused the gateway's key: a failure like any other, and a warning
        (`message` names the key's variable, never the key), at most one a minute."""
        if self._backends[name].refusal_to_log(self._clock()):
            logger.warning("%s", message)
        self.record_failure(name, "upstream_credentials_refused")

    def cool_down(self, name: str, seconds: float, reason: str) -> None:
        """Keep traffic off a backend that asked for it (a 429, a spent budget)."""
        self._health.cool_down(name, seconds, reason)
        self._backends[name].view = None

    def record_provider_limits(
        self, name: str, signal: RateLimitSignal, *, cool_spent: bool = True
    ) -> None:
        """What an answer's rate-limit headers said: the remaining budgets are kept (they
        cap the capacity) and, with `cool_spent`, a budget reported spent keeps the backend
        out until its reset. Nothing with `rate_limits.enabled` off."""
        state = self._backends[name]
        limits = state.config.rate_limits
        if not limits.enabled:
            return
        now = self._clock()
        budget = read_budget(
            signal,
            now=now,
            now_unix=time.time(),
            requests=state.requests,
            stale_after_s=limits.stale_after_s,
            tokens=state.budget_tokens,
        )
        if budget is not None:
            state.budget = budget
            state.view = None
        spent = spent_budget(signal) if cool_spent else None
        if spent is not None:
            seconds, why = capped(spent[0], spent[1], limits.max_cool_down_s)
            self.cool_down(name, seconds, why)

    def rate_limited(
        self, name: str, retry_after_s: float | None, signal: RateLimitSignal | None
    ) -> None:
        """A 429: out for its Retry-After, else the wait its headers imply, else 1 s."""
        limits = self._backends[name].config.rate_limits
        if signal is not None:
            self.record_provider_limits(name, signal, cool_spent=False)
        wait_s, why = rate_limited_wait(retry_after_s, signal if limits.enabled else None)
        seconds, why = capped(wait_s, why, limits.max_cool_down_s)
        self.cool_down(name, seconds, f"rate limited upstream: {why}")

    def cool_down_left_s(self, name: str) -> float | None:
        """Seconds until the backend's cool-down ends, when a cool-down (a 429, a spent
        budget) is all that keeps it out; None when it is in, or out for anything else."""
        health = self._backends[name].health
        left = health.ejected_until - self._clock()
        if left <= 0 or health.cooling_until < health.ejected_until or not health.probe_ok:
            return None
        return left

    def not_ready(self, name: str, reason: str) -> None:
        """The engine said it is not ready yet (llama-server loading its model): kept out
        until a probe says it is ready, with no failure counted towards an ejection."""
        self._health.not_ready(name, reason)
        self._backends[name].view = None

    def record_probe(self, name: str, ok: bool, reason: str) -> None:
        self._health.record_probe(name, ok, reason)
        self._backends[name].view = None

    def share_health(self, listener: Callable[[HealthEvent], None] | None) -> None:
        """Hand every health verdict reached here to `listener` (the fleet sync's queue)."""
        self._health.on_event = listener

    def knows(self, name: str) -> bool:
        return name in self._backends

    def hold_for_peer(self, name: str, seconds: float, reason: str, kind: HealthKind) -> bool:
        """A peer replica's ejection or cool-down: out for `seconds` unless already out
        longer. True when it changed anything."""
        changed = self._health.hold(name, seconds, reason, kind=kind, peer=True)
        if changed:
            self._backends[name].view = None
        return changed

    def own_holds(self) -> list[HealthEvent]:
        """This replica's own ejections and cool-downs still running, restated now."""
        return self._health.own_holds()

    def probe_from_peer(self, name: str, ok: bool, reason: str, at_unix: float) -> bool:
        """A peer replica's probe result, unless this replica knows a later one."""
        changed = self._health.peer_probe(name, ok, reason, at_unix)
        if changed:
            self._backends[name].view = None
        return changed

    def describe(self) -> list[dict[str, object]]:
        """Every backend as `GET /v1/switchyard/backends` shows it."""
        now = self._clock()
        return [
            describe_backend(
                state,
                now,
                capacity=capacity(state, now),
                budget=current_budget(state, now),
                context_window_tokens=context_window(state),
            )
            for state in self._backends.values()
        ]
