"""Tenants' service shared between replicas, without Redis: one replica's `take()` handed to
another's `apply()`, each replica with flow control's `Admission` and its ledger, its own
monotonic clock (apart from the other's on purpose) and a wall clock the test moves."""

from __future__ import annotations

import math
from typing import Any

import orjson
import pytest

from gateway.admission.config import FlowControlConfig
from gateway.admission.controller import Admission
from gateway.config.root import parse_config
from gateway.fleet.state import FleetState
from gateway.fleet.sync.peer_wire import MAX_ITEMS, decode_batch, encode_batch
from gateway.fleet.sync.tenant_share import MAX_TENANT_CHARS, MAX_TOKENS, TenantShare
from gateway.fleet.sync.wire import MAX_MESSAGE_BYTES
from tests.conftest import make_config
from tests.gateway.fleet.sync.peers import MAX_AGE_S, WALL, Clock, send

HALF_LIFE_S = 60.0


class Replica:
    """One replica's flow control and tenants channel; its monotonic clock starts elsewhere."""

    def __init__(
        self, replica_id: str, mono_start: float, wall: Clock, max_pending: int = 100
    ) -> None:
        config = parse_config(make_config({"a": "http://127.0.0.1:9/v1"}))
        flow = FlowControlConfig.model_validate(
            {"enabled": True, "tenants": {"half_life_s": HALF_LIFE_S}}
        )
        self.id = replica_id
        self.wall = wall
        self.mono = Clock(mono_start)
        state = FleetState(config.backends, config.health)
        self.admission = Admission(flow, state, clock=self.mono)
        self.share = TenantShare(
            self.admission,
            half_life_s=HALF_LIFE_S,
            max_pending=max_pending,
            max_age_s=MAX_AGE_S,
            wall=wall,
        )
        self.share.attach()

    def charge(self, tenant: str, tokens: float) -> None:
        """A charge made here now, as flow control makes one when a request goes."""
        self.admission.ledger.charge(tenant, tokens, self.mono.now)

    def service(self, *tenants: str) -> dict[str, float]:
        return dict(self.admission.ledger.weighted(tenants, self.mono.now))

    def wait(self, seconds: float) -> None:
        self.mono.now += seconds
        self.wall.now += seconds


def decayed(tokens: float, seconds: float) -> float:
    return tokens * 0.5 ** (seconds / HALF_LIFE_S)


def items(messages: list[bytes]) -> list[dict[str, Any]]:
    return [item for message in messages for item in decode_batch(message)[1]]


@pytest.fixture
def wall() -> Clock:
    return Clock(WALL)


def test_a_charge_counts_in_the_peer_as_if_charged_there_when_it_was_made(wall: Clock) -> None:
    one, two = Replica("r1", 100.0, wall), Replica("r2", 5_000.0, wall)
    one.charge("A", 1_000)
    one.wait(3.0)  # published a little late: the peer decays it by its age
    two.mono.now += 3.0
    send(one, two)
    assert two.service("A")["A"] == pytest.approx(decayed(1_000, 3.0))
    assert two.service("A") == pytest.approx(one.service("A"))
    assert (one.share.published, two.share.applied) == (1, 1)
    two.wait(60.0)
    assert two.service("A")["A"] == pytest.approx(decayed(1_000, 63.0))


def test_charges_between_ticks_go_as_one_item_per_tenant_worth_their_decayed_sum(
    wall: Clock,
) -> None:
    one, two = Replica("r1", 0.0, wall), Replica("r2", 0.0, wall)
    one.charge("A", 100)
    one.wait(6.0)
    one.charge("A", 200)
    one.admission.charge_answer("B", 10)  # output tokens at output_weight (2) each
    sent = items(one.share.take(one.id))
    assert sorted(sent, key=lambda i: i["tenant"]) == [
        {"tenant": "A", "tokens": pytest.approx(decayed(100, 6.0) + 200), "at": WALL + 6.0},
        {"tenant": "B", "tokens": 20.0, "at": WALL + 6.0},
    ]
    two.mono.now += 6.0  # the wall clock is shared: both replicas are 6 s on
    for message in encode_batch(one.id, sent):
        two.share.apply(message, two.id)
    assert two.service("A", "B") == pytest.approx(one.service("A", "B"))


def test_a_wall_clock_stepping_back_keeps_the_later_time(wall: Clock) -> None:
    one = Replica("r1", 0.0, wall)
    one.charge("A", 100)
    wall.now -= 6.0
    one.charge("A", 100)
    [item] = items(one.share.take(one.id))
    assert item == {"tenant": "A", "tokens": pytest.approx(100 + decayed(100, 6.0)), "at": WALL}


def test_pending_tenants_are_bounded_and_a_further_ones_charges_are_dropped(
    wall: Clock,
) -> None:
    one = Replica("r1", 0.0, wall, max_pending=2)
    for tenant in ["A", "B", "C", "A", "C"]:
        one.charge(tenant, 10)
    assert one.share.status()["queued"] == 2
    assert one.share.dropped == 2
    sent = items(one.share.take(one.id))
    assert {(i["tenant"], i["tokens"]) for i in sent} == {("A", 20.0), ("B", 10.0)}
    assert one.share.status()["queued"] == 0
    one.charge("C", 10)  # taken: room again
    assert [i["tenant"] for i in items(one.share.take(one.id))] == ["C"]


def test_what_waited_longer_than_max_age_or_names_too_long_a_tenant_is_not_sent(
    wall: Clock,
) -> None:
    one = Replica("r1", 0.0, wall)
    one.charge("A", 10)
    one.charge("x" * (MAX_TENANT_CHARS + 1), 10)
    one.wait(MAX_AGE_S + 1)  # e.g. Redis was down
    one.charge("B", 10)
    assert [i["tenant"] for i in items(one.share.take(one.id))] == ["B"]
    assert (one.share.published, one.share.dropped) == (1, 2)


def test_a_peers_charges_are_not_published_again_nor_its_own_echo_applied(wall: Clock) -> None:
    one, two = Replica("r1", 0.0, wall), Replica("r2", 0.0, wall)
    one.charge("A", 10)
    messages = send(one, two)
    assert two.share.take(two.id) == []
    for message in messages:  # pub/sub hands a replica its own messages too
        one.share.apply(message, one.id)
    assert one.service("A")["A"] == pytest.approx(10)
    assert (one.share.applied, one.share.rejected) == (0, 0)


@pytest.mark.parametrize(
    ("skew_s", "applied"),
    [
        pytest.param(-11.0, False, id="older-than-max-age"),
        pytest.param(11.0, False, id="from-further-ahead-than-max-age"),
        pytest.param(-9.0, True, id="late-but-within-max-age"),
        pytest.param(9.0, True, id="ahead-but-within-max-age"),
    ],
)
def test_stale_or_skewed_charges_are_ignored(skew_s: float, applied: bool) -> None:
    one = Replica("r1", 0.0, Clock(WALL))
    two = Replica("r2", 0.0, Clock(WALL - skew_s))  # r1's charge is skew_s ahead of r2's clock
    one.charge("A", 1_000)
    send(one, two)
    expected = decayed(1_000, max(0.0, -skew_s)) if applied else 0.0
    assert two.service("A")["A"] == pytest.approx(expected)
    assert (two.share.stale, two.share.applied) == ((0, 1) if applied else (1, 0))


@pytest.mark.parametrize(
    "item",
    [
        pytest.param({"tokens": 5, "at": WALL}, id="no-tenant"),
        pytest.param({"tenant": 7, "tokens": 5, "at": WALL}, id="tenant-not-a-string"),
        pytest.param({"tenant": "", "tokens": 5, "at": WALL}, id="tenant-empty"),
        pytest.param(
            {"tenant": "x" * (MAX_TENANT_CHARS + 1), "tokens": 5, "at": WALL}, id="tenant-too-long"
        ),
        pytest.param({"tenant": "a\nb", "tokens": 5, "at": WALL}, id="tenant-unprintable"),
        pytest.param({"tenant": "A", "at": WALL}, id="no-tokens"),
        pytest.param({"tenant": "A", "tokens": "lots", "at": WALL}, id="tokens-a-string"),
        pytest.param({"tenant": "A", "tokens": True, "at": WALL}, id="tokens-a-boolean"),
        pytest.param({"tenant": "A", "tokens": -1, "at": WALL}, id="tokens-negative"),
        pytest.param({"tenant": "A", "tokens": MAX_TOKENS * 10, "at": WALL}, id="tokens-too-many"),
        pytest.param({"tenant": "A", "tokens": 5}, id="no-at"),
        pytest.param({"tenant": "A", "tokens": 5, "at": "now"}, id="at-a-string"),
    ],
)
def test_malformed_items_are_rejected_one_by_one(wall: Clock, item: dict[str, Any]) -> None:
    two = Replica("r2", 0.0, wall)
    good = {"tenant": "B", "tokens": 50, "at": WALL}
    two.share.apply(encode_batch("r1", [item, good])[0], two.id)
    assert two.service("A", "B") == {"A": 0.0, "B": pytest.approx(50)}
    assert (two.share.rejected, two.share.applied, two.share.stale) == (1, 1, 0)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"not json", id="not-json"),
        pytest.param(b'{"v":1,"from":"r1","items":[{"tenant":"A","tokens":NaN}]}', id="nan"),
        pytest.param(b"x" * (MAX_MESSAGE_BYTES + 1), id="larger-than-max-message-bytes"),
        pytest.param(
            orjson.dumps(
                {"v": 1, "from": "r1", "items": [{"tenant": "A", "tokens": 1, "at": WALL}] * 600}
            ),
            id="more-than-max-items",
        ),
        pytest.param(orjson.dumps({"v": 2, "from": "r1", "items": []}), id="another-version"),
    ],
)
def test_an_unreadable_or_oversized_batch_counts_once_and_changes_nothing(
    wall: Clock, data: bytes
) -> None:
    two = Replica("r2", 0.0, wall)
    two.share.apply(data, two.id)
    assert (two.share.rejected, two.share.applied) == (1, 0)
    assert two.service("A") == {"A": 0.0}
    assert len(two.admission.ledger) == 0


def test_many_long_tenants_are_split_into_messages_a_peer_reads(wall: Clock) -> None:
    one, two = Replica("r1", 0.0, wall, max_pending=1_000), Replica("r2", 0.0, wall)
    # 4 bytes of UTF-8 a character: at MAX_ITEMS a message, a batch would be too large.
    tenants = [f"{i:04d}" + "\N{GRINNING FACE}" * (MAX_TENANT_CHARS - 4) for i in range(1_000)]
    for tenant in tenants:
        one.charge(tenant, 1)
    messages = send(one, two)
    assert len(messages) > 1
    assert all(len(m) <= MAX_MESSAGE_BYTES for m in messages)
    assert all(len(decode_batch(m)[1]) <= MAX_ITEMS for m in messages)
    assert (two.share.applied, two.share.rejected) == (1_000, 0)


def test_detached_the_channel_hears_nothing(wall: Clock) -> None:
    one = Replica("r1", 0.0, wall)
    one.share.detach()
    one.charge("A", 10)
    assert one.share.take(one.id) == []
    assert one.admission.ledger.on_charge is None


def test_nothing_is_restated(wall: Clock) -> None:
    one = Replica("r1", 0.0, wall)
    one.charge("A", 10)
    one.share.take(one.id)
    one.share.reassert()
    assert one.share.take(one.id) == []


def test_the_status_counts_each_outcome(wall: Clock) -> None:
    one, two = Replica("r1", 0.0, wall), Replica("r2", 0.0, wall, max_pending=1)
    one.charge("A", 10)
    send(one, two)
    stale = {"tenant": "A", "tokens": 1, "at": WALL - 60}
    two.share.apply(encode_batch("r1", [stale, {"tenant": "A"}])[0], two.id)
    two.charge("B", 1)
    two.charge("C", 1)
    assert two.share.status() == {
        "queued": 1,
        "published": 0,
        "applied": 1,
        "stale": 1,
        "rejected": 1,
        "dropped": 1,
    }
    assert not math.isnan(two.service("A")["A"])
