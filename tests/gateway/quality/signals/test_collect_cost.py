"""The collector's tap stays far cheaper than parsing each chunk on the relay path.

Relative, not absolute: both sides are timed in the same run (best of several rounds),
so a slow or busy machine slows both alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import orjson

from gateway.quality.signals.collect import CollectBounds, StreamCollector
from tests.gateway.quality.streams import text_stream

CHUNKS = text_stream([f"token{i} " for i in range(2000)])
ROUNDS = 9


def best_time(run: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def feed_all() -> StreamCollector:
    collector = StreamCollector(CollectBounds(max_bytes=1024 * 1024))
    for chunk in CHUNKS:
        collector.feed(chunk)
    return collector


def parse_each() -> None:
    """The baseline the tap avoids: decoding every event as it passes."""
    for chunk in CHUNKS:
        data = chunk[6:].strip()
        if data != b"[DONE]":
            orjson.loads(data)


def test_feed_is_much_cheaper_than_parsing_each_chunk() -> None:
    feed, parse = best_time(feed_all), best_time(parse_each)
    assert feed * 3 <= parse, f"feed {feed * 1e6:.0f} us vs per-chunk parse {parse * 1e6:.0f} us"
    # And the single parse at the end still sees everything.
    result = feed_all().finish()
    assert result.completion_tokens == 2000 and result.content.endswith("token1999 ")
