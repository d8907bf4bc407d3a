"""Tool-argument schema checks: verdicts, unusable schemas, and the validator cache."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from gateway.quality.signals.schema_check import (
    UnusableSchema,
    compiled_validator,
    schema_errors,
    schema_violation,
)

WEATHER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
    },
    "required": ["city"],
}


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param({"city": "Oslo", "unit": "celsius", "days": 3}, None, id="valid"),
        pytest.param({"unit": "celsius"}, "'city' is a required property", id="required"),
        pytest.param(
            {"city": "Oslo", "unit": "kelvin"},
            "fails enum: ['celsius', 'fahrenheit'] (at /unit)",
            id="enum",
        ),
        pytest.param({"city": "Oslo", "days": 40}, "fails maximum: 14 (at /days)", id="max"),
        pytest.param([], "fails type: 'object'", id="not-an-object"),
    ],
)
def test_schema_violation(arguments: Any, expected: str | None) -> None:
    assert schema_violation(WEATHER, arguments) == expected


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param({"type": "no-such-type"}, id="bad-type"),
        pytest.param({"properties": {"a": {"pattern": "("}}}, id="bad-regex"),
        pytest.param({"$ref": "#/$defs/missing"}, id="dangling-ref"),
        pytest.param({"$ref": "https://schemas.invalid/x.json"}, id="remote-ref"),
    ],
)
def test_unusable_schema_is_no_verdict(schema: dict[str, Any]) -> None:
    with pytest.raises(UnusableSchema):
        schema_violation(schema, {"a": 1})
    assert schema_errors(schema, {"a": 1}) is None


def test_draft_is_taken_from_the_schema() -> None:
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", **WEATHER}
    assert type(compiled_validator(draft7)).__name__ == "Draft7Validator"
    assert type(compiled_validator(WEATHER)).__name__ == "Draft202012Validator"


def test_validators_are_cached_by_canonical_json() -> None:
    reordered = dict(reversed(list(WEATHER.items())))
    frozen = MappingProxyType({**WEATHER, "properties": MappingProxyType(WEATHER["properties"])})
    first = compiled_validator(WEATHER)
    assert first is not None
    assert compiled_validator(reordered) is first
    assert compiled_validator(frozen) is first
    assert compiled_validator({**WEATHER, "required": []}) is not first


def test_messages_never_quote_the_offending_value() -> None:
    # The value is response text (it may hold a user's data); details are shown on the API.
    problem = schema_violation({"type": "object"}, "jane.doe@example.com " * 50)
    assert problem == "fails type: 'object'"


def test_long_messages_are_shortened() -> None:
    problem = schema_violation({"enum": ["x" * 100, "y" * 100]}, "z")
    assert problem is not None and len(problem) <= 160 and problem.endswith("…")
