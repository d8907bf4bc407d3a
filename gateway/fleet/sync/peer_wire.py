"""The JSON batches replicas exchange for shared verdicts (health, quality) and tenants'
service (flow control's fairness), and the checks a receiver makes before it believes one.

One pub/sub message is one batch:

    {"v": 1, "from": "<sender's replica id, hex>", "items": [{...}, ...]}

Every item carries `at`, the Unix time the sender decided it. A receiver ignores an item
whose `at` is further than `state.peer_event_max_age_s` from its own wall clock, either
way (a stale message, or a clock skewed beyond trust), so a believed `until` is off by at
most that much; and it holds a backend out for at most a cap of its own however late the
sender's `until` is: a peer cannot keep a backend out longer than this replica would.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from gateway.fleet.sync.wire import MAX_MESSAGE_BYTES, WireError

PEER_WIRE_VERSION = 1
MAX_ITEMS = 512
"""Items per message: a sender splits larger batches, a receiver refuses larger ones."""
MAX_REASON_CHARS = 200
"""Reasons are cut to this: they come from error codes, but a peer is not trusted."""


def encode_batch(
    replica: str, items: Sequence[dict[str, object]], per_message: int = MAX_ITEMS
) -> list[bytes]:
    """Messages carrying `items`, at most `per_message` (≤ MAX_ITEMS) each: a channel whose
    items may be long sends fewer a message, to stay within MAX_MESSAGE_BYTES."""
    step = max(1, min(per_message, MAX_ITEMS))
    return [
        orjson.dumps({"v": PEER_WIRE_VERSION, "from": replica, "items": items[i : i + step]})
        for i in range(0, len(items), step)
    ]


def decode_batch(data: bytes) -> tuple[str, list[dict[str, Any]]]:
    """(sender, items) of one message; WireError when it is not a batch this replica reads."""
    if len(data) > MAX_MESSAGE_BYTES:
        raise WireError("batch larger than MAX_MESSAGE_BYTES")
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise WireError(f"batch is not JSON: {exc}") from None
    if not isinstance(raw, dict) or raw.get("v") != PEER_WIRE_VERSION:
        raise WireError("not a version-1 batch")
    sender, items = raw.get("from"), raw.get("items")
    if not isinstance(sender, str) or not isinstance(items, list) or len(items) > MAX_ITEMS:
        raise WireError("batch without a sender or with too many items")
    if not all(isinstance(item, dict) for item in items):
        raise WireError("an item is not an object")
    return sender, items


def apply_batch(
    data: bytes,
    replica: str,
    now_unix: float,
    apply_item: Callable[[dict[str, Any], str, float], None],
) -> int:
    """Hand each item of a peer's batch to `apply_item(item, sender, now_unix)`; this
    replica's own batch (pub/sub echoes it) is skipped. Returns how many were rejected: a
    batch that does not decode counts once, an item `apply_item` refuses (`WireError`) once."""
    try:
        sender, items = decode_batch(data)
    except WireError:
        return 1
    if sender == replica:
        return 0
    rejected = 0
    for item in items:
        try:
            apply_item(item, sender, now_unix)
        except WireError:
            rejected += 1
    return rejected


def text(item: dict[str, Any], key: str) -> str:
    value = item.get(key)
    if not isinstance(value, str):
        raise WireError(f"{key} is not a string")
    return value[:MAX_REASON_CHARS]


def seconds(item: dict[str, Any], key: str) -> float:
    return number(item, key)


def number(item: dict[str, Any], key: str, low: float = -math.inf, high: float = math.inf) -> float:
    """`item[key]`, a finite number within [low, high]; WireError otherwise."""
    value = item.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise WireError(f"{key} is not a finite number")
    if not low <= value <= high:
        raise WireError(f"{key} is not within [{low:g}, {high:g}]")
    return float(value)


def fresh(at_unix: float, now_unix: float, max_age_s: float) -> bool:
    """Whether an item decided at `at_unix` may be believed at `now_unix`."""
    return abs(now_unix - at_unix) <= max_age_s


def hold_s(until_unix: float, now_unix: float, cap_s: float) -> float:
    """How long to keep a backend out for a peer's `until_unix`: at most `cap_s`; zero or
    less when it has already ended."""
    return min(until_unix - now_unix, cap_s)
