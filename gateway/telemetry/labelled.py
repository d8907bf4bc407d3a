"""Cheaper Prometheus updates for the telemetry thread: children looked up once, whole
counts added once per drain.

`labels()` validates its values and takes the family's lock on every call, and every
`inc()` takes the child's lock (in multiprocess mode, writes its file): per request, for a
dozen series, that cost more than everything else the metrics sink does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

from prometheus_client.metrics import MetricWrapperBase

if TYPE_CHECKING:
    from prometheus_client import Counter

M = TypeVar("M", bound=MetricWrapperBase)

MAX_CACHED_CHILDREN = 4096
"""Per family. Every label the gateway uses is bounded already (routes, backends, status
classes, error codes, teams up to `keys.max_team_labels`); this bound keeps a bug from
growing the cache without end (past it, children are looked up on every update)."""


class Labelled(Generic[M]):
    """One family's children by their label values, each `labels()` call made once."""

    __slots__ = ("_children", "_family", "_limit")

    def __init__(self, family: M, limit: int = MAX_CACHED_CHILDREN) -> None:
        self._family = family
        self._limit = limit
        self._children: dict[tuple[str, ...], M] = {}

    def __call__(self, *values: str) -> M:
        child = self._children.get(values)
        if child is None:
            child = self._family.labels(*values)
            if len(self._children) < self._limit:
                self._children[values] = child
        return child

    def __len__(self) -> int:
        return len(self._children)


class Tally:
    """Whole-number counter increments summed during a drain and added at its end (one
    `inc()` per child): sums of integers are exact, so the counters read the same after the
    drain as one `inc()` per request left them. Fractional amounts (spend) are not summed
    here: adding them in another order could change the last digit."""

    __slots__ = ("_counts",)

    def __init__(self) -> None:
        self._counts: dict[Counter, int] = {}

    def add(self, child: Counter, amount: int = 1) -> None:
        counts = self._counts
        counts[child] = counts.get(child, 0) + amount

    def apply(self) -> None:
        counts, self._counts = self._counts, {}
        for child, amount in counts.items():
            child.inc(amount)

    def __len__(self) -> int:
        return len(self._counts)
