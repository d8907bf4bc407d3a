"""A decision record compacted once recorded: its explanation kept as JSON bytes, the
decision itself kept whole apart from its candidates' reports and plugin timings."""

from __future__ import annotations

from dataclasses import replace

import orjson

from gateway.prefix.work import PromptWork
from gateway.routing.decisions import DecisionRecord, FallbackLeg
from tests.gateway.telemetry.builders import decision


def test_compaction_keeps_every_field_but_the_reports_and_the_explanation_unchanged() -> None:
    first = replace(decision("a", {"a": {"load": 0.5}}), timings_us={"load": 3.0})
    fallback = replace(decision("b", {"b": {"load": 1.0}}), id="e" * 16, route="spare")
    held = DecisionRecord(first, work=PromptWork(cached_tokens={"a": 7}))
    held.fallbacks.append(FallbackLeg(fallback, PromptWork(cached_tokens={"b": 2})))
    explained = held.to_dict()
    held.compact()
    assert held.decision == replace(first, candidates=(), timings_us={})
    assert held.fallbacks[0].decision == replace(fallback, candidates=(), timings_us={})
    assert (held.work.cached_tokens, held.fallbacks[0].work.cached_tokens) == ({"a": 7}, {"b": 2})
    assert held.to_dict() == explained == orjson.loads(held.rendered())
    assert [c["backend"] for c in explained["candidates"]] == ["a"]
