"""Deterministic content helpers: token estimates, seeds, stop strings, schema examples."""

from __future__ import annotations

from typing import Any

import pytest

from emulator.content.text import (
    TOKENS,
    choice_seed,
    cut_at_stop,
    earliest_stop,
    estimate_tokens,
    example_for_schema,
    generate_tokens,
    seed_from_text,
    split_pieces,
    top_alternatives,
)


@pytest.mark.parametrize(
    ("text", "tokens"), [("", 1), ("abc", 1), ("abcd" * 10, 10), ("x" * 4001, 1000)]
)
def test_estimate_tokens(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens


def test_generation_is_deterministic_and_choices_differ() -> None:
    seed = seed_from_text("hello")
    assert seed == seed_from_text("hello")
    first = generate_tokens(choice_seed(seed, 0), 50)
    assert first == generate_tokens(choice_seed(seed, 0), 50)
    assert first != generate_tokens(choice_seed(seed, 1), 50)
    assert all(token in TOKENS and token.endswith(" ") for token in first)


@pytest.mark.parametrize(
    ("pieces", "stops", "expected"),
    [
        (["ab ", "cd ", "ef "], ("cd",), (["ab "], 2)),
        (["ab ", "cd ", "ef "], ("d e",), (["ab ", "c"], 3)),
        (["ab ", "cd ", "ef "], ("zz", "b"), (["a"], 1)),
        (["ab ", "cd "], ("ab",), ([], 1)),
        (["ab ", "cd "], ("zz",), None),
    ],
)
def test_cut_at_stop(
    pieces: list[str], stops: tuple[str, ...], expected: tuple[list[str], int] | None
) -> None:
    assert cut_at_stop(pieces, stops) == expected


@pytest.mark.parametrize(
    ("stops", "expected"),
    [(("cd", "b"), "b"), (("b c", "b"), "b"), (("zz",), None), (("", "ef"), "ef")],
)
def test_earliest_stop_names_the_stop_string_that_cuts(
    stops: tuple[str, ...], expected: str | None
) -> None:
    assert earliest_stop("ab cd ef ", stops) == expected


def test_split_pieces() -> None:
    assert split_pieces('{"a":1}') == ['{"a"', ":1}"]
    assert split_pieces("") == []


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string"}, "example"),
        ({"type": "string", "format": "date"}, "2024-01-01"),
        ({"type": "integer", "minimum": 3}, 3),
        ({"type": "number"}, 1.5),
        ({"type": "boolean"}, True),
        ({"enum": ["celsius", "fahrenheit"]}, "celsius"),
        ({"const": 7}, 7),
        ({"type": ["null", "integer"]}, 1),
        ({"anyOf": [{"type": "boolean"}, {"type": "string"}]}, True),
        ({"type": "array", "items": {"type": "integer"}, "minItems": 2}, [1, 1]),
        (
            {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
            {"city": "example"},
        ),
        (
            {"properties": {"tags": {"type": "array", "items": {"type": "string"}}}},
            {"tags": ["example"]},
        ),
        ("not a schema", None),
    ],
)
def test_example_for_schema(schema: Any, expected: Any) -> None:
    assert example_for_schema(schema) == expected


def test_recursive_schema_is_bounded() -> None:
    schema: dict[str, Any] = {"type": "object", "required": ["child"], "properties": {}}
    schema["properties"]["child"] = schema
    depth = 0
    value = example_for_schema(schema)
    while isinstance(value, dict):
        value, depth = value["child"], depth + 1
    assert 0 < depth < 20


def test_top_alternatives_fall_and_start_with_the_token() -> None:
    alternatives = top_alternatives("river ", 4)
    assert alternatives[0][0] == "river "
    assert len({token for token, _ in alternatives}) == 4
    logprobs = [logprob for _, logprob in alternatives]
    assert logprobs == sorted(logprobs, reverse=True)
    assert top_alternatives("river ", 0) == []
