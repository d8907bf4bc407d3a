from __future__ import annotations

import json

import pytest

from policies.config import PluginRef, ProfileConfig
from policies.describe import describe_decision
from policies.profiles import build_pipeline
from policies.snapshot import BackendView
from tests.policies.builders import backend, snapshot

PIPE = build_pipeline(
    ProfileConfig(
        name="p",
        plugins=[
            PluginRef(ref="healthy-filter"),
            PluginRef(ref="capacity-filter"),
            PluginRef(ref="least-load-scorer", weight=2),
            PluginRef(ref="session-affinity-scorer"),
        ],
    ),
    [],
    profile_index=0,
)


@pytest.mark.parametrize(
    "candidates",
    [
        [backend("a", in_flight=2), backend("b", in_flight=64), backend("c")],
        [backend("a", healthy=False, health_reason="probe failed"), backend("b")],
        [backend("a", in_flight=64)],
        [],
    ],
)
def test_round_trips_through_json(candidates: list[BackendView]) -> None:
    decision = PIPE.decide(snapshot(candidates, session_key="user-42"), candidates, "dec-1")
    described = describe_decision(decision)
    assert json.loads(json.dumps(described)) == described
    assert described["chosen"] == decision.chosen
    assert described["order"] == list(decision.order)
    assert [c["backend"] for c in described["candidates"]] == [b.name for b in candidates]


def test_renders_scores_verdicts_and_drops() -> None:
    candidates = [backend("a", in_flight=2), backend("b", in_flight=64)]
    described = describe_decision(PIPE.decide(snapshot(candidates), candidates, "dec-2"))
    a, b = described["candidates"]
    assert a["scores"]["least-load-scorer"] == {"score": 1.0, "reason": "2 in flight of 64"}
    assert a["scores"]["session-affinity-scorer"] == {"score": 0.5, "reason": "no session key"}
    assert a["verdicts"]["healthy-filter"] == {"keep": True, "reason": "healthy"}
    assert (b["dropped_by"], b["drop_reason"]) == (
        "capacity-filter",
        "at capacity: 64 of 64 in flight",
    )
    assert described["picker"] == "max-score-picker"
    assert described["picker_reason"] == "only candidate, score 0.83"
    assert set(described["timings_us"]) == {
        "healthy-filter",
        "capacity-filter",
        "least-load-scorer",
        "session-affinity-scorer",
        "max-score-picker",
    }
    assert set(described) == {
        "id", "route", "model", "chosen", "order", "candidates", "picker",
        "picker_reason", "timings_us", "total_us", "created_at",
    }  # fmt: skip
