"""Provider prompt caches through the gateway: two emulated clouds, each caching as its
provider does, and the snapshot's predicted cached tokens against what each then reports.

`cloud-openai` is an OpenAI-format emulator with automatic prefix caching (1,024-token
minimum, 128-token steps), `cloud-claude` an Anthropic-format one with explicit
`cache_control` caching, the gateway adding breakpoints (`cache.breakpoints.enabled`).
Neither names its `cache.semantics`: an emulated cloud is predicted as its emulator caches.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import RunningGateway, StartGateway

SYSTEM = " the and for you" * 500
"""2,000 tokens, in the emulator's count (4 bytes a token) and in cl100k's alike."""
QUIET = {"token_delay_ms": 0.0}


def config() -> dict[str, Any]:
    plugins = [
        {"ref": "healthy-filter"},
        {"ref": "round-robin-scorer"},
        {"ref": "max-score-picker"},
    ]
    return {
        "backends": [
            {
                "name": "cloud-openai",
                "kind": "emulated",
                "models": ["gpt-emulated"],
                "emulator": {**QUIET, "prompt_cache": {"semantics": "automatic"}},
            },
            {
                "name": "cloud-claude",
                "kind": "anthropic",
                "models": ["claude-emulated"],
                "emulator": {**QUIET, "prompt_cache": {"semantics": "explicit"}},
                "cache": {"breakpoints": {"enabled": True}},
            },
        ],
        "routes": [
            {"name": "gpt", "model": "gpt-emulated", "backends": ["cloud-openai"]},
            {"name": "claude", "model": "claude-emulated", "backends": ["cloud-claude"]},
        ],
        "profiles": [{"name": "balanced", "plugins": plugins}],
        "health": {"active_probes": False},
    }


@pytest.fixture
async def gw(start_gateway: StartGateway) -> RunningGateway:
    return await start_gateway(config())


async def chat(gw: RunningGateway, model: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """One request: the provider's usage and the decision's record of it."""
    body = {"model": model, "messages": messages, "max_tokens": 4}
    response = await gw.client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    record = gw.gateway.ring.get(response.headers["x-switchyard-decision"])
    assert record is not None
    return {"usage": response.json()["usage"], "decision": record.to_dict()}


def reported(answer: dict[str, Any]) -> int:
    return int(answer["usage"].get("prompt_tokens_details", {}).get("cached_tokens", 0))


def predicted(answer: dict[str, Any], backend: str) -> int:
    return int(answer["decision"]["predicted_cached_tokens"][backend])


def close(prediction: int, report: int) -> bool:
    """Within one block of the fingerprint (64 tokens) or 3 %: token counts differ a
    little (the gateway's blocks round down, the formats render differently)."""
    return abs(prediction - report) <= max(64, 0.03 * report)


async def test_openai_auto_predicts_the_steps_the_provider_reports(gw: RunningGateway) -> None:
    first = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "one"}]
    cold = await chat(gw, "gpt", first)
    assert predicted(cold, "cloud-openai") == reported(cold) == 0
    turn = [*first, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "two"}]
    warm = await chat(gw, "gpt", turn)
    assert reported(warm) >= 1024 and (reported(warm) - 1024) % 128 == 0
    assert predicted(warm, "cloud-openai") == reported(warm)


async def test_short_prompts_are_never_predicted_cached(gw: RunningGateway) -> None:
    short = [
        {"role": "system", "content": " the and for you" * 100},
        {"role": "user", "content": "a"},
    ]
    await chat(gw, "gpt", short)
    again = await chat(gw, "gpt", short)
    assert predicted(again, "cloud-openai") == reported(again) == 0


async def test_anthropic_breakpoints_are_added_once_reuse_pays(gw: RunningGateway) -> None:
    def ask(question: str) -> list[dict[str, Any]]:
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]

    first = await chat(gw, "claude", ask("one"))
    plan = first["decision"]["cache_breakpoints"]["cloud-claude"]
    assert plan["after_messages"] == [] and "0 reuse(s)" in plan["reason"]
    assert first["usage"]["prompt_tokens_details"]["cached_tokens"] == 0

    second = await chat(gw, "claude", ask("two"))  # the system prompt came back: it pays
    plan = second["decision"]["cache_breakpoints"]["cloud-claude"]
    assert plan["after_messages"] == [0] and plan["added"] is True
    details = second["usage"]["prompt_tokens_details"]
    assert details["cached_tokens"] == predicted(second, "cloud-claude") == 0
    assert close(2000, details["cache_write_tokens"])

    third = await chat(gw, "claude", ask("three"))  # held now: read and refreshed
    assert third["decision"]["cache_breakpoints"]["cloud-claude"]["reason"].startswith("tools")
    assert reported(third) > 0 and close(predicted(third, "cloud-claude"), reported(third))


async def test_anthropic_conversation_breakpoint_follows_the_turns(gw: RunningGateway) -> None:
    system = {"role": "system", "content": SYSTEM}
    history: list[dict[str, Any]] = [system]
    answers = []
    for turn in range(4):
        history.append({"role": "user", "content": f"question {turn}" + " the" * 300})
        answers.append(await chat(gw, "claude", list(history)))
        history.append({"role": "assistant", "content": f"answer {turn}" + " you" * 300})
    last = answers[-1]
    plan = last["decision"]["cache_breakpoints"]["cloud-claude"]
    assert plan["after_messages"] == [0, len(history) - 3]
    # The previous turn wrote its conversation so far; this one reads it back.
    assert reported(last) > 2000
    assert close(predicted(last, "cloud-claude"), reported(last))


async def test_a_clients_own_breakpoints_are_kept(gw: RunningGateway) -> None:
    marked = {
        "role": "system",
        "content": [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}],
    }
    messages = [marked, {"role": "user", "content": "one"}]
    first = await chat(gw, "claude", messages)
    plan = first["decision"]["cache_breakpoints"]["cloud-claude"]
    assert plan == {**plan, "after_messages": [0], "added": False}
    assert close(2000, first["usage"]["prompt_tokens_details"]["cache_write_tokens"])
    second = await chat(gw, "claude", [marked, {"role": "user", "content": "two"}])
    assert reported(second) > 0 and close(predicted(second, "cloud-claude"), reported(second))
