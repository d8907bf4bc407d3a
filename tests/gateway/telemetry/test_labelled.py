"""Children looked up once per label tuple, with a bound; whole counts added once a drain."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from gateway.telemetry.labelled import Labelled, Tally


def _counter() -> Counter:
    return Counter("things", "Things.", ("kind",), registry=CollectorRegistry())


def test_a_child_is_looked_up_once_and_is_the_familys_own() -> None:
    family = _counter()
    children = Labelled(family)
    assert children("a") is children("a") is family.labels("a")
    assert children("b") is not children("a")
    assert len(children) == 2


def test_past_its_bound_the_cache_stops_growing_but_still_answers() -> None:
    family = _counter()
    children = Labelled(family, limit=2)
    for kind in ("a", "b", "c", "d"):
        children(kind).inc()
    assert len(children) == 2
    assert children("d") is family.labels("d")
    assert family.labels("c")._value.get() == 1.0


def test_a_tally_adds_each_childs_sum_once_and_starts_again() -> None:
    family = _counter()
    tally = Tally()
    for kind, amount in [("a", 1), ("b", 5), ("a", 2), ("a", 0)]:
        tally.add(family.labels(kind), amount)
    assert family.labels("a")._value.get() == 0.0  # nothing until applied
    assert len(tally) == 2
    tally.apply()
    assert (family.labels("a")._value.get(), family.labels("b")._value.get()) == (3.0, 5.0)
    assert len(tally) == 0
    tally.apply()
    assert family.labels("a")._value.get() == 3.0
