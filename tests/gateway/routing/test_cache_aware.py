"""Cache-aware routing against batched emulated engines: conversations find their cache."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.conftest import RunningGateway, StartGateway

CACHE_AWARE = [
    {"ref": "healthy-filter"},
    {"ref": "bounded-load-filter"},
    {"ref": "kv-cost-scorer", "weight": 3},
    {"ref": "prefix-cache-scorer", "weight": 1},
    {"ref": "load-scorer", "weight": 1},
    {"ref": "max-score-picker"},
]
ROTATE = [{"ref": "round-robin-scorer"}, {"ref": "max-score-picker"}]


def fleet_config(profile: list[dict[str, Any]]) -> dict[str, Any]:
    engine = {
        "cost_model": "batched",
        "kv_capacity_tokens": 20_000,
        "prefill_tokens_per_s": 20_000,
        "time_scale": 0.05,
    }
    names = ["e0", "e1", "e2"]
    return {
        "backends": [
            {
                "name": name,
                "kind": "emulated",
                "models": ["m"],
                "emulator": engine,
                "cache": {"capacity_tokens": 20_000},
            }
            for name in names
        ],
        "routes": [{"name": "default", "model": "m", "backends": names, "profile": "p"}],
        "profiles": [{"name": "p", "plugins": profile}],
        "health": {"active_probes": False},
    }


async def converse(gw: RunningGateway, sessions: int, turns: int) -> tuple[float, set[int]]:
    """Interleaved multi-turn chats; returns the cached share and #backends per session."""
    histories = {
        s: [{"role": "system", "content": f"Session {s} rules. " + "Be precise. " * 300}]
        for s in range(sessions)
    }
    served: dict[int, set[str]] = {s: set() for s in range(sessions)}
    prompt = cached = 0
    for turn in range(turns):
        for s, history in histories.items():
            history.append({"role": "user", "content": f"turn {turn}: " + "details " * 40})
            body = {
                "model": "default",
                "messages": history,
                "max_tokens": 8,
                "stream": True,
                "stream_options": {"include_usage": True},
            }
            response = await gw.client.post("/v1/chat/completions", json=body)
            served[s].add(response.headers["x-switchyard-backend"])
            events = [ln[6:] for ln in response.content.split(b"\n") if ln.startswith(b"data: {")]
            usage = orjson.loads(events[-1])["usage"]
            prompt += usage["prompt_tokens"]
            cached += usage["prompt_tokens_details"]["cached_tokens"]
            history.append({"role": "assistant", "content": "noted " * 8})
    return cached / prompt, {len(b) for b in served.values()}


@pytest.mark.parametrize("turns", [4])
async def test_conversations_return_to_their_cache(start_gateway: StartGateway, turns: int) -> None:
    aware = await start_gateway(fleet_config(CACHE_AWARE))
    aware_hit, aware_spread = await converse(aware, sessions=5, turns=turns)
    rotate = await start_gateway(fleet_config(ROTATE))
    rotate_hit, _ = await converse(rotate, sessions=5, turns=turns)
    # The first turn of each session is a miss everywhere; afterwards cache-aware routing
    # should find nearly the whole history cached, round-robin only by luck. (Five
    # sessions over three engines, so that rotation does not pin sessions by accident.)
    assert aware_hit > 0.6
    assert aware_hit > rotate_hit + 0.2
    assert aware_spread == {1}, "each conversation stays on one engine"
