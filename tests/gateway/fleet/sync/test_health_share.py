"""Health verdicts shared between replicas, without Redis: one replica's `take()` handed to
another's `apply()`, with clocks the test moves (monotonic and wall, apart on purpose).
What every channel of verdicts does alike (freshness, the queue, malformed batches) is
tested once, in test_verdict_channel.py."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.config.root import parse_config
from gateway.fleet.state import FleetState
from gateway.fleet.sync.health_share import HealthShare, hold_caps
from gateway.fleet.sync.peer_wire import decode_batch, encode_batch
from tests.conftest import make_config
from tests.gateway.fleet.sync.peers import MAX_AGE_S, WALL, Clock, send


class Replica:
    """One replica's FleetState and health channel; its monotonic clock starts elsewhere."""

    def __init__(self, replica_id: str, mono_start: float, wall: Clock, **health: Any) -> None:
        health = {"active_probes": False, "consecutive_failures": 1, **health}
        config = parse_config(
            make_config(
                {"a": "http://127.0.0.1:9/v1", "b": "http://127.0.0.1:9/v1"},
                health=health,
            )
        )
        self.id = replica_id
        self.mono = Clock(mono_start)
        self.state = FleetState(config.backends, config.health, clock=self.mono, wall=wall)
        self.caps = caps = hold_caps(config.backends, config.health)
        self.share = HealthShare(self.state, caps, MAX_AGE_S, wall=wall)
        self.share.attach()

    def health(self, name: str = "a") -> tuple[bool, str]:
        view = self.state.views([name])[name]
        return view.healthy, view.health_reason


@pytest.fixture
def wall() -> Clock:
    return Clock(WALL)


def test_an_ejection_holds_in_the_peer_until_the_same_wall_clock_time(wall: Clock) -> None:
    one, two = Replica("r1", 100.0, wall), Replica("r2", 5_000.0, wall)
    one.state.record_failure("a", "HTTP 503")
    assert not one.health()[0]
    send(one, two)
    healthy, reason = two.health()
    assert not healthy
    assert reason.startswith("ejected after 1 consecutive failures (HTTP 503) (replica r1)")
    assert two.health("b") == (True, "healthy")
    assert two.share.applied == 1
    # It ends when r1's does: at the same wall-clock time, whatever the monotonic clocks.
    left_one = one.state._health.of("a").ejected_until - one.mono.now
    left_two = two.state._health.of("a").ejected_until - two.mono.now
    assert left_two == pytest.approx(left_one)


def test_a_429_cool_down_propagates_and_applying_it_again_changes_nothing(wall: Clock) -> None:
    one, two = Replica("r1", 100.0, wall), Replica("r2", 7.0, wall)
    one.state.rate_limited("a", 30.0, None)
    messages = send(one, two)
    healthy, reason = two.health()
    assert not healthy and "rate limited upstream: Retry-After 30.0 s (replica r1)" in reason
    assert two.state._health.of("a").ejected_until == pytest.approx(two.mono.now + 30.0)
    for message in messages:  # a duplicate (or a message that crossed another): no change
        two.share.apply(message, two.id)
    assert two.share.applied == 1
    wall.now += 30.5
    two.mono.now += 30.5
    assert two.health() == (True, "healthy")


def test_crossing_ejections_settle_on_the_later_end_in_both(wall: Clock) -> None:
    one, two = Replica("r1", 100.0, wall), Replica("r2", 900.0, wall)
    one.state.rate_limited("a", 10.0, None)
    two.state.rate_limited("a", 20.0, None)
    from_one, from_two = one.share.take(one.id), two.share.take(two.id)
    for message in from_two:
        one.share.apply(message, one.id)
    for message in from_one:
        two.share.apply(message, two.id)
    assert one.state._health.of("a").ejected_until == pytest.approx(one.mono.now + 20.0)
    assert two.state._health.of("a").ejected_until == pytest.approx(two.mono.now + 20.0)
    assert (one.share.applied, two.share.applied) == (1, 0)


def test_applying_a_peers_verdict_is_not_published_again(wall: Clock) -> None:
    one, two = Replica("r1", 0.0, wall), Replica("r2", 0.0, wall)
    one.state.record_failure("a", "timeout")
    send(one, two)
    assert two.share.take(two.id) == []


def test_a_peers_hold_is_capped_at_what_this_replica_would_hold(wall: Clock) -> None:
    two = Replica("r2", 0.0, wall, ejection_max_s=1000.0, probe_interval_s=1.0)
    cap = two.caps["a"]
    assert cap == pytest.approx(1200.0)  # ejection_max_s with jitter, over max_cool_down_s
    item = {"backend": "a", "kind": "ejected", "until": WALL + 86_400, "at": WALL, "why": "x"}
    two.share.apply(encode_batch("r1", [item])[0], "r2")
    assert two.state._health.of("a").ejected_until == pytest.approx(cap)


def test_probe_results_propagate_and_an_older_one_never_wins(wall: Clock) -> None:
    one, two = Replica("r1", 0.0, wall), Replica("r2", 0.0, wall)
    one.state.record_probe("a", False, "probe got HTTP 503")
    old = one.share.take(one.id)
    wall.now += 1
    one.state.record_probe("a", True, "probe ok (HTTP 200)")
    new = one.share.take(one.id)
    for message in new + old:  # the older arrives last
        two.share.apply(message, two.id)
    assert two.health() == (True, "healthy")
    assert two.state._health.of("a").probe_reason == "probe ok (HTTP 200)"
    wall.now += 1
    two.state.record_probe("a", False, "probe failed here")  # this replica's own, later
    for message in new:
        two.share.apply(message, two.id)
    assert two.health() == (False, "probe failed here")


def test_the_queue_keeps_the_latest_verdict_per_backend_and_kind(wall: Clock) -> None:
    one = Replica("r1", 0.0, wall)
    for seconds in (5.0, 7.0, 9.0):
        one.state.rate_limited("a", seconds, None)  # only longer ones are verdicts
    for ok in (True, False, True):
        one.state.record_probe("b", ok, "probe")
    assert one.share.status()["queued"] == 2
    _, items = decode_batch(one.share.take(one.id)[0])
    assert sorted((i["backend"], i["kind"]) for i in items) == [("a", "cooled"), ("b", "probe")]
    assert next(i for i in items if i["kind"] == "cooled")["until"] == pytest.approx(WALL + 9.0)


@pytest.mark.parametrize(
    "item",
    [
        {"backend": "zz", "kind": "ejected", "until": WALL + 5, "at": WALL, "why": "x"},
        {"backend": "a", "kind": "exploded", "until": WALL + 5, "at": WALL, "why": "x"},
        {"backend": "a", "kind": "ejected", "until": "soon", "at": WALL, "why": "x"},
        {"backend": "a", "kind": "probe", "ok": "no", "at": WALL, "why": "x"},
    ],
)
def test_malformed_items_are_rejected_one_by_one(wall: Clock, item: dict[str, Any]) -> None:
    two = Replica("r2", 0.0, wall)
    good = {"backend": "b", "kind": "cooled", "until": WALL + 5, "at": WALL, "why": "x"}
    two.share.apply(encode_batch("r1", [item, good])[0], "r2")
    assert two.share.rejected == 1
    assert two.health() == (True, "healthy")
    assert not two.health("b")[0]


def test_own_holds_are_restated_for_a_late_peer_with_their_original_end(wall: Clock) -> None:
    one = Replica("r1", 0.0, wall)
    one.state.rate_limited("a", 30.0, None)
    one.state.record_failure("b", "timeout")
    one.share.take(one.id)  # published before the peer was there
    wall.now += 5
    one.mono.now += 5
    late = Replica("r2", 777.0, wall)
    one.share.reassert()
    send(one, late)
    assert not late.health("a")[0] and not late.health("b")[0]
    left = late.state._health.of("a").ejected_until - late.mono.now
    assert left == pytest.approx(25.0)
    # A peer's holds are its to restate: the late replica restates none of them.
    late.share.reassert()
    assert late.share.take(late.id) == []


def test_a_peers_ejection_is_not_a_cool_down_here_and_its_cool_down_is(wall: Clock) -> None:
    one, two = Replica("r1", 0.0, wall), Replica("r2", 0.0, wall)
    one.state.record_failure("a", "timeout")
    one.state.rate_limited("b", 30.0, None)
    send(one, two)
    # Only a cool-down is waited out (or answered 429) when every candidate is out.
    assert two.state.cool_down_left_s("a") is None
    assert two.state.cool_down_left_s("b") == pytest.approx(30.0)


def test_detached_the_channel_hears_nothing(wall: Clock) -> None:
    one = Replica("r1", 0.0, wall)
    one.share.detach()
    one.state.rate_limited("a", 30.0, None)
    assert one.share.take(one.id) == []
