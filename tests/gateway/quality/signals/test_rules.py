"""Each passive signal, table-driven: where it applies, good and bad, and where it is silent."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.quality.config import SignalParams
from gateway.quality.signals.observation import Observation, SignalEvent, ToolCallSeen
from gateway.quality.signals.rules import evaluate
from tests.gateway.quality.observations import PARAMS, obs, verdict

SEARCH = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
    "required": ["query"],
    "additionalProperties": False,
}
TOOLS = {"search": SEARCH, "fetch": {"type": "object", "properties": {"url": {"type": "string"}}}}
GOOD_CALL = ToolCallSeen("search", '{"query": "rail history", "limit": 3}')
ANSWER = "Paris is the capital of France."


def tool_obs(*calls: ToolCallSeen, **fields: Any) -> Observation:
    return obs(**{"tools": TOOLS, "tool_calls": calls, "finish_reason": "tool_calls", **fields})


@pytest.mark.parametrize(
    ("observation", "expected"),
    [
        pytest.param(obs(content=ANSWER), "good", id="ok"),
        pytest.param(
            obs(outcome="error", error_kind="timeout"), "backend failed: timeout", id="err"
        ),
        pytest.param(obs(outcome="error"), "backend failed: unknown error", id="err-no-kind"),
        pytest.param(obs(outcome="capacity"), None, id="429-is-not-quality"),
        pytest.param(obs(outcome="client_error"), None, id="client-error"),
        pytest.param(obs(outcome="cancelled"), None, id="cancelled"),
    ],
)
def test_error(observation: Observation, expected: str | None) -> None:
    assert verdict("error", observation) == expected


@pytest.mark.parametrize(
    ("observation", "expected"),
    [
        pytest.param(tool_obs(GOOD_CALL), "good", id="object"),
        pytest.param(tool_obs(ToolCallSeen("fetch", "")), "good", id="empty-means-no-arguments"),
        pytest.param(
            tool_obs(ToolCallSeen("search", '{"query": "a" "limit": 3}')),
            "arguments are not JSON: Expecting ',' delimiter at char 14 (tool 'search')",
            id="bad-json",
        ),
        pytest.param(
            tool_obs(GOOD_CALL, ToolCallSeen("fetch", '["https://a.example"]')),
            "arguments are a JSON array, not an object (tool 'fetch')",
            id="array",
        ),
        pytest.param(
            tool_obs(ToolCallSeen("search", '{"query": "rail'), finish_reason="length"),
            None,
            id="cut-by-max-tokens",
        ),
        pytest.param(
            tool_obs(ToolCallSeen("search", '{"query": "rail', arguments_cut=True)),
            None,
            id="cut-by-collector",
        ),
        pytest.param(obs(tool_calls=(ToolCallSeen("search", "{"),)), None, id="no-tools-declared"),
        pytest.param(tool_obs(), None, id="no-tool-call"),
        pytest.param(tool_obs(GOOD_CALL, outcome="error"), None, id="not-ok"),
        pytest.param(tool_obs(GOOD_CALL, inspected_bytes_capped=True), None, id="capped"),
    ],
)
def test_tool_call_json(observation: Observation, expected: str | None) -> None:
    assert verdict("tool_call_json", observation) == expected


@pytest.mark.parametrize(
    ("observation", "expected"),
    [
        pytest.param(tool_obs(GOOD_CALL, ToolCallSeen("fetch", "{}")), "good", id="declared"),
        pytest.param(
            tool_obs(ToolCallSeen("serach", '{"query": "x"}')),
            "unknown tool 'serach' (declared: search, fetch)",
            id="misspelt",
        ),
        pytest.param(
            tool_obs(ToolCallSeen("", "{}")),
            "unknown tool '' (declared: search, fetch)",
            id="no-name",
        ),
        pytest.param(tool_obs(), None, id="no-tool-call"),
        pytest.param(obs(tool_calls=(GOOD_CALL,)), None, id="no-tools-declared"),
    ],
)
def test_tool_call_name(observation: Observation, expected: str | None) -> None:
    assert verdict("tool_call_name", observation) == expected


@pytest.mark.parametrize(
    ("observation", "expected"),
    [
        pytest.param(tool_obs(GOOD_CALL), "good", id="valid"),
        pytest.param(
            tool_obs(ToolCallSeen("search", '{"limit": 3}')),
            "arguments of 'search' fail its schema: 'query' is a required property",
            id="missing-required",
        ),
        pytest.param(
            tool_obs(ToolCallSeen("search", '{"query": "x", "limit": "three"}')),
            "arguments of 'search' fail its schema: fails type: 'integer' (at /limit)",
            id="wrong-type",
        ),
        pytest.param(
            tool_obs(ToolCallSeen("search", '{"query": "x", "lang": "en"}')),
            "arguments of 'search' fail its schema: fails additionalProperties: False",
            id="extra-property",
        ),
        pytest.param(tool_obs(ToolCallSeen("search", "{")), None, id="not-json-is-not-schema"),
        pytest.param(tool_obs(ToolCallSeen("serach", "{}")), None, id="unknown-tool"),
        pytest.param(
            obs(
                tools={"f": {"type": "object", "properties": {"x": {"type": "no-such-type"}}}},
                tool_calls=(ToolCallSeen("f", '{"x": 1}'),),
            ),
            None,
            id="invalid-schema",
        ),
        pytest.param(
            obs(
                tools={"f": {"$ref": "https://schemas.invalid/none.json"}},
                tool_calls=(ToolCallSeen("f", '{"x": 1}'),),
            ),
            None,
            id="unresolvable-ref",
        ),
        pytest.param(
            obs(tools={"f": None}, tool_calls=(ToolCallSeen("f", "{}"),)), None, id="no-schema"
        ),
    ],
)
def test_tool_call_schema(observation: Observation, expected: str | None) -> None:
    assert verdict("tool_call_schema", observation) == expected


def test_all_tool_signals_on_one_response() -> None:
    events = evaluate(tool_obs(GOOD_CALL, ToolCallSeen("fetch", '{"url": 1}')), PARAMS)
    by_signal = {event.signal: event.bad for event in events}
    assert by_signal == {
        "error": False,
        "tool_call_json": False,
        "tool_call_name": False,
        "tool_call_schema": True,
        "finish_reason": False,
        "empty_output": False,
    }


@pytest.mark.parametrize(
    ("observation", "expected"),
    [
        pytest.param(obs(content=ANSWER, finish_reason="stop"), "good", id="stop"),
        pytest.param(tool_obs(GOOD_CALL), "good", id="tool-calls"),
        pytest.param(
            obs(finish_reason="tool_calls", content="Let me search."),
            "finish_reason 'tool_calls' but no tool call was sent",
            id="tool-calls-without-a-call",
        ),
        pytest.param(
            tool_obs(GOOD_CALL, finish_reason="stop", tool_choice_required=True),
            "good",
            id="named-choice-answered-with-stop",  # what OpenAI itself does
        ),
        pytest.param(
            obs(tools=TOOLS, tool_choice_required=True, content=ANSWER, finish_reason="stop"),
            "a tool call was forced but none came (finish 'stop')",
            id="forced-but-none",
        ),
        pytest.param(
            obs(tools=TOOLS, tool_choice_required=True, content="x", finish_reason="length"),
            "good",
            id="forced-but-cut-by-length",
        ),
        pytest.param(
            obs(
                finish_reason="length",
                max_tokens=1000,
                completion_tokens=212,
                prompt_tokens_reported=900,
            ),
            "finish 'length' after 212 tokens with max_tokens 1,000 and a 900-token prompt",
            id="length-far-below-max-tokens",
        ),
        pytest.param(
            obs(
                finish_reason="length",
                max_tokens=1000,
                completion_tokens=990,
                prompt_tokens_local=9,
            ),
            "good",
            id="length-within-margin",
        ),
        pytest.param(
            obs(
                finish_reason="length",
                max_tokens=8000,
                completion_tokens=2000,
                prompt_tokens_reported=30000,
            ),
            "good",
            id="context-window-may-have-ended-it",
        ),
        pytest.param(
            obs(finish_reason="length", max_tokens=1000, completion_tokens=212),
            "good",
            id="prompt-size-unknown",
        ),
        pytest.param(obs(content=ANSWER), None, id="no-finish-reason"),
        pytest.param(obs(outcome="error", finish_reason="tool_calls"), None, id="not-ok"),
        pytest.param(
            obs(finish_reason="tool_calls", inspected_bytes_capped=True), "good", id="capped"
        ),
    ],
)
def test_finish_reason(observation: Observation, expected: str | None) -> None:
    assert verdict("finish_reason", observation) == expected


@pytest.mark.parametrize(
    ("observation", "expected"),
    [
        pytest.param(obs(content=ANSWER, finish_reason="stop"), "good", id="text"),
        pytest.param(tool_obs(GOOD_CALL, completion_tokens=12), "good", id="tool-call"),
        pytest.param(
            obs(content="", finish_reason="stop", completion_tokens=0),
            "no content and no tool call (finish 'stop', 0 completion tokens)",
            id="stop-with-nothing",
        ),
        pytest.param(
            obs(content="\n\n  ", finish_reason="length", completion_tokens=512),
            "no content and no tool call (finish 'length', 512 completion tokens)",
            id="whitespace-only",
        ),
        pytest.param(
            obs(finish_reason="stop"),
            "no content and no tool call (finish 'stop', no usage)",
            id="stop-no-usage",
        ),
        pytest.param(
            obs(reasoning="Let me think about this...", finish_reason="stop", completion_tokens=90),
            "no content and no tool call (finish 'stop', 90 completion tokens)",
            id="reasoning-then-nothing",
        ),
        pytest.param(
            obs(reasoning="Let me think...", finish_reason="length", completion_tokens=90),
            "good",
            id="budget-spent-thinking",
        ),
        pytest.param(obs(finish_reason="content_filter"), "good", id="filtered"),
        pytest.param(obs(finish_reason="length", completion_tokens=0), "good", id="nothing-asked"),
        pytest.param(obs(outcome="error", finish_reason="stop"), None, id="not-ok"),
    ],
)
def test_empty_output(observation: Observation, expected: str | None) -> None:
    assert verdict("empty_output", observation) == expected


@pytest.mark.parametrize(
    ("observation", "expected"),
    [
        pytest.param(
            obs(prompt_tokens_reported=4096, prompt_tokens_local=12410),
            "reported 4,096 prompt tokens, counted 12,410",
            id="truncated",
        ),
        pytest.param(
            obs(prompt_tokens_reported=9000, prompt_tokens_local=12000), "good", id="tokeniser-gap"
        ),
        pytest.param(
            obs(prompt_tokens_reported=13000, prompt_tokens_local=12000), "good", id="more"
        ),
        pytest.param(obs(prompt_tokens_reported=10, prompt_tokens_local=200), None, id="short"),
        pytest.param(obs(prompt_tokens_local=12000), None, id="no-usage"),
        pytest.param(obs(prompt_tokens_reported=12000), None, id="no-local-count"),
    ],
)
def test_truncation(observation: Observation, expected: str | None) -> None:
    assert verdict("truncation", observation) == expected


@pytest.mark.parametrize(
    ("observation", "expected"),
    [
        pytest.param(obs(max_tokens=256, finish_reason="stop"), "good", id="stopped"),
        pytest.param(
            obs(max_tokens=256, finish_reason="length", completion_tokens=256),
            "stopped at max_tokens 256",
            id="hit",
        ),
        pytest.param(obs(finish_reason="length"), None, id="no-max-tokens"),
        pytest.param(obs(max_tokens=256), None, id="no-finish-reason"),
        pytest.param(obs(outcome="error", max_tokens=256, finish_reason="length"), None, id="err"),
    ],
)
def test_max_tokens_hit(observation: Observation, expected: str | None) -> None:
    assert verdict("max_tokens_hit", observation) == expected


@pytest.mark.parametrize(
    ("signal", "observation", "expected"),
    [
        pytest.param("ttft", obs(ttft_s=0.4, ttft_target_ms=500), "good", id="ttft-ok"),
        pytest.param(
            "ttft",
            obs(ttft_s=1.25, ttft_target_ms=500),
            "time to first token 1,250 ms over the 500 ms target",
            id="ttft-slow",
        ),
        pytest.param("ttft", obs(ttft_s=1.25), None, id="ttft-no-target"),
        pytest.param("ttft", obs(ttft_target_ms=500), None, id="ttft-not-measured"),
        pytest.param("tpot", obs(tpot_s=0.02, tpot_target_ms=50), "good", id="tpot-ok"),
        pytest.param(
            "tpot",
            obs(tpot_s=0.0855, tpot_target_ms=50),
            "time per output token 86 ms over the 50 ms target",
            id="tpot-slow",
        ),
        pytest.param(
            "tpot",
            obs(tpot_s=0.0072, tpot_target_ms=5),
            "time per output token 7.2 ms over the 5.0 ms target",
            id="tpot-sub-10ms",
        ),
    ],
)
def test_sla(signal: str, observation: Observation, expected: str | None) -> None:
    assert verdict(signal, observation) == expected


def test_dimensions_and_details() -> None:
    slow_and_bad = obs(
        outcome="error", error_kind="stream_cut", ttft_s=2.0, ttft_target_ms=500, tpot_s=0.001
    )
    events = evaluate(slow_and_bad, PARAMS)
    assert [(e.signal, e.dimension, e.bad) for e in events] == [
        ("error", "fidelity", True),
        ("ttft", "sla", True),
    ]
    assert all(isinstance(e, SignalEvent) and e.weight == 1.0 for e in events)
    good = evaluate(obs(content=ANSWER, finish_reason="stop"), PARAMS)
    assert all(not e.bad and e.detail == "" for e in good)


def test_params_are_frozen_and_strict() -> None:
    with pytest.raises(ValueError, match="extra"):
        SignalParams(unknown=1)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="frozen"):
        PARAMS.truncation_min_ratio = 0.1  # type: ignore[misc]
