"""Suspects: gathering evidence until a sequential test convicts or clears them; every
state change keeps the evidence behind it."""

from __future__ import annotations

import math
import random

import orjson
import pytest

from gateway.quality.book.audit import stored_reason
from gateway.quality.book.quality_book import QualityBook
from gateway.quality.book.suspicion import Hypotheses
from gateway.quality.config import QualityConfig
from gateway.quality.report import quality_report
from gateway.quality.signals.observation import SignalEvent
from policies.scorers.quality_scorer import QualityScorer
from policies.snapshot import BackendView, QualityView, RequestInfo, Snapshot


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make_book(**overrides: object) -> tuple[QualityBook, Clock]:
    clock = Clock()
    config = QualityConfig.model_validate({"ejection_jitter": 0.0, **overrides})
    return QualityBook(config, clock=clock, rng=random.Random(1)), clock


def loop(bad: bool) -> list[SignalEvent]:
    return [SignalEvent("repetition", bad, "fidelity", "a 3-word phrase repeated" if bad else "")]


def feed(book: QualityBook, clock: Clock, answers: str) -> None:
    """`answers`: one character per response, `x` looping, `.` fine."""
    for answer in answers:
        clock.now += 1
        book.record("a", "m", loop(answer == "x"))


# Loops: tolerated 1 %, ejection level 4.8 %; the test weighs 1 % against 8.6 %.
LOOPS = Hypotheses.around(0.01, 0.048, alpha=0.01, beta=0.05)


@pytest.mark.parametrize(
    ("bad", "total", "expected"),
    [
        pytest.param(0, 3, "open", id="too-little"),
        pytest.param(3, 8, "convicted", id="three-loops-in-eight"),
        pytest.param(0, 40, "cleared", id="forty-clean"),
        pytest.param(1, 40, "open", id="one-loop-in-forty"),
        pytest.param(1, 80, "cleared", id="one-loop-in-eighty"),
    ],
)
def test_the_sequential_test(bad: float, total: float, expected: str) -> None:
    assert LOOPS is not None
    assert LOOPS.conclude(bad, total) == expected


def test_no_test_when_no_rate_is_above_the_level() -> None:
    assert Hypotheses.around(1.0, 1.0, alpha=0.01, beta=0.05) is None


def test_one_bad_answer_in_seven_makes_a_suspect_that_shows_its_progress() -> None:
    book, clock = make_book()
    feed(book, clock, "......x")
    view = book.view("a", "m")
    assert view.state == "suspect"
    assert 0.8 <= view.fidelity < 1.0  # not enough to eject, enough to rank it lower
    assert view.evidence_seen == 0
    assert view.evidence_needed > 30
    assert view.reason.startswith(f"suspect (gathering evidence: 0/{view.evidence_needed:.0f})")
    assert book.on_trial("a", "m") == ["repetition"]


def test_clean_evidence_clears_a_suspect_and_forgets_the_suspicion() -> None:
    book, clock = make_book()
    feed(book, clock, "......x")
    needed = book.view("a", "m").evidence_needed
    feed(book, clock, "." * int(needed - 1))
    assert book.view("a", "m").state == "suspect"
    feed(book, clock, ".")
    view = book.view("a", "m")
    assert (view.state, view.fidelity) == ("healthy", 1.0)
    entry = book.audit("a", "m")[-1]
    assert (entry.before, entry.after) == ("suspect", "healthy")
    assert entry.trigger.startswith("trial cleared: looping output 0/")


def test_fresh_loops_convict_a_suspect_and_the_audit_says_why() -> None:
    book, clock = make_book()
    feed(book, clock, "......x")
    feed(book, clock, "..x..x.x")
    assert book.view("a", "m").state == "ejected"
    suspected, ejected = book.audit("a", "m")
    assert (suspected.before, suspected.after) == ("healthy", "suspect")
    assert suspected.trigger.startswith("fidelity 0.")
    assert suspected.signals[0].signal == "repetition"
    assert suspected.signals[0].trial_total == 0
    assert (ejected.before, ejected.after) == ("suspect", "ejected")
    assert ejected.trigger.startswith("trial convicted looping output: 3/8 since suspected")
    record = ejected.as_dict(clock.now)
    signal = record["signals"][0]
    assert signal["trial"] == {"bad": 3.0, "total": 8.0}
    assert (signal["tolerated"], signal["broken"]) == (0.01, 0.2)
    assert signal["ejection_level"] == pytest.approx(0.048)


def test_overwhelming_evidence_ejects_at_once() -> None:
    book, clock = make_book()
    feed(book, clock, "xxxxxx")
    assert book.view("a", "m").state == "ejected"
    (entry,) = book.audit("a", "m")
    assert "certain_below" in entry.trigger


def test_the_audit_is_bounded_and_served_without_a_store() -> None:
    book, clock = make_book(audit_size=3, ejection_base_s=1.0, ejection_max_s=1.0)
    for _ in range(5):
        feed(book, clock, "xxxxxx")
        clock.now += 5
        book.refresh()
    assert len(book.audit("a", "m")) == 3
    book.note_probe("a", "m", "canary: " + "ok " * 200)
    feed(book, clock, "xxxxxx")
    report = quality_report(book, None, now=clock.now)
    (pair,) = report["pairs"]
    assert len(pair["audit"]) == 3
    newest = pair["audit"][-1]
    assert newest["to"] == "ejected"
    assert len(newest["probes"][-1]) <= 160


def test_a_suspect_reports_its_trial_on_the_api() -> None:
    book, clock = make_book()
    feed(book, clock, "......x...")
    (pair,) = quality_report(book, None, now=clock.now)["pairs"]
    assert pair["state"] == "suspect"
    assert pair["evidence"]["seen"] == 3
    assert pair["evidence"]["on_trial"] == ["repetition"]
    assert pair["evidence"]["needed"] > 3


def snapshot(seed: int, views: dict[str, QualityView]) -> Snapshot:
    info = RequestInfo("r", "m", "chat.completions", False, None, 0, seed)
    return Snapshot(info, {}, 0.0, quality=views)


def test_the_scorer_explores_a_suspect_instead_of_ranking_it_out_for_good() -> None:
    scorer = QualityScorer("q", QualityScorer.Params(suspect_explore_share=0.25))
    suspect = QualityView(fidelity=0.88, state="suspect", reason="suspect (…)")
    views = {"s": suspect, "h": QualityView(state="healthy")}
    candidates = [BackendView(n, "emulated", frozenset({"m"}), True, 0, 8) for n in views]
    explored = 0
    for seed in range(1000):
        scores = scorer.score(snapshot(seed, views), candidates)
        if scores["s"].value == 1.0:
            explored += 1
            assert "explored for evidence" in str(scores["s"].reason)
        else:
            assert scores["s"].value < scores["h"].value
    assert explored == pytest.approx(250, abs=50)


def test_a_healthy_backend_scored_below_one_is_no_longer_left_healthy() -> None:
    """The reported starvation: ranked out after one bad answer in seven, the pair stayed
    "healthy" and got no evidence. Now it is a suspect until its trial ends, however
    long it waits for evidence."""
    book, clock = make_book()
    feed(book, clock, "......x")
    for _ in range(600):
        clock.now += 10
        book.refresh()
    view = book.view("a", "m")
    assert view.state == "suspect"
    assert math.isfinite(view.evidence_needed)


def test_the_store_keeps_each_change_with_its_evidence_as_json() -> None:
    book, clock = make_book()
    feed(book, clock, "xxxxxx")
    change = book.changes[-1]
    assert change.evidence is not None
    reason, evidence = stored_reason("looping output 6/6", change.evidence).split("\n")
    assert reason == "looping output 6/6"
    record = orjson.loads(evidence.removeprefix("evidence: "))
    assert (record["from"], record["to"]) == ("healthy", "ejected")
    assert record["signals"][0]["signal"] == "repetition"
    assert stored_reason("no change", None) == "no change"
