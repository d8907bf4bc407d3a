"""What a backend's engine last said of itself: its load from `/metrics`, its slots from
llama-server's `/slots`, and the context window its `/props` reports.

The scrapes write these from their own tasks (through FleetState); the views read them.
A reading counts until it is older than its source's `stale_after_s`; a failed scrape
keeps the last reading, which then goes stale on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from gateway.fleet.scrape.engine_metrics import EngineLoad
from gateway.fleet.scrape.llama_cpp_status import EngineSlots

T = TypeVar("T")


@dataclass(slots=True)
class Polled(Generic[T]):
    """The last reading of one polled source, and how polling it has gone."""

    stale_after_s: float
    value: T | None = None
    at: float = 0.0
    polls: int = 0
    failures: int = 0
    error: str = ""
    superseded_at: float = -1.0
    """A reading taken at or before this moment no longer counts (see `supersede`)."""

    def record(self, value: T | None, error: str, now: float) -> None:
        """A poll that got `value`, or None with `error` saying why there was none."""
        self.polls += 1
        self.error = error
        if value is None:
            self.failures += 1
            return
        self.value, self.at = value, now

    def fresh(self, now: float) -> T | None:
        value = self.value
        if value is None or self.at <= self.superseded_at:
            return None
        return value if now - self.at <= self.stale_after_s else None

    def supersede(self, now: float) -> None:
        """Something the last reading counted has changed for sure: until the next poll,
        say nothing rather than the old number."""
        self.superseded_at = now

    def age_s(self, now: float) -> float | None:
        return round(now - self.at, 3) if self.value is not None else None


@dataclass(slots=True)
class EngineReadings:
    """One backend's engine readings; a source it is not polled for is None."""

    metrics: Polled[EngineLoad] | None = None
    slots: Polled[EngineSlots] | None = None
    context_window_tokens: int | None = None
    """What the engine reported of one sequence's window (llama-server's `/props`)."""

    def freshness(self, now: float) -> tuple[bool, bool]:
        """Whether the metrics and the slots reading are fresh: a view showing them must
        be rebuilt once either goes stale."""
        metrics, slots = self.metrics, self.slots
        return (
            metrics is not None and metrics.fresh(now) is not None,
            slots is not None and slots.fresh(now) is not None,
        )

    def stale(self, now: float) -> bool:
        """Whether the engine's `/metrics` is polled and says nothing current: its last
        reading is older than `stale_after_s`, or every poll so far failed. A reading
        superseded by a freed slot is not stale (the next poll is due soon)."""
        polled = self.metrics
        if polled is None:
            return False
        if polled.value is None:
            return polled.failures > 0
        return now - polled.at > polled.stale_after_s

    def load(self, now: float) -> tuple[int | None, int | None, float | None]:
        """(running, waiting, KV usage) as the engine reports them now, None where no
        fresh reading says. Busy slots, when fresh, are the running requests."""
        load = self.metrics.fresh(now) if self.metrics is not None else None
        slots = self.slots.fresh(now) if self.slots is not None else None
        running = load.running if load is not None else None
        if slots is not None:
            running = slots.busy
        if load is None:
            return running, None, None
        return running, load.waiting, load.kv_usage

    def describe_metrics(self, now: float) -> dict[str, object] | None:
        """The last `/metrics` numbers; None when this backend is not scraped."""
        polled = self.metrics
        if polled is None:
            return None
        load = polled.value
        return {
            "family": load.family if load else None,
            "running": load.running if load else None,
            "waiting": load.waiting if load else None,
            "kv_usage": load.kv_usage if load else None,
            "age_s": polled.age_s(now),
            "fresh": polled.fresh(now) is not None,
            "scrapes": polled.polls,
            "scrape_failures": polled.failures,
            "last_error": polled.error,
        }

    def describe_slots(self, now: float) -> dict[str, object] | None:
        """The last `/slots` reading; None when this backend's slots are not polled."""
        polled = self.slots
        if polled is None:
            return None
        slots = polled.value
        return {
            "total": slots.total if slots else None,
            "busy": slots.busy if slots else None,
            "n_ctx": slots.n_ctx if slots else None,
            "age_s": polled.age_s(now),
            "fresh": polled.fresh(now) is not None,
            "polls": polled.polls,
            "poll_failures": polled.failures,
            "last_error": polled.error,
        }
