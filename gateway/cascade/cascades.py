"""The cascades one generation serves: each one's config, bound checks and book of how
kinds of requests fared on its tiers (carried over by a reload that keeps its tiers)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from gateway.cascade.start import KindBook, StartChoice, start_tier
from gateway.cascade.verdict import CascadeChecks

if TYPE_CHECKING:
    from gateway.cascade.config import CascadeConfig


class Cascade:
    """One cascade as a request meets it."""

    __slots__ = ("_clock", "_rng", "book", "checks", "config")

    def __init__(
        self, config: CascadeConfig, clock: Callable[[], float], rng: random.Random
    ) -> None:
        self.config = config
        self.checks = CascadeChecks(config.checks)
        self.book = KindBook(config.start.max_kinds, config.start.half_life_s)
        self._clock, self._rng = clock, rng

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def tiers(self) -> list[str]:
        return self.config.tiers

    def start(self, kind: str) -> StartChoice:
        tiers = self.config.tiers
        evidence = self.book.evidence(kind, len(tiers), self._clock())
        return start_tier(evidence, tiers, self.config.start, self._rng.random())

    def learn(self, kind: str, tier: int, failed: bool) -> None:
        self.book.record(kind, tier, len(self.config.tiers), failed, self._clock())


class Cascades:
    """Every cascade of the config, by the name clients send as `model`."""

    __slots__ = ("_by_name",)

    def __init__(
        self,
        configs: Iterable[CascadeConfig],
        *,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        draws = rng or random.Random()
        self._by_name: Mapping[str, Cascade] = {c.name: Cascade(c, clock, draws) for c in configs}

    def __bool__(self) -> bool:
        return bool(self._by_name)

    def __iter__(self) -> Iterator[Cascade]:
        return iter(self._by_name.values())

    def get(self, model: str) -> Cascade | None:
        return self._by_name.get(model)

    def carry_over(self, previous: Cascades) -> None:
        """Keep what the previous generation learned, for each cascade whose tiers and
        learning settings are unchanged."""
        for name, cascade in self._by_name.items():
            old = previous._by_name.get(name)
            if (
                old is not None
                and old.config.tiers == cascade.config.tiers
                and old.config.start == cascade.config.start
            ):
                cascade.book.carry_over(old.book)
