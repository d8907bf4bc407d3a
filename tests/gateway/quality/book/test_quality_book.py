from __future__ import annotations

import random

import pytest

from gateway.quality.book.quality_book import QualityBook
from gateway.quality.book.score import DecayedRate, Evidence, signal_score, wilson_lower
from gateway.quality.config import QualityConfig, SignalTolerance
from gateway.quality.signals.observation import SignalEvent


class VirtualClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make_book(**overrides: object) -> tuple[QualityBook, VirtualClock]:
    clock = VirtualClock()
    config = QualityConfig.model_validate({"ejection_jitter": 0.0, **overrides})
    return QualityBook(config, clock=clock, rng=random.Random(1)), clock


def event(signal: str, bad: bool, dimension: str = "fidelity") -> SignalEvent:
    return SignalEvent(signal, bad, dimension, "detail" if bad else "")  # type: ignore[arg-type]


def test_wilson_lower_bound() -> None:
    assert wilson_lower(0, 0, 1.645) == 0.0
    assert wilson_lower(0, 100, 1.645) == 0.0
    assert wilson_lower(10, 10, 1.645) == pytest.approx(0.787, abs=0.01)
    # more evidence, same rate: a tighter (higher) lower bound
    assert wilson_lower(20, 100, 1.645) > wilson_lower(2, 10, 1.645)


def test_decay_halves_evidence_per_half_life() -> None:
    rate = DecayedRate(at=0.0)
    rate.add(0.0, 600.0, True, 1.0, "x", 10.0)
    rate.add(0.0, 600.0, False, 1.0, "", 10.0)
    later = rate.decayed(600.0, 600.0)
    assert (later.bad, later.total) == pytest.approx((0.5, 1.0))
    # the recent estimate: the first response was worth 0.9 when the second came
    assert (later.recent_bad, later.recent_total) == pytest.approx((0.45, 0.95))
    much_later = rate.decayed(1200.0, 600.0)
    assert (much_later.bad, much_later.total) == pytest.approx((0.25, 0.5))


def test_a_sudden_fault_after_long_good_history_is_caught_by_the_recent_estimate() -> None:
    book, clock = make_book()
    for _ in range(500):
        clock.now += 1
        book.record("a", "m", [event("repetition", False)])
    ejected_after = None
    for count in range(1, 11):
        clock.now += 1
        book.record("a", "m", [event("repetition", True)])
        if book.view("a", "m").state == "ejected":
            ejected_after = count
            break
    assert ejected_after is not None
    assert ejected_after <= 8
    assert "(recent responses)" in book.view("a", "m").reason


@pytest.mark.parametrize(
    ("bad", "total", "min_evidence", "expected"),
    [
        pytest.param(0, 100, 5, 1.0, id="clean"),
        pytest.param(3, 4, 5, 1.0, id="too-little-evidence"),
        pytest.param(10, 10, 5, 0.0, id="all-bad"),
        pytest.param(1, 100, 5, 1.0, id="within-tolerance"),
    ],
)
def test_signal_score(bad: float, total: float, min_evidence: float, expected: float) -> None:
    tolerance = SignalTolerance(tolerated=0.02, broken=0.25)
    evidence = Evidence(bad, total, 0.0, 0.0)
    score = signal_score(
        "x", evidence, tolerance, z=1.645, prior_weight=2, min_evidence=min_evidence
    )
    assert score.score == pytest.approx(expected)


def test_unknown_until_evidence_then_healthy() -> None:
    book, _ = make_book()
    assert book.view("a", "m").state == "unknown"
    book.record("a", "m", [event("error", False)])
    view = book.view("a", "m")
    assert (view.state, view.fidelity) == ("healthy", 1.0)


def test_loops_eject_with_growing_backoff_then_restore() -> None:
    book, clock = make_book(ejection_base_s=30.0)
    for _ in range(6):
        clock.now += 1
        book.record("a", "m", [event("repetition", True)])
    view = book.view("a", "m")
    assert view.state == "ejected"
    assert view.fidelity < 0.8
    assert view.reason.startswith("looping output 6/6 (half-life 10 min)")
    assert view.ejected_for_s == pytest.approx(30.0)
    clock.now += 31
    book.refresh()  # back-off over: probation, judged only on what comes next
    assert book.view("a", "m").state == "probation"
    for _ in range(6):  # still looping: ejected again, twice as long
        clock.now += 1
        book.record("a", "m", [event("repetition", True)])
    assert book.view("a", "m").state == "ejected"
    assert book.view("a", "m").ejected_for_s == pytest.approx(60.0)
    clock.now += 61
    book.refresh()
    probation = book.view("a", "m")
    assert probation.state == "probation"
    assert probation.reason == "probation, judged on 0 new responses: ok"
    for _ in range(6):  # the fault cleared
        clock.now += 1
        book.record("a", "m", [event("repetition", False)])
    assert book.view("a", "m").state == "healthy"
    assert book.view("a", "m").fidelity == 1.0  # the evidence that ejected it is forgotten
    assert book.transitions("a", "m") == 5


def test_no_new_evidence_means_probation_not_another_ejection() -> None:
    book, clock = make_book(ejection_base_s=30.0)
    for _ in range(20):
        clock.now += 1
        book.record("a", "m", [event("repetition", True)])
    for _ in range(10):
        clock.now += 100
        book.refresh()
    assert book.view("a", "m").state == "probation"
    assert book.transitions("a", "m") == 2


def test_reading_a_view_changes_nothing() -> None:
    book, clock = make_book(ejection_base_s=30.0)
    for _ in range(6):
        clock.now += 1
        book.record("a", "m", [event("repetition", True)])
    clock.now += 10
    assert book.view("a", "m").ejected_for_s == pytest.approx(20.0)
    clock.now += 100
    assert book.view("a", "m").state == "ejected"  # until the next refresh()
    assert book.view("a", "m").ejected_for_s == 0.0
    assert book.transitions("a", "m") == 1


def test_sla_signals_do_not_touch_fidelity() -> None:
    book, clock = make_book()
    for _ in range(50):
        clock.now += 1
        book.record("a", "m", [event("ttft", True, "sla")])
    view = book.view("a", "m")
    assert view.state == "healthy"
    assert view.fidelity == 1.0
    assert view.sla == 0.0


def test_max_tokens_hit_is_judged_against_peers() -> None:
    book, clock = make_book()
    for _ in range(60):
        clock.now += 1
        # every backend of this model hits max_tokens: normal for it
        book.record("a", "m", [event("max_tokens_hit", True)])
        book.record("b", "m", [event("max_tokens_hit", True)])
        # c hits it on every request where its peers on model n never do
        book.record("c", "n", [event("max_tokens_hit", True)])
        book.record("d", "n", [event("max_tokens_hit", False)])
        book.refresh()  # peers' rates are gathered here
    assert book.view("a", "m").state == "healthy"
    assert book.view("b", "m").state == "healthy"
    assert book.view("c", "n").state == "ejected"
    assert "peers 0%" not in book.view("c", "n").reason  # a zero baseline is not shown
    assert book.view("d", "n").state == "healthy"


def test_evidence_fades_back_to_the_prior() -> None:
    book, clock = make_book(half_life_s=60.0)
    for _ in range(10):
        book.record("a", "m", [event("truncation", True)])
    assert book.view("a", "m").fidelity < 0.8
    clock.now += 600  # ten half-lives: ~0.01 responses of evidence left
    book.refresh()
    assert book.view("a", "m").fidelity == 1.0


def test_pairs_are_bounded() -> None:
    book, _ = make_book(max_pairs=3)
    for index in range(5):
        book.record(f"b{index}", "m", [event("error", False)])
    assert len(book.pairs()) == 3
    assert book.dropped_pairs == 2


def test_history_is_sampled_and_bounded() -> None:
    book, clock = make_book(history_size=4, history_interval_s=10.0)
    book.record("a", "m", [event("error", False)])
    for _ in range(100):
        clock.now += 1
        book.refresh()  # the gateway's once-a-second task samples history, traffic or not
    points = book.history("a", "m")
    assert len(points) == 4
    assert [round(p.at) for p in points] == [70, 80, 90, 100]


def test_restored_evidence_is_decayed_by_its_age_and_never_overwrites() -> None:
    clock = [1000.0]
    book = QualityBook(QualityConfig(half_life_s=600), clock=lambda: clock[0])
    assert book.restore("a", "m", {"error": (8.0, 40.0)}, age_s=600)
    bad, total = book.evidence("a", "m")["error"]
    assert (bad, total) == (pytest.approx(4.0), pytest.approx(20.0))  # one half-life old
    assert not book.restore("a", "m", {"error": (0.0, 99.0)}, age_s=0)  # live evidence kept
    assert book.evidence("a", "m")["error"][1] == pytest.approx(20.0)
    assert book.restore("b", "m", {"error": (5.0, 1.0), "x": (0.0, 0.0)}, age_s=0)
    assert book.evidence("b", "m") == {}  # impossible weights are ignored


def eject_again(book: QualityBook, clock: VirtualClock) -> float:
    """Drive a pair (re-)ejected by looping output; its back-off in seconds."""
    for _ in range(20):
        clock.now += 1
        book.record("a", "m", [event("repetition", True)])
        if book.view("a", "m").state == "ejected":
            return book.view("a", "m").ejected_for_s
    raise AssertionError("never ejected")


def wait_out(book: QualityBook, clock: VirtualClock, seconds: float) -> None:
    clock.now += seconds
    book.refresh()
    assert book.view("a", "m").state == "probation"


def test_the_back_off_doubles_with_jitter_up_to_its_cap() -> None:
    clock = VirtualClock()
    config = QualityConfig(ejection_base_s=30.0, ejection_max_s=100.0, ejection_jitter=0.2)
    book = QualityBook(config, clock=clock, rng=random.Random(1))
    rng = random.Random(1)  # the book's draws, one per ejection
    lengths = []
    for _ in range(4):
        lengths.append(eject_again(book, clock))
        wait_out(book, clock, lengths[-1] + 1)
    expected = [raw * (1.0 + 0.2 * rng.random()) for raw in (30.0, 60.0, 100.0, 100.0)]
    assert lengths == pytest.approx(expected, rel=1e-12)
    assert lengths[0] == pytest.approx(30.0 * (1.0 + 0.2 * 0.13436424411240122), rel=1e-12)


@pytest.mark.parametrize(
    ("healthy_for_s", "next_back_off_s"),
    [pytest.param(50.0, 60.0, id="not-yet-forgiven"), pytest.param(150.0, 30.0, id="forgiven")],
)
def test_staying_healthy_for_forgive_after_s_starts_the_back_off_over(
    healthy_for_s: float, next_back_off_s: float
) -> None:
    book, clock = make_book(ejection_base_s=30.0, forgive_after_s=100.0, half_life_s=60.0)
    assert eject_again(book, clock) == pytest.approx(30.0)
    wait_out(book, clock, 31)
    for _ in range(6):  # the fault cleared: healthy again
        clock.now += 1
        book.record("a", "m", [event("repetition", False)])
    assert book.view("a", "m").state == "healthy"
    clock.now += healthy_for_s
    book.refresh()
    assert eject_again(book, clock) == pytest.approx(next_back_off_s)


def test_forgetting_removed_backends_drops_their_pairs_only() -> None:
    book, _ = make_book()
    for backend in ("vllm@10.0.0.1:8000", "vllm@10.0.0.2:8000", "claude"):
        book.record(backend, "m", [event("repetition", True)])
    book.forget(frozenset({"vllm@10.0.0.1:8000", "gone"}))
    assert book.pairs() == [("vllm@10.0.0.2:8000", "m"), ("claude", "m")]
    assert book.evidence("vllm@10.0.0.1:8000", "m") == {}, "a new pod there starts clean"
