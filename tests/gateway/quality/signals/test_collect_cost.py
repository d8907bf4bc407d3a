"""The collector's tap parses nothing as chunks pass: it keeps the bytes, and the stream is
decoded at its end, in a few calls rather than one per chunk.

(A behaviour check of the design that keeps it cheap; what inspecting responses costs per
request is measured by bench/studies/quality_overhead.py.)
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.quality.signals import collect, response_assembly, stream_template
from gateway.quality.signals.collect import CollectBounds, StreamCollector
from tests.gateway.quality.streams import text_stream

CHUNKS = text_stream([f"token{i} " for i in range(2000)])


class CountingJson:
    """orjson, counting the documents decoded."""

    JSONDecodeError = orjson.JSONDecodeError

    def __init__(self) -> None:
        self.loads_calls = 0

    def loads(self, data: Any) -> Any:
        self.loads_calls += 1
        return orjson.loads(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(orjson, name)


def test_feed_parses_nothing_and_finish_parses_the_stream_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counting = CountingJson()
    for module in (collect, stream_template, response_assembly):
        monkeypatch.setattr(module, "orjson", counting)
    collector = StreamCollector(CollectBounds(max_bytes=1024 * 1024))
    for chunk in CHUNKS:
        collector.feed(chunk)
    assert counting.loads_calls == 0
    result = collector.finish()
    # A few calls for the whole stream (a template, its texts at once), not one per chunk.
    assert 0 < counting.loads_calls < 10
    assert result.completion_tokens == 2000 and result.content.endswith("token1999 ")
