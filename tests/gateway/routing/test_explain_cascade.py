"""`switchyard explain` on a cascade's name: each tier's decision, the checks, and why a
dry run starts at the first tier."""

from __future__ import annotations

import orjson

from gateway.routing.explain import explain_request
from tests.conftest import make_config, parsed


def test_a_cascade_is_explained_tier_by_tier() -> None:
    config = make_config({"small": "http://127.0.0.1:9/v1", "strong": "http://127.0.0.1:8/v1"})
    config["routes"] = [
        {"name": "cheap", "model": "emulated-model", "backends": ["small"]},
        {"name": "best", "model": "emulated-model", "backends": ["strong"]},
    ]
    config["cascades"] = [
        {"name": "auto", "tiers": ["cheap", "best"], "checks": ["loop", "tool_calls"]}
    ]
    raw = orjson.dumps({"model": "auto", "messages": [{"role": "user", "content": "hi"}]})
    found = explain_request(parsed(config), raw, endpoint="chat.completions", headers={})
    assert found["cascade"] == "auto"
    assert found["checks"] == ["loop", "tool_calls"]
    assert [(t["route"], t["chosen"]) for t in found["tiers"]] == [
        ("cheap", "small"),
        ("best", "strong"),
    ]
    assert found["start"].startswith("the first tier")
