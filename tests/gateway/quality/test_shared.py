"""Quality verdicts shared between replicas, without Redis: one book's changes taken by its
`QualityShare` and applied by another's. Each book has its own monotonic clock. What every
channel of verdicts does alike (freshness, the queue, malformed batches) is tested once,
in tests/gateway/fleet/sync/test_verdict_channel.py."""

from __future__ import annotations

import random

import pytest

from gateway.fleet.sync.peer_wire import decode_batch, encode_batch
from gateway.quality.book.quality_book import QualityBook
from gateway.quality.config import QualityConfig
from gateway.quality.shared import QualityShare
from gateway.quality.signals.observation import SignalEvent
from tests.gateway.fleet.sync.peers import MAX_AGE_S, WALL, Clock, send


class Replica:
    def __init__(self, replica_id: str, mono_start: float, wall: Clock) -> None:
        self.id = replica_id
        self.mono = Clock(mono_start)
        self.wall = wall
        config = QualityConfig.model_validate({"ejection_jitter": 0.0, "ejection_base_s": 30.0})
        self.book = QualityBook(config, clock=self.mono, rng=random.Random(1))
        self.share = QualityShare(self.book, ["a", "b"], MAX_AGE_S, wall=wall)
        self.share.attach()

    def record(self, bad: bool, times: int = 6) -> None:
        for _ in range(times):
            self.mono.now += 1
            detail = "detail" if bad else ""
            self.book.record("a", "m", [SignalEvent("repetition", bad, "fidelity", detail)])

    def wait(self, seconds: float) -> None:
        self.mono.now += seconds
        self.book.refresh()


@pytest.fixture
def wall() -> Clock:
    return Clock(WALL)


def eject(one: Replica) -> None:
    one.record(True, times=20)
    assert one.book.view("a", "m").state == "ejected"


def test_an_ejection_holds_in_the_peer_with_the_senders_reason(wall: Clock) -> None:
    one, two = Replica("r1", 100.0, wall), Replica("r2", 9_000.0, wall)
    eject(one)
    send(one, two)
    view = two.book.view("a", "m")
    assert view.state == "ejected"
    assert view.ejected_for_s == pytest.approx(one.book.view("a", "m").ejected_for_s)
    assert view.reason.startswith("ejected by replica r1: looping output")
    two.book.refresh()  # the peer's reason stays while its ejection lasts
    assert two.book.view("a", "m").reason.startswith("ejected by replica r1")
    assert two.share.take(two.id) == [], "a peer's verdict is not published again"
    assert two.share.applied == 1


def test_a_restore_from_probation_ends_the_peers_probation(wall: Clock) -> None:
    one, two = Replica("r1", 0.0, wall), Replica("r2", 0.0, wall)
    for replica in (one, two):  # each with evidence of its own: its probation waits for more
        eject(replica)
        send(replica)
    for replica in (one, two):
        replica.wait(31)
        assert replica.book.view("a", "m").state == "probation"
    one.record(False, times=12)
    assert one.book.view("a", "m").state == "healthy"
    send(one, two)
    assert two.book.view("a", "m").state == "healthy"


def test_sitting_out_a_peers_ejection_restores_nothing_for_the_others(wall: Clock) -> None:
    one, two = Replica("r1", 0.0, wall), Replica("r2", 0.0, wall)
    eject(one)
    send(one, two)
    for _ in range(3):
        two.wait(31)
    assert two.book.view("a", "m").state != "ejected"
    assert two.share.take(two.id) == [], "no evidence of its own: nothing to tell"


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"backend": "zz"}, id="unknown-backend"),
        pytest.param({"state": "probation"}, id="a-state-not-shared"),
        pytest.param({"model": 7}, id="model-not-a-string"),
        pytest.param({"until": "later"}, id="until-not-a-number"),
    ],
)
def test_verdicts_this_replica_cannot_apply_are_rejected(
    wall: Clock, change: dict[str, object]
) -> None:
    two = Replica("r2", 0.0, wall)
    item = {"backend": "a", "model": "m", "state": "ejected", "until": WALL + 60, "at": WALL}
    two.share.apply(encode_batch("r1", [{**item, "why": "x", **change}])[0], "r2")
    assert two.book.view("a", "m").state == "unknown"
    assert (two.share.rejected, two.share.applied) == (1, 0)


def test_a_peers_ejection_is_capped_at_this_replicas_longest(wall: Clock) -> None:
    two = Replica("r2", 0.0, wall)
    item = {"backend": "a", "model": "m", "state": "ejected", "until": WALL + 1e7, "at": WALL}
    two.share.apply(encode_batch("r1", [{**item, "why": "x"}])[0], "r2")
    cap = two.book.config.ejection_max_s * (1 + two.book.config.ejection_jitter)
    assert two.book.view("a", "m").ejected_for_s == pytest.approx(cap)


def test_a_longer_ejection_extends_and_a_shorter_one_changes_nothing(wall: Clock) -> None:
    two = Replica("r2", 0.0, wall)
    item = {"backend": "a", "model": "m", "state": "ejected", "at": WALL, "why": "x"}
    for until in (WALL + 60, WALL + 30, WALL + 90):
        two.share.apply(encode_batch("r1", [{**item, "until": until}])[0], "r2")
    assert two.book.view("a", "m").ejected_for_s == pytest.approx(90.0)
    assert two.share.applied == 2


def test_what_is_published(wall: Clock) -> None:
    one = Replica("r1", 0.0, wall)
    eject(one)
    (message,) = one.share.take(one.id)
    sender, items = decode_batch(message)
    assert sender == "r1"
    (item,) = items
    assert (item["backend"], item["model"], item["state"]) == ("a", "m", "ejected")
    assert item["until"] == pytest.approx(wall.now + one.book.view("a", "m").ejected_for_s)
    assert item["why"].startswith("looping output")


def test_own_ejections_are_restated_and_a_peers_are_not(wall: Clock) -> None:
    one, two = Replica("r1", 0.0, wall), Replica("r2", 0.0, wall)
    eject(one)
    send(one, two)
    one.share.reassert()
    two.share.reassert()
    assert two.share.take(two.id) == []
    (message,) = one.share.take(one.id)
    late = Replica("r3", 50.0, wall)
    late.share.apply(message, late.id)
    assert late.book.view("a", "m").state == "ejected"


def test_a_channel_that_detaches_gives_the_book_back_to_the_one_before(wall: Clock) -> None:
    one = Replica("r1", 0.0, wall)
    failed = QualityShare(one.book, ["a", "b"], MAX_AGE_S, wall=wall)
    failed.attach()  # a reload's next generation, which then fails to start
    failed.detach()
    eject(one)
    assert one.share.take(one.id), "the running generation's channel hears the book again"
    one.share.detach()
    assert one.book.on_change is None, "put back as the running channel found it"
