"""The base of every YAML model: an unknown key suggests the field meant, at its own level,
and leaves every other problem's message as it was."""

from __future__ import annotations

import pytest
from pydantic import Field, ValidationError

from policies.strict_model import StrictModel, did_you_mean


class Inner(StrictModel):
    capacity_tokens: int = 0
    ttl_s: float = Field(1.0, gt=0)


class Outer(StrictModel):
    port: int = 8080
    inner: Inner = Inner()
    members: list[Inner] = Field(default_factory=list)


def problems(data: dict[str, object]) -> list[tuple[str, str]]:
    with pytest.raises(ValidationError) as caught:
        Outer.model_validate(data)
    return [(".".join(map(str, e["loc"])), e["msg"]) for e in caught.value.errors()]


@pytest.mark.parametrize(
    ("key", "known", "hint"),
    [
        ("prot", ["port", "host"], "; did you mean `port`?"),
        ("modle", ["model", "models"], "; did you mean `model`?"),
        ("colour", ["port", "host"], ""),
        ("x", [], ""),
    ],
)
def test_the_closest_known_key_is_suggested(key: str, known: list[str], hint: str) -> None:
    assert did_you_mean(key, known) == hint


def test_each_level_suggests_its_own_fields() -> None:
    found = problems(
        {"prot": 1, "inner": {"capacity_tokn": 1}, "members": [{}, {"ttl": 2, "ttl_s": 0}]}
    )
    assert sorted(found) == [
        ("inner.capacity_tokn", "Extra inputs are not permitted; did you mean `capacity_tokens`?"),
        ("members.1.ttl", "Extra inputs are not permitted; did you mean `ttl_s`?"),
        ("members.1.ttl_s", "Input should be greater than 0"),
        ("prot", "Extra inputs are not permitted; did you mean `port`?"),
    ]


def test_without_a_close_key_the_errors_are_pydantics_own() -> None:
    with pytest.raises(ValidationError) as caught:
        Outer.model_validate({"colour": 1, "port": "x"})
    assert {e["type"] for e in caught.value.errors()} == {"extra_forbidden", "int_parsing"}
