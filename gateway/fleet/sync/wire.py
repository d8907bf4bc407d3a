"""The bytes gateway replicas exchange through Redis: prefix-insert batches and load counters.

A batch of prefix inserts is one pub/sub message:

    version (1 byte) | replica id (8 bytes) | record ...
    record = group length (u16) | group (UTF-8) | block count (u32) | block ids (8 bytes each)

Block ids are the fingerprint's 8-byte chained hashes, sent raw: 8 bytes a block where
hex in JSON costs 19. A batch is split so that no message exceeds `MAX_MESSAGE_BYTES`
(except one record larger than that on its own, which goes alone and whole).

A replica's load is a small JSON object, `{backend: [in_flight, queued_prefill_tokens,
decoding]}`, stored under a key that expires.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

import orjson

VERSION = 2
"""2: block ids are xxh3-64 (1: blake2b); replicas of different versions ignore each
other's inserts rather than fill the index with ids that can never match."""
REPLICA_ID_BYTES = 8
BLOCK_ID_BYTES = 8
MAX_MESSAGE_BYTES = 256 * 1024
"""Keeps one PUBLISH (and the receiver's work on one message) small."""

Insert = tuple[str, Sequence[bytes]]
Load = tuple[int, int, int]

_GROUP_LEN = struct.Struct(">H")
_COUNT = struct.Struct(">I")
_HEADER_BYTES = 1 + REPLICA_ID_BYTES


class WireError(ValueError):
    """A message this replica cannot read: another version, truncated, or malformed."""


def distinct(inserts: Iterable[Insert]) -> list[Insert]:
    """Each chain once, at its latest position. A chain's last block id names its whole
    prefix, so (group, last id) identifies an insert; empty inserts are dropped."""
    latest: dict[tuple[str, bytes], Insert] = {}
    for group, blocks in inserts:
        if blocks:
            key = (group, blocks[-1])
            latest.pop(key, None)
            latest[key] = (group, blocks)
    return list(latest.values())


def encode_inserts(replica: bytes, inserts: Iterable[Insert]) -> list[bytes]:
    """Messages carrying `inserts` in order, each at most MAX_MESSAGE_BYTES where possible."""
    header = bytes([VERSION]) + replica
    messages: list[bytes] = []
    parts: list[bytes] = []
    size = len(header)
    for group, blocks in inserts:
        name = group.encode()
        record = b"".join((_GROUP_LEN.pack(len(name)), name, _COUNT.pack(len(blocks)), *blocks))
        if parts and size + len(record) > MAX_MESSAGE_BYTES:
            messages.append(b"".join((header, *parts)))
            parts, size = [], len(header)
        parts.append(record)
        size += len(record)
    if parts:
        messages.append(b"".join((header, *parts)))
    return messages


def sender(data: bytes) -> bytes:
    """The replica id of a prefix batch, read without decoding the rest."""
    if len(data) < _HEADER_BYTES or data[0] != VERSION:
        raise WireError("not a version-1 prefix batch")
    return data[1:_HEADER_BYTES]


def decode_inserts(data: bytes) -> tuple[bytes, list[Insert]]:
    """(replica id, inserts) of one message; WireError when it cannot be read."""
    replica = sender(data)
    inserts: list[Insert] = []
    pos = _HEADER_BYTES
    try:
        while pos < len(data):
            (name_len,) = _GROUP_LEN.unpack_from(data, pos)
            pos += _GROUP_LEN.size
            group = data[pos : pos + name_len].decode()
            pos += name_len
            (count,) = _COUNT.unpack_from(data, pos)
            pos += _COUNT.size
            end = pos + count * BLOCK_ID_BYTES
            if end > len(data):
                raise WireError("truncated record")
            inserts.append(
                (group, [data[i : i + BLOCK_ID_BYTES] for i in range(pos, end, BLOCK_ID_BYTES)])
            )
            pos = end
    except (struct.error, UnicodeDecodeError) as exc:
        raise WireError(f"malformed record: {exc}") from None
    return replica, inserts


def encode_load(load: dict[str, Load]) -> bytes:
    return orjson.dumps({name: [max(0, n) for n in counts] for name, counts in load.items()})


def decode_load(data: bytes) -> dict[str, Load]:
    """A replica's load by backend; WireError unless every value is three counts."""
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise WireError(f"load is not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise WireError("load is not an object")
    load: dict[str, Load] = {}
    for name, counts in raw.items():
        if not (
            isinstance(counts, list)
            and len(counts) == 3
            and all(type(n) is int and n >= 0 for n in counts)
        ):
            raise WireError(f"load of {name!r} is not three non-negative counts")
        load[name] = (counts[0], counts[1], counts[2])
    return load
