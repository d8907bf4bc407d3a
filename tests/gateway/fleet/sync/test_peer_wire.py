"""The JSON batches of peer verdicts: what a receiver refuses to read, and how a sender
splits a large batch."""

from __future__ import annotations

import orjson
import pytest

from gateway.fleet.sync.peer_wire import MAX_ITEMS, decode_batch, encode_batch
from gateway.fleet.sync.wire import WireError


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b"[1, 2]",
        orjson.dumps({"v": 2, "from": "r1", "items": []}),
        orjson.dumps({"v": 1, "items": []}),
        orjson.dumps({"v": 1, "from": "r1", "items": [1]}),
        orjson.dumps({"v": 1, "from": "r1", "items": [{}] * (MAX_ITEMS + 1)}),
    ],
)
def test_unreadable_batches_raise_wire_errors(data: bytes) -> None:
    with pytest.raises(WireError):
        decode_batch(data)


def test_large_batches_are_split() -> None:
    items: list[dict[str, object]] = [{"n": i} for i in range(MAX_ITEMS * 2 + 1)]
    messages = encode_batch("r1", items)
    assert [len(decode_batch(m)[1]) for m in messages] == [MAX_ITEMS, MAX_ITEMS, 1]
    assert all(decode_batch(m)[0] == "r1" for m in messages)
