"""One route's admission queue: the requests held on it, bounded in number, each with
the future its request waits on and the moment it must leave by."""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gateway.fleet.estimates import ewma
from policies.order.snapshot import Waiting

if TYPE_CHECKING:
    from gateway.admission.classes import Standing
    from gateway.config.root import RouteConfig
    from gateway.routing.router import RoutePlan


@dataclass(frozen=True, slots=True)
class Release:
    """How a held request leaves its queue: `go` (dispatch on its plan's first leg, which
    the queue re-decided) or `late` (it could not start in time, or waited its longest;
    the request falls back or is refused), with the reason."""

    how: str
    reason: str
    code: str = ""
    """For `late`: the refusal's error code."""


@dataclass(slots=True, eq=False)
class Held:
    """A request waiting in a queue."""

    key: int
    route: RouteConfig
    plan: RoutePlan
    standing: Standing
    target_ms: float | None
    tpot_target_ms: float | None
    arrived: float
    leave_by: float
    """When it must be released or dealt with (its deadline's act time, or the longest
    wait); inf: never."""
    late_code: str
    """The refusal's code when `leave_by` passes."""
    cached: dict[str, int]
    prompt_tokens: int
    follow_up: bool
    future: asyncio.Future[Release] = field(default_factory=asyncio.Future)

    def waiting(self, now: float, cached: int, cached_on: str | None) -> Waiting:
        """What the order policies see of it now."""
        slack = self.leave_by - now if self.target_ms is not None else None
        return Waiting(
            key=self.key,
            priority=self.standing.cls.name,
            band=self.standing.cls.band,
            tenant=self.standing.tenant,
            waited_s=now - self.arrived,
            prompt_tokens=self.prompt_tokens,
            slack_s=slack,
            cached_tokens=cached,
            cached_on=cached_on,
            follow_up=self.follow_up,
        )

    def settle(self, release: Release) -> None:
        if not self.future.done():
            self.future.set_result(release)


class RouteQueue:
    """The held requests of one route, in arrival order, and how fast it releases."""

    def __init__(self, route: str, limit: int) -> None:
        self.route = route
        self.limit = limit
        self.held: dict[int, Held] = {}
        self.release_interval_s: float | None = None
        """An average of the time between releases: what a Retry-After is estimated from."""
        self._last_release: float | None = None

    def __len__(self) -> int:
        return len(self.held)

    @property
    def full(self) -> bool:
        return len(self.held) >= self.limit

    def add(self, held: Held) -> None:
        self.held[held.key] = held

    def remove(self, held: Held) -> None:
        self.held.pop(held.key, None)

    def released(self, held: Held, now: float, release: Release) -> None:
        self.remove(held)
        held.settle(release)
        if self._last_release is not None:
            gap = now - self._last_release
            current = self.release_interval_s
            self.release_interval_s = gap if current is None else ewma(current, gap)
        self._last_release = now

    def next_leave_by(self) -> float:
        return min((h.leave_by for h in self.held.values()), default=math.inf)

    def victim_for(self, band: int) -> Held | None:
        """The request a newcomer of `band` may displace from a full queue: the latest of
        the lowest sheddable class below it."""
        lower = [h for h in self.held.values() if h.standing.cls.band > band]
        sheddable = [h for h in lower if h.standing.cls.sheddable] or lower
        if not sheddable:
            return None
        return max(sheddable, key=lambda h: (h.standing.cls.band, h.key))

    def retry_after_s(self) -> float:
        """Roughly when a request arriving now could be admitted: the queue's length at
        its recent release rate; 1 s when no rate is known yet."""
        interval = self.release_interval_s
        if interval is None:
            return 1.0
        return min(60.0, max(1.0, (len(self.held) + 1) * interval))
