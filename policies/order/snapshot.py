"""What an order policy reads: the requests held in one route's queue, as a snapshot."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Waiting:
    """One request held in an admission queue."""

    key: int
    """Arrival number in its queue: unique, and the order of arrival."""
    priority: str
    """Its priority class's name."""
    band: int
    """Its class's rank: band 0 goes before band 1, whatever the scores."""
    tenant: str
    """Whom its service is accounted to (a client key, a team, a header's value)."""
    waited_s: float
    prompt_tokens: int = 0
    slack_s: float | None = None
    """Seconds left until it must start to meet its TTFT target; None without a target."""
    cached_tokens: int = 0
    """The most of its prompt predicted cached on a backend that has room now."""
    cached_on: str | None = None
    """That backend."""
    follow_up: bool = False
    """A later turn of a session whose last turn was served lately."""


@dataclass(frozen=True, slots=True)
class QueueSnapshot:
    """One route's queue and the fairness accounting of its tenants, at `now_s`."""

    route: str
    now_s: float
    waiting: tuple[Waiting, ...]
    tenant_service: Mapping[str, float] = field(default_factory=dict)
    """Each tenant's recent service (decayed tokens) divided by its weight; a tenant
    absent has had none."""
