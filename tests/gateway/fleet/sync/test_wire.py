"""What replicas exchange: prefix batches round-trip, split at the size cap, reject garbage."""

from __future__ import annotations

import pytest

from gateway.config.root import HealthConfig, StateConfig
from gateway.fleet.state import FleetState
from gateway.fleet.sync.redis_sync import RedisFleetSync
from gateway.fleet.sync.wire import (
    MAX_MESSAGE_BYTES,
    VERSION,
    WireError,
    decode_inserts,
    decode_load,
    distinct,
    encode_inserts,
    encode_load,
    sender,
)
from gateway.prefix.index import CacheSpec, PrefixIndex
from tests.conftest import make_config, parsed

REPLICA = bytes(range(8))


def chain(tag: int, n: int) -> tuple[bytes, ...]:
    return tuple(tag.to_bytes(4, "big") + i.to_bytes(4, "big") for i in range(n))


def test_a_batch_round_trips_in_order() -> None:
    inserts = [("a", chain(1, 3)), ("gpu-pool:shared", chain(2, 1)), ("b", chain(3, 40))]
    (message,) = encode_inserts(REPLICA, inserts)
    assert sender(message) == REPLICA
    replica, decoded = decode_inserts(message)
    assert replica == REPLICA
    assert [(g, tuple(b)) for g, b in decoded] == inserts
    # 8 bytes a block, plus 9 for the header and 6 + the group name per record.
    assert len(message) == 9 + sum(6 + len(g) + 8 * len(b) for g, b in inserts)


def test_a_large_batch_is_split_under_the_cap_and_a_huge_record_goes_alone() -> None:
    per_record = MAX_MESSAGE_BYTES // 10
    inserts = [("a", chain(i, per_record // 8)) for i in range(25)]
    huge = ("b", chain(99, MAX_MESSAGE_BYTES // 8 + 1))
    messages = encode_inserts(REPLICA, [*inserts, huge])
    assert all(len(m) <= MAX_MESSAGE_BYTES for m in messages[:-1])
    assert len(messages[-1]) > MAX_MESSAGE_BYTES
    decoded = [insert for m in messages for insert in decode_inserts(m)[1]]
    assert [(g, tuple(b)) for g, b in decoded] == [*inserts, huge]


def test_nothing_to_send_is_no_message() -> None:
    assert encode_inserts(REPLICA, []) == []


def test_distinct_keeps_each_chain_once_at_its_latest_position() -> None:
    one, two = chain(1, 4), chain(2, 4)
    inserts = [("a", one), ("a", two), ("b", one), ("a", one), ("a", ())]
    assert distinct(inserts) == [("a", two), ("b", one), ("a", one)]


@pytest.mark.parametrize(
    "data",
    [
        b"",
        bytes([VERSION - 1]) + REPLICA,  # an older version (blake2b block ids)
        bytes([VERSION + 1]) + REPLICA,  # a newer one
        encode_inserts(REPLICA, [("a", chain(1, 3))])[0][:-1],  # truncated blocks
        bytes([VERSION]) + REPLICA + b"\x00\x05ab",  # truncated group name
        bytes([VERSION]) + REPLICA + b"\x00\x01\xff\x00\x00\x00\x00",  # group not UTF-8
    ],
)
def test_unreadable_batches_are_wire_errors(data: bytes) -> None:
    with pytest.raises(WireError):
        decode_inserts(data)


def test_load_round_trips_and_negative_counts_are_sent_as_zero() -> None:
    assert decode_load(encode_load({"a": (3, 1200, 2), "b": (-1, 0, 0)})) == {
        "a": (3, 1200, 2),
        "b": (0, 0, 0),
    }


@pytest.mark.parametrize(
    "data",
    [b"not json", b"[1, 2, 3]", b'{"a": [1, 2]}', b'{"a": [1, -2, 3]}', b'{"a": [1, 2.5, 3]}'],
)
def test_unreadable_load_is_a_wire_error(data: bytes) -> None:
    with pytest.raises(WireError):
        decode_load(data)


def test_the_insert_queue_is_bounded_and_keeps_the_newest() -> None:
    config = parsed(make_config({"a": "http://127.0.0.1:9/v1"}))
    state = FleetState(config.backends, HealthConfig())
    index = PrefixIndex({"a": CacheSpec(100_000, 600.0)})
    sync = RedisFleetSync(StateConfig(backend="redis", queue_size=5), state, index)
    for i in range(20):
        sync.enqueue("a", chain(i, 2))
    assert sync.queued() == 5
    assert sync.dropped == 15
    assert sync.status()["queued"] == 5


def test_remote_load_adds_to_what_policies_see_but_not_to_local_counts() -> None:
    config = parsed(make_config({"a": "http://127.0.0.1:9/v1", "b": "http://127.0.0.1:10/v1"}))
    state = FleetState(config.backends, HealthConfig())
    state.acquire("a", uncached_tokens=100)
    state.set_remote({"a": (4, 900, 1), "unknown": (9, 9, 9)})
    view = state.views(["a", "b"])
    assert (view["a"].in_flight, view["a"].queued_prefill_tokens, view["a"].decoding) == (
        5,
        1000,
        1,
    )
    assert view["b"].in_flight == 0
    assert state.local_load()["a"] == (1, 100, 0)
    state.set_remote({})
    assert state.views(["a"])["a"].in_flight == 1
