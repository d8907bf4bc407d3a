"""The built-in answer checks: what fails, the reason naming it, and every case a check
cannot judge passing (only evidence escalates)."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.cascade.answer import Answer, CheckRequest, check_request
from gateway.cascade.checks.registry import bind
from gateway.quality.signals.observation import ToolCallSeen

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}},
    {"type": "function", "function": {"name": "get_time"}},
]
PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name"],
}


def ask(**body: Any) -> CheckRequest:
    """What the checks read of a chat request with these fields."""
    return check_request({"model": "auto", "messages": [{"role": "user", "content": "hi"}], **body})


def judge(check: str, request: CheckRequest, answer: Answer, **params: Any) -> str | None:
    return bind(check, params)(request, answer)


def calls(*seen: tuple[str, str]) -> tuple[ToolCallSeen, ...]:
    return tuple(ToolCallSeen(name, arguments) for name, arguments in seen)


# cut_short


@pytest.mark.parametrize(
    ("body", "answer", "reason"),
    [
        (
            {"max_tokens": 100},
            Answer("x", finish_reason="length", completion_tokens=40),
            "cut short at 40 tokens (the client allowed 100)",
        ),
        (
            {"max_completion_tokens": 100},
            Answer("x", finish_reason="length", completion_tokens=40),
            "cut short at 40 tokens (the client allowed 100)",
        ),
        (
            {},
            Answer("x", finish_reason="length", completion_tokens=512),
            "cut short at 512 tokens (the client set no cap)",
        ),
        (
            {},
            Answer("x", finish_reason="length"),
            "cut short at ? tokens (the client set no cap)",
        ),
    ],
)
def test_cut_short_fails_an_answer_the_tier_cut(
    body: dict[str, Any], answer: Answer, reason: str
) -> None:
    assert judge("cut_short", ask(**body), answer) == reason


@pytest.mark.parametrize(
    ("body", "answer"),
    [
        pytest.param({}, Answer("x", finish_reason="stop", completion_tokens=5), id="stopped"),
        pytest.param(
            {"max_tokens": 100},
            Answer("x", finish_reason="length", completion_tokens=100),
            id="the-clients-own-cap",
        ),
        pytest.param(
            {"max_tokens": 100},
            Answer("x", finish_reason="length", completion_tokens=130),
            id="past-the-clients-cap",
        ),
        pytest.param(
            {"max_tokens": 100}, Answer("x", finish_reason="length"), id="tokens-unknown-with-cap"
        ),
        pytest.param(
            {},
            Answer("x", finish_reason="length", completion_tokens=9, complete=False),
            id="incomplete",
        ),
    ],
)
def test_cut_short_passes_what_a_stronger_tier_would_not_finish_either(
    body: dict[str, Any], answer: Answer
) -> None:
    assert judge("cut_short", ask(**body), answer) is None


# empty


@pytest.mark.parametrize("text", ["", "  \n\t "])
def test_empty_fails_an_answer_without_text_or_tool_call(text: str) -> None:
    assert judge("empty", ask(), Answer(text)) == "empty answer"


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(Answer("ok"), id="text"),
        pytest.param(Answer("", tool_calls=calls(("get_time", "{}"))), id="tool-call-only"),
        pytest.param(Answer("", complete=False), id="incomplete"),
    ],
)
def test_empty_passes_text_a_tool_call_or_an_unfinished_start(answer: Answer) -> None:
    assert judge("empty", ask(), answer) is None


# refusal


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("I'm sorry, but I can't help with that.", "i'm sorry, but i can't"),
        ("I\u2019m afraid I cannot do this.", "i'm afraid i cannot"),
        ("I cannot assist with that request.", "i cannot assist"),
        ("As an AI language model, I do not have opinions.", "as an ai language model, i"),
        ("I am not able to browse the web.", "i am not able to"),
    ],
)
def test_refusal_fails_an_answer_that_begins_by_declining(text: str, quoted: str) -> None:
    assert judge("refusal", ask(), Answer(text)) == f"refused: {quoted!r}"


def test_refusal_passes_an_answer_that_helps() -> None:
    assert judge("refusal", ask(), Answer("Sure. Rivers run to the sea; I can't wait.")) is None


def test_refusal_reads_only_the_start_of_the_answer() -> None:
    late = "Rivers are long. " * 20 + "I cannot help with the rest."
    assert judge("refusal", ask(), Answer(late)) is None
    assert judge("refusal", ask(), Answer(late), within_chars=1000) is not None


def test_refusal_judges_the_start_of_a_held_stream() -> None:
    assert judge("refusal", ask(), Answer("I cannot help", complete=False)) is not None


def test_refusal_uses_the_operators_patterns_in_place_of_the_built_ins() -> None:
    params = {"patterns": [r"no comment"]}
    assert judge("refusal", ask(), Answer("No comment."), **params) == "refused: 'no comment'"
    assert judge("refusal", ask(), Answer("I cannot help with that."), **params) is None


def test_refusal_patterns_are_case_insensitive() -> None:
    found = judge("refusal", ask(), Answer("I cannot help."), patterns=[r"I cannot"])
    assert found == "refused: 'i cannot'"


# loop


def test_loop_fails_a_unit_repeated_back_to_back() -> None:
    answer = Answer("Rivers. " + "the river runs to the sea and " * 10)
    assert judge("loop", ask(), answer) == "loop: 'the river runs to the sea and' repeated 10 times"


def test_loop_shortens_a_long_unit_in_its_reason() -> None:
    unit = "one two three four five six seven eight nine ten eleven twelve "
    reason = judge("loop", ask(), Answer(unit * 5))
    assert reason == "loop: 'one two three four five six seven eight …' repeated 5 times"


def test_loop_judges_the_start_of_a_held_stream() -> None:
    answer = Answer("the river runs to the sea and " * 10, complete=False)
    assert judge("loop", ask(), answer) is not None


@pytest.mark.parametrize(
    ("text", "params"),
    [
        pytest.param(
            "Rivers carve valleys over millennia. Deltas form where they slow and drop "
            "their silt into the sea, building land that farmers later plough.",
            {},
            id="prose",
        ),
        pytest.param("a b c d e f g h i j " * 3, {}, id="too-few-repeats"),
        pytest.param("a b c d e f g h i j " * 3, {"min_loop_words": 100}, id="too-few-words"),
        pytest.param("a b c " * 6, {}, id="covers-too-few-words"),
    ],
)
def test_loop_passes_an_answer_without_a_long_enough_loop(
    text: str, params: dict[str, Any]
) -> None:
    assert judge("loop", ask(), Answer(text), **params) is None


def test_loop_bounds_are_params() -> None:
    text = "a b c d e f g h i j " * 3
    assert judge("loop", ask(), Answer(text), min_repeats=3) == (
        "loop: 'a b c d e f g h …' repeated 3 times"
    )


# response_format


def json_schema(schema: dict[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": "out"} | ({"schema": schema} if schema is not None else {})
    return {"response_format": {"type": "json_schema", "json_schema": spec}}


JSON_OBJECT = {"response_format": {"type": "json_object"}}


@pytest.mark.parametrize(
    ("body", "text", "reason"),
    [
        (JSON_OBJECT, "Here you go: {}", "response_format json_object: the answer is not JSON"),
        (JSON_OBJECT, "[1, 2]", "response_format json_object: not an object"),
        (json_schema(PERSON), "{'name': 1}", "response_format json_schema: the answer is not JSON"),
        (
            json_schema(PERSON),
            '{"age": 3}',
            "response_format json_schema: 'name' is a required property",
        ),
        (
            json_schema(PERSON),
            '{"name": "Ada", "age": "old"}',
            "response_format json_schema: fails type: 'integer' (at /age)",
        ),
        (json_schema(None), "not json", "response_format json_schema: the answer is not JSON"),
    ],
)
def test_response_format_fails_an_answer_that_is_not_what_was_asked(
    body: dict[str, Any], text: str, reason: str
) -> None:
    assert judge("response_format", ask(**body), Answer(text)) == reason


@pytest.mark.parametrize(
    ("body", "answer"),
    [
        pytest.param({}, Answer("plain words"), id="not-asked"),
        pytest.param({"response_format": {"type": "text"}}, Answer("plain words"), id="text-asked"),
        pytest.param(JSON_OBJECT, Answer(' {"a": 1}\n'), id="an-object"),
        pytest.param(json_schema(PERSON), Answer('{"name": "Ada"}'), id="valid"),
        pytest.param(json_schema(None), Answer("[1]"), id="json-without-schema"),
        pytest.param(JSON_OBJECT, Answer('{"a": [1, 2', text_cut=True), id="text-cut"),
        pytest.param(JSON_OBJECT, Answer('{"a": [1, 2', complete=False), id="incomplete"),
        pytest.param(
            JSON_OBJECT, Answer("", tool_calls=calls(("get_time", "{}"))), id="a-tool-call"
        ),
        pytest.param(
            json_schema({"type": "no-such-type"}), Answer('{"a": 1}'), id="unusable-schema"
        ),
        pytest.param(
            json_schema({"$ref": "#/definitions/missing"}),
            Answer('{"a": 1}'),
            id="unresolvable-schema",
        ),
    ],
)
def test_response_format_passes_what_it_asks_for_or_cannot_judge(
    body: dict[str, Any], answer: Answer
) -> None:
    assert judge("response_format", ask(**body), answer) is None


# tool_calls


@pytest.mark.parametrize(
    ("seen", "reason"),
    [
        (calls(("launch", "{}")), "unknown tool 'launch'"),
        (
            calls(
                ("get_weather", '{"city": "Oslo"'),
            ),
            "arguments are not JSON: Expecting ',' delimiter at char 15 (tool 'get_weather')",
        ),
        (
            calls(("get_weather", '["Oslo"]')),
            "arguments are a JSON array, not an object (tool 'get_weather')",
        ),
        (
            calls(("get_weather", '{"town": "Oslo"}')),
            "arguments of 'get_weather' fail its schema: 'city' is a required property",
        ),
        (
            calls(("get_weather", '{"city": 7}')),
            "arguments of 'get_weather' fail its schema: fails type: 'string' (at /city)",
        ),
        (
            calls(("get_weather", '{"city": "Oslo"}'), ("launch", "{}")),
            "unknown tool 'launch'",
        ),
    ],
)
def test_tool_calls_fails_a_call_that_does_not_match_the_declared_tools(
    seen: tuple[ToolCallSeen, ...], reason: str
) -> None:
    assert judge("tool_calls", ask(tools=TOOLS), Answer("", tool_calls=seen)) == reason


@pytest.mark.parametrize(
    ("body", "answer"),
    [
        pytest.param(
            {"tools": TOOLS},
            Answer("", tool_calls=calls(("get_weather", '{"city": "Oslo"}'))),
            id="valid",
        ),
        pytest.param(
            {"tools": TOOLS},
            Answer("", tool_calls=calls(("get_time", '{"zone": 1}'))),
            id="tool-without-schema",
        ),
        pytest.param(
            {"tools": TOOLS},
            Answer("", tool_calls=(ToolCallSeen("get_weather", '{"city": "Os', True),)),
            id="arguments-cut",
        ),
        pytest.param(
            {"tools": TOOLS},
            Answer("", tool_calls=calls(("get_weather", "{")), complete=False),
            id="incomplete",
        ),
        pytest.param(
            {},
            Answer("", tool_calls=calls(("launch", "not json"))),
            id="no-tools-declared",
        ),
        pytest.param(
            {
                "tools": [
                    {
                        "type": "function",
                        "function": {"name": "odd", "parameters": {"type": "no-such-type"}},
                    }
                ]
            },
            Answer("", tool_calls=calls(("odd", '{"a": 1}'))),
            id="unusable-schema",
        ),
        pytest.param({"tools": TOOLS}, Answer("It is sunny."), id="text-where-a-call-may-be"),
        pytest.param(
            {"tools": TOOLS, "tool_choice": "auto"}, Answer("It is sunny."), id="tool-choice-auto"
        ),
    ],
)
def test_tool_calls_passes_matching_calls_or_what_it_cannot_judge(
    body: dict[str, Any], answer: Answer
) -> None:
    assert judge("tool_calls", ask(**body), answer) is None


@pytest.mark.parametrize(
    "tool_choice",
    ["required", {"type": "function", "function": {"name": "get_weather"}}],
)
def test_tool_calls_fails_a_text_answer_where_the_client_required_a_call(
    tool_choice: Any,
) -> None:
    request = ask(tools=TOOLS, tool_choice=tool_choice)
    assert judge("tool_calls", request, Answer("It is sunny.")) == (
        "no tool call, where the request called for one"
    )


def test_tool_calls_expect_call_fails_a_text_answer_to_a_request_with_tools() -> None:
    request = ask(tools=TOOLS)
    assert judge("tool_calls", request, Answer("It is sunny.")) is None
    assert judge("tool_calls", request, Answer("It is sunny."), expect_call=True) == (
        "no tool call, where the request called for one"
    )
    assert judge("tool_calls", ask(), Answer("It is sunny."), expect_call=True) is None


def test_tool_calls_expect_call_does_not_fail_text_where_the_client_forbade_calls() -> None:
    request = ask(tools=TOOLS, tool_choice="none")
    assert judge("tool_calls", request, Answer("It is sunny."), expect_call=True) is None


# logprob


@pytest.mark.parametrize(
    ("logprobs", "params", "reason"),
    [
        ((-1.0, -1.0), {}, "low confidence: mean token logprob -1.00 < -0.5"),
        ((-0.1, -1.3), {}, "low confidence: mean token logprob -0.70 < -0.5"),
        ((-0.3,), {"min_mean": -0.2}, "low confidence: mean token logprob -0.30 < -0.2"),
    ],
)
def test_logprob_fails_a_low_confidence_answer(
    logprobs: tuple[float, ...], params: dict[str, Any], reason: str
) -> None:
    assert judge("logprob", ask(), Answer("x", logprobs=logprobs), **params) == reason


@pytest.mark.parametrize(
    ("logprobs", "params"),
    [
        pytest.param((), {}, id="no-logprobs"),
        pytest.param((-0.1, -0.2), {}, id="confident"),
        pytest.param((-0.5, -0.5), {}, id="at-the-bound"),
        pytest.param((-3.0, -3.0), {"min_tokens": 3}, id="too-few-tokens"),
    ],
)
def test_logprob_passes_a_confident_answer_or_one_without_enough_logprobs(
    logprobs: tuple[float, ...], params: dict[str, Any]
) -> None:
    assert judge("logprob", ask(), Answer("x", logprobs=logprobs), **params) is None


def test_logprob_judges_the_start_of_a_held_stream() -> None:
    answer = Answer("x", logprobs=(-2.0,), complete=False)
    assert judge("logprob", ask(), answer) is not None


def test_tool_calls_fails_a_call_of_another_tool_than_the_one_the_request_named() -> None:
    request = ask(
        tools=TOOLS, tool_choice={"type": "function", "function": {"name": "get_weather"}}
    )
    declared = [t["function"]["name"] for t in TOOLS]
    other = next(name for name in declared if name != "get_weather")
    reason = judge("tool_calls", request, Answer(tool_calls=calls((other, "{}"))))
    assert reason == f"called {other!r} where the request named 'get_weather'"
