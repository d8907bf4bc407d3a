"""Token buckets: the arithmetic, and the in-process store used without (or instead of)
Redis.

A limit of N per minute is a bucket holding at most N that refills at N/60 per second,
full when first seen. A request takes `cost` from each of its buckets at once, or from
none when any holds less (then it must wait until the emptiest has refilled enough).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from collections.abc import Sequence

LimitKind = Literal["requests", "tokens"]


@dataclass(frozen=True, slots=True)
class BucketSpec:
    """One limit a request is charged against."""

    key: str
    """Its name, e.g. `key:key_ab12:tokens`, `route:default:requests`."""
    kind: LimitKind
    per_minute: int
    cost: int
    owner: str
    """Whose limit, in words: `key key_ab12`, `route default`."""

    @property
    def rate_per_s(self) -> float:
        return self.per_minute / 60.0


@dataclass(frozen=True, slots=True)
class Outcome:
    """Each bucket's level after admission (before it, when refused), in spec order."""

    admitted: bool
    levels: tuple[float, ...]


def refill(level: float, capacity: float, rate_per_s: float, elapsed_s: float) -> float:
    return min(capacity, level + max(0.0, elapsed_s) * rate_per_s)


def wait_s(spec: BucketSpec, level: float) -> float:
    """How long until the bucket holds `spec.cost` (0: it does)."""
    missing = spec.cost - level
    return max(0.0, missing / spec.rate_per_s)


def reset_s(spec: BucketSpec, level: float) -> float:
    """How long until the bucket is full again: OpenAI's `x-ratelimit-reset-*`."""
    return max(0.0, (spec.per_minute - level) / spec.rate_per_s)


class LocalBuckets:
    """Buckets in this process: exact for one process, per replica with several.

    At most `max_buckets` are kept; the least recently used is forgotten first (it is then
    full again when next seen, which errs towards admitting).
    """

    def __init__(self, max_buckets: int) -> None:
        self._max = max_buckets
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._buckets)

    def take(self, specs: Sequence[BucketSpec], now_s: float) -> Outcome:
        """Charge every bucket or none (no await inside: atomic on the event loop)."""
        levels = tuple(self._level(spec, now_s) for spec in specs)
        admitted = all(level >= spec.cost for spec, level in zip(specs, levels, strict=True))
        if admitted:
            levels = tuple(lvl - spec.cost for spec, lvl in zip(specs, levels, strict=True))
        for spec, level in zip(specs, levels, strict=True):
            self._store(spec.key, level, now_s)
        return Outcome(admitted, levels)

    def _level(self, spec: BucketSpec, now_s: float) -> float:
        found = self._buckets.get(spec.key)
        if found is None:
            return float(spec.per_minute)
        level, at = found
        return refill(level, spec.per_minute, spec.rate_per_s, now_s - at)

    def _store(self, key: str, level: float, now_s: float) -> None:
        previous = self._buckets.pop(key, None)
        at = max(now_s, previous[1]) if previous is not None else now_s
        self._buckets[key] = (level, at)
        while len(self._buckets) > self._max:
            self._buckets.popitem(last=False)


def duration(seconds: float) -> str:
    """A wait as OpenAI writes it in `x-ratelimit-reset-*`: `20ms`, `1.5s`, `6m0s`."""
    if seconds < 1.0:
        return f"{math.ceil(seconds * 1000)}ms"
    if seconds < 60.0:
        return f"{math.ceil(seconds * 1000) / 1000:g}s"
    minutes, rest = divmod(math.ceil(seconds), 60)
    return f"{minutes}m{rest}s"
