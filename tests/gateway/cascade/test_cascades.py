"""The cascades one generation serves: each one's learned start over its own clock, and a
reload that keeps a book only where tiers and start settings are unchanged."""

from __future__ import annotations

import random
from typing import Any

from gateway.cascade.cascades import Cascades
from gateway.cascade.config import CascadeConfig

KIND = "chat|len0|no-tools|text|-"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def config(**fields: Any) -> CascadeConfig:
    declared: dict[str, Any] = {
        "name": "auto",
        "tiers": ["cheap", "best"],
        "checks": ["empty"],
        "start": {"explore": 0, "min_samples": 8, "half_life_s": 600},
    }
    return CascadeConfig.model_validate(declared | fields)


def doomed(cascades: Cascades, times: int = 10) -> None:
    """The first tier failed this kind's checks `times` times."""
    cascade = cascades.get("auto")
    assert cascade is not None
    for _ in range(times):
        cascade.learn(KIND, 0, failed=True)


def start_of(cascades: Cascades, name: str = "auto") -> int:
    cascade = cascades.get(name)
    assert cascade is not None
    return cascade.start(KIND).tier


def test_cascades_are_found_by_their_public_name() -> None:
    cascades = Cascades([config(), config(name="json")])
    assert cascades
    assert [c.name for c in cascades] == ["auto", "json"]
    found = cascades.get("json")
    assert found is not None and found.tiers == ["cheap", "best"]
    assert cascades.get("cheap") is None
    assert not Cascades([])


def test_failures_learned_skip_the_tier_until_they_decay() -> None:
    clock = Clock()
    cascades = Cascades([config()], clock=clock, rng=random.Random(1))
    assert start_of(cascades) == 0
    doomed(cascades)
    assert start_of(cascades) == 1
    clock.now = 300.0  # 10 decayed to 7.1 attempts: under min_samples
    assert start_of(cascades) == 0


def test_too_few_failures_skip_nothing() -> None:
    cascades = Cascades([config()], clock=Clock())
    doomed(cascades, times=7)
    assert start_of(cascades) == 0


def test_a_kind_learns_apart_from_other_kinds() -> None:
    cascades = Cascades([config()], clock=Clock())
    doomed(cascades)
    cascade = cascades.get("auto")
    assert cascade is not None
    assert cascade.start("chat|len3|tools|text|-").tier == 0


def test_explore_draws_come_from_the_injected_random() -> None:
    clock = Clock()
    cascades = Cascades(
        [config(start={"explore": 0.5, "min_samples": 8})], clock=clock, rng=random.Random(7)
    )
    doomed(cascades)
    starts = [start_of(cascades) for _ in range(400)]
    assert 100 < starts.count(0) < 300
    assert set(starts) == {0, 1}


def test_a_reload_keeps_the_book_when_tiers_and_start_are_unchanged() -> None:
    clock = Clock()
    old = Cascades([config()], clock=clock)
    doomed(old)
    new = Cascades([config(checks=["empty", "loop"])], clock=clock)
    new.carry_over(old)
    assert start_of(new) == 1


def test_a_reload_starts_afresh_when_the_tiers_change() -> None:
    clock = Clock()
    old = Cascades([config()], clock=clock)
    doomed(old)
    new = Cascades([config(tiers=["cheap", "other"])], clock=clock)
    new.carry_over(old)
    assert start_of(new) == 0


def test_a_reload_starts_afresh_when_the_start_settings_change() -> None:
    clock = Clock()
    old = Cascades([config()], clock=clock)
    doomed(old)
    changed = config(start={"explore": 0, "min_samples": 8, "half_life_s": 600, "max_kinds": 9})
    new = Cascades([changed], clock=clock)
    new.carry_over(old)
    assert start_of(new) == 0


def test_a_reload_keeps_nothing_for_a_cascade_that_is_new() -> None:
    clock = Clock()
    old = Cascades([config()], clock=clock)
    doomed(old)
    new = Cascades([config(name="fresh")], clock=clock)
    new.carry_over(old)
    assert start_of(new, "fresh") == 0
