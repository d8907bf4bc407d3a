"""A small sparse histogram with log-spaced bins, for percentiles of latency series.

Bins grow by 10% from 10 µs, so a percentile read back is within about 5% of the true
value; only the bins that were hit are stored, so a quiet time bucket costs nothing.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

_MIN_S = 1e-5
_GROWTH = 1.1
_LOG_GROWTH = math.log(_GROWTH)
_MAX_BIN = 300  # 10 µs x 1.1^300: far beyond any request's length


def bin_of(seconds: float) -> int:
    if seconds <= _MIN_S:
        return 0
    return min(_MAX_BIN, 1 + int(math.log(seconds / _MIN_S) / _LOG_GROWTH))


def value_of(index: int) -> float:
    """The geometric middle of a bin, in seconds."""
    if index == 0:
        return _MIN_S
    low = _MIN_S * _GROWTH ** (index - 1)
    return low * math.sqrt(_GROWTH)


class Histogram:
    __slots__ = ("bins", "count")

    def __init__(self) -> None:
        self.bins: dict[int, int] = {}
        self.count = 0

    def add(self, seconds: float) -> None:
        index = bin_of(seconds)
        self.bins[index] = self.bins.get(index, 0) + 1
        self.count += 1

    def merge(self, other: Histogram) -> None:
        for index, n in other.bins.items():
            self.bins[index] = self.bins.get(index, 0) + n
        self.count += other.count


def quantiles_ms(histograms: Iterable[Histogram], qs: tuple[float, ...]) -> list[float | None]:
    """The quantiles (0..1) of all the histograms together, in milliseconds."""
    merged = Histogram()
    for histogram in histograms:
        merged.merge(histogram)
    if merged.count == 0:
        return [None for _ in qs]
    out: list[float | None] = []
    ordered = sorted(merged.bins.items())
    for q in qs:
        rank = q * merged.count
        seen = 0
        for index, n in ordered:
            seen += n
            if seen >= rank:
                out.append(round(value_of(index) * 1000.0, 3))
                break
    return out
